"""A worker reads only the channels of the models it serves, and counts its room per model: the
intake (``playground.worker.intake``) with the in-memory channel layer, no model loaded."""

from __future__ import annotations

import asyncio

import pytest
from channels.layers import InMemoryChannelLayer
from channels.routing import ChannelNameRouter
from django.test import override_settings

from playground.wire.channel_messages import INFERENCE_CHANNEL, QUICK_CHANNEL, REQUEST, model_channel
from playground.worker.intake import IntakeGate, IntakeWorker

GEMMA = "gemma-3-270m"


def worker(models: list[str]) -> IntakeWorker:
    with override_settings(INFERENCE={"MODELS": models}):
        return IntakeWorker(ChannelNameRouter({}), [INFERENCE_CHANNEL], InMemoryChannelLayer())


def test_each_model_has_its_own_channels_smollms_keep_the_old_names():
    assert (model_channel(None, False), model_channel("smollm2-135m-instruct", True)) == (INFERENCE_CHANNEL, QUICK_CHANNEL)
    assert (model_channel(GEMMA, False), model_channel(GEMMA, True)) == ("inference-gemma-3-270m", "inference-quick-gemma-3-270m")


def test_runworker_inference_reads_the_channels_of_its_models_and_no_others():
    assert sorted(worker(["smollm2-135m-instruct", GEMMA]).channels) == sorted(
        [INFERENCE_CHANNEL, QUICK_CHANNEL, "inference-gemma-3-270m", "inference-quick-gemma-3-270m"]
    )
    assert sorted(worker([GEMMA]).channels) == ["inference-gemma-3-270m", "inference-quick-gemma-3-270m"]


@pytest.mark.asyncio
async def test_the_room_is_counted_per_model():
    gate = IntakeGate()
    with override_settings(INFERENCE={"MAX_BATCH": 1, "INTAKE_BACKLOG": 0, "MODELS": ["smollm2-135m-instruct", GEMMA]}):
        gate.take({"type": REQUEST, "reply_channel": "c", "request_id": "g", "model": GEMMA})
        assert (gate.holding(model_channel(GEMMA, False)), gate.holding(INFERENCE_CHANNEL)) == (1, 0)
        await asyncio.wait_for(gate.wait_for_room(INFERENCE_CHANNEL), 1)  # SmolLM2's room is untouched
        waiting = asyncio.ensure_future(gate.wait_for_room(model_channel(GEMMA, False)))
        await asyncio.sleep(0.05)
        assert not waiting.done()  # Gemma's one row is held
        gate.release(("c", "g"))
        await asyncio.wait_for(waiting, 1)
