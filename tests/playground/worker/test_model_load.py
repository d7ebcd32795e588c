"""A run that waits for its model to load says so and counts the wait apart (issue 30: Gemma's cold
first run took 3 s from click to first token while the page said "Time to first token 452 ms").
With the real Gemma and SmolLM2, each on a fresh process's resources (so the load really happens here, whatever ran
before): the first run hears ``loading`` (the model's id and name) before ``started``, and its
``done.timing.load_ms`` is the wait, apart from ``time_to_first_token_ms``; the next run of the
loaded model hears no ``loading`` and has ``load_ms`` null."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pytest

from inference import model_dir as md
from inference.models import GEMMA
from playground.edge import frames
from playground.worker.serving import END, Assignment, ProcessResources, submit_generation

pytestmark = pytest.mark.asyncio

GEMMA_ID = "gemma-3-270m"
MODELS = [
    pytest.param(GEMMA_ID, "Gemma 3 270M (base)", marks=pytest.mark.gemma_model, id="gemma"),
    pytest.param("smollm2-135m-instruct", "SmolLM2 135M Instruct", marks=pytest.mark.real_model, id="smollm2"),
]


def built(model_id: str) -> None:
    if model_id == GEMMA_ID and not (md.MODELS_ROOT / GEMMA.dir_name / md.MANIFEST_FILE).is_file():
        pytest.skip("Gemma is not built: python -m inference.modelbuild --model gemma-3-270m")


async def generate(process: ProcessResources, request_id: str, model_id: str) -> list[dict[str, Any]]:
    """One unsaved greedy run of ``model_id`` through the worker's own path; its events up to the last."""
    frame = {
        "type": "generate",
        "request_id": request_id,
        "prompt": "The capital of France is",
        "model": model_id,
        "params": {"max_tokens": 3, "temperature": 0},
        "save": False,
    }
    job = Assignment(request_id, "test-reply", frames.parse_client_frame(json.dumps(frame)), quick=False)
    events: list[dict[str, Any]] = []
    ended = threading.Event()

    def emit(event: Any) -> None:
        if event is END:
            ended.set()
        else:
            events.append(event)

    await submit_generation(job, emit, process=process)
    assert await asyncio.to_thread(ended.wait, 300), events
    return events


@pytest.mark.parametrize(("model_id", "name"), MODELS)
async def test_the_first_run_hears_the_load_and_counts_it_apart(model_id, name) -> None:
    built(model_id)
    process = ProcessResources()  # nothing loaded in it yet
    cold = await generate(process, "cold", model_id)
    assert [e["type"] for e in cold][:2] == ["loading", "started"], [e["type"] for e in cold]
    assert cold[0] == {"type": "loading", "request_id": "cold", "model": model_id, "name": name}
    timing = cold[-1]["timing"]
    assert cold[-1]["type"] == "done" and timing["load_ms"] > 0 and timing["time_to_first_token_ms"] > 0
    warm = await generate(process, "warm", model_id)
    assert "loading" not in [e["type"] for e in warm]
    assert warm[-1]["type"] == "done" and warm[-1]["timing"]["load_ms"] is None
