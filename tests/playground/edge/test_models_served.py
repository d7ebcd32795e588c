"""Several models on one server (issue 23): the websocket's ``model`` field through the embedded
worker, real SmolLM2 and real Gemma 3 270M side by side (``PLAYGROUND_MODELS``' default serves
both). The refusals need no model; the tests that decode Gemma are marked ``gemma_model`` and
skipped unless ``.models/gemma-3-270m`` is built."""

from __future__ import annotations

import asyncio
import json

import pytest
from django.test import AsyncClient

from inference import model_dir as md
from inference.model_catalog import configured_models, model_dir_for
from inference.model_kernels import serving_text
from inference.models import GEMMA
from playground.runs.models import Run
from tests.client_frames import generate
from tests.communicator import TIMEOUT, connect

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

GEMMA_ID, SMOLLM_ID = "gemma-3-270m", "smollm2-135m-instruct"
PROMPT = "The capital of France is"
GEMMA_PROMPT_IDS = [2, 818, 5279, 529, 7001, 563]  # <bos> and the prompt (the build's verification record)
NO_CHAT = "gemma-3-270m is a base model: it has no chat template; use completion"


@pytest.fixture
def gemma_built():
    if not (md.MODELS_ROOT / GEMMA.dir_name / md.MANIFEST_FILE).is_file():
        pytest.skip("Gemma is not built: python -m inference.modelbuild --model gemma-3-270m")


async def answer(communicator, frame, final_types=("done", "tokens", "error")) -> list[dict]:
    """Every event of the frame's request, up to and including its last."""
    await communicator.send_json_to(frame)
    events = []
    while True:
        event = await communicator.receive_json_from(timeout=TIMEOUT)
        if (
            event.get("request_id") == frame["request_id"] and event["type"] != "loading"
        ):  # (a model's load notice, sent before a run that waited for its model (the first run of it in this process): not these tests' subject (tests/playground/worker/test_model_load.py))
            events.append(event)
            if event["type"] in final_types:
                return events


async def test_api_models_lists_both_with_what_a_page_shows():
    body = json.loads((await AsyncClient().get("/api/models")).content)
    assert body["default"] == SMOLLM_ID
    by_id = {m["id"]: m for m in body["models"]}
    assert [m["id"] for m in body["models"]] == [SMOLLM_ID, GEMMA_ID]
    smollm, gemma = by_id[SMOLLM_ID], by_id[GEMMA_ID]
    assert (smollm["kind"], gemma["kind"]) == ("instruct", "base")
    assert gemma["license"] == {"name": "Gemma Terms of Use", "url": "https://ai.google.dev/gemma/terms"}
    assert smollm["license"]["name"] == "Apache-2.0"
    assert smollm["chat"] == {"available": True, "reason": None}
    # which kernels serve: the build's manifest's fact, in the words model_kernels gives it
    assert smollm["kernels"] == serving_text(md.read_manifest(model_dir_for(SMOLLM_ID, configured_models())))
    if gemma["built"]:
        assert gemma["chat"] == {"available": False, "reason": NO_CHAT}
        assert gemma["vocab_size"] == 262144 and gemma["variant"] == "exact"
        assert gemma["special_tokens"]["document_start"] == "<bos>"
        assert "<end_of_turn>" in gemma["special_tokens"]["eos"]


@pytest.mark.parametrize("kind", ["generate", "tokenize", "score", "inspect"])
async def test_an_unserved_model_is_refused_at_once_naming_the_field(kind):
    communicator = await connect()
    frame = {"type": kind, "request_id": "u", "model": "gpt-4"}
    frame |= {"text": PROMPT} if kind == "tokenize" else {"prompt": PROMPT}
    [event] = await answer(communicator, frame)
    assert event["type"] == "error"
    assert (event["error"]["code"], event["error"]["param"]) == ("model_not_found", "model")
    assert SMOLLM_ID in event["error"]["message"] and GEMMA_ID in event["error"]["message"]
    await communicator.disconnect()


async def test_chat_with_the_base_model_is_refused_by_field_with_the_reason(gemma_built):
    communicator = await connect()
    [refused] = await answer(communicator, generate("c", PROMPT, mode="chat", model=GEMMA_ID))
    assert refused["error"] == {"code": "invalid_value", "message": NO_CHAT, "param": "mode"}
    turns = {"type": "generate", "request_id": "m", "model": GEMMA_ID, "messages": [{"role": "user", "content": "Hi"}]}
    [refused] = await answer(communicator, turns)
    assert (refused["error"]["param"], refused["error"]["message"]) == ("messages", NO_CHAT)
    await communicator.disconnect()


@pytest.mark.real_model
async def test_tokenize_answers_with_the_named_models_tokenizer(gemma_built):
    communicator = await connect()
    [gemma] = await answer(communicator, {"type": "tokenize", "request_id": "g", "text": PROMPT, "model": GEMMA_ID})
    [smollm] = await answer(communicator, {"type": "tokenize", "request_id": "s", "text": PROMPT})
    assert [t["id"] for t in gemma["tokens"]] == GEMMA_PROMPT_IDS
    assert gemma["tokens"][0]["text"] == "<bos>"
    assert (gemma["model"], gemma["vocab_size"], gemma["context_window"]) == (GEMMA_ID, 262144, 32768)
    assert smollm["tokens"][0] == {"id": 0, "text": "<|endoftext|>"}  # the default model's
    assert (smollm["model"], smollm["vocab_size"]) == (SMOLLM_ID, 49152)
    await communicator.disconnect()


@pytest.mark.real_model
async def test_two_models_decode_at_once_on_one_worker_each_in_its_own_batch(gemma_built):
    """Both requests are sent before either ends; whatever their overlap, no token step of one
    model's loop holds a row of the other's: each request is alone in its model's batch."""
    communicator = await connect()
    params = {"temperature": 0.8, "max_tokens": 6, "seed": 5}
    await communicator.send_json_to(generate("gemma", PROMPT, model=GEMMA_ID, params=params, top_n=3))
    await communicator.send_json_to(generate("smollm", PROMPT, model=SMOLLM_ID, params=params, top_n=3))
    runs: dict[str, list[dict]] = {"gemma": [], "smollm": []}
    ended = set()
    while len(ended) < 2:
        event = await communicator.receive_json_from(timeout=TIMEOUT)
        if event["type"] == "loading":
            continue  # Gemma's (or SmolLM2's) load notice when this test is the first to use it here
        runs[event["request_id"]].append(event)
        if event["type"] in ("done", "error"):
            ended.add(event["request_id"])
    for request_id, model_id in (("gemma", GEMMA_ID), ("smollm", SMOLLM_ID)):
        events = runs[request_id]
        started, done = events[0], events[-1]
        assert (started["type"], done["type"]) == ("started", "done"), events[-1]
        assert started["model"]["id"] == model_id
        tokens = [e for e in events if e["type"] == "token"]
        assert len(tokens) == 6
        assert all(t["batch"]["rows"] == 1 and t["batch"]["requests"] == 1 for t in tokens)
    gemma_started = runs["gemma"][0]
    assert [t["id"] for t in gemma_started["prompt_tokens"]] == GEMMA_PROMPT_IDS
    assert gemma_started["model"]["name"] == "gemma-3-270m" and gemma_started["model"]["context_window"] == 32768
    gemma_tokens = [e for e in runs["gemma"] if e["type"] == "token"]
    # the chain saw Gemma's whole vocabulary: temperature keeps every one of its 262,144 tokens
    assert gemma_tokens[0]["stages"][0] == {"name": "temperature", "kept": 262144}
    smollm_tokens = [e for e in runs["smollm"] if e["type"] == "token"]
    assert smollm_tokens[0]["stages"][0] == {"name": "temperature", "kept": 49152}
    # the saved runs record their model; the default model's run reads as it
    gemma_run = await asyncio.to_thread(Run.objects.get, pk=runs["gemma"][-1]["run_id"])
    smollm_run = await asyncio.to_thread(Run.objects.get, pk=runs["smollm"][-1]["run_id"])
    assert (gemma_run.model, gemma_run.model_name) == (GEMMA_ID, "gemma-3-270m")
    assert smollm_run.model == SMOLLM_ID
    await communicator.disconnect()


@pytest.mark.real_model
async def test_greedy_gemma_continues_as_its_build_verified(gemma_built):
    communicator = await connect()
    events = await answer(communicator, generate("g", PROMPT, model=GEMMA_ID, params={"temperature": 0, "max_tokens": 1}))
    [token] = [e for e in events if e["type"] == "token"]
    assert token["id"] == 506  # the manifest's verification: greedy after <bos> and the prompt
    assert events[-1]["type"] == "done"
    await communicator.disconnect()


@pytest.mark.real_model
async def test_score_and_inspect_answer_with_the_named_models_logits(gemma_built):
    communicator = await connect()
    score = {"type": "score", "request_id": "s", "prompt": PROMPT, "model": GEMMA_ID, "top_n": 2}
    [scores] = await answer(communicator, score, final_types=("prompt_scores", "error"))
    assert scores["model"] == GEMMA_ID
    assert [t["id"] for t in scores["tokens"]] == GEMMA_PROMPT_IDS
    assert scores["tokens"][0]["logprob"] is None and all(t["logprob"] < 0 for t in scores["tokens"][1:])
    inspect = {"type": "inspect", "request_id": "i", "prompt": PROMPT, "model": GEMMA_ID, "top_n": 3}
    [inspection] = await answer(communicator, inspect, final_types=("inspection", "error"))
    assert inspection["model"] == GEMMA_ID
    [trace] = inspection["traces"]
    assert trace["alternatives"][0]["id"] == 506  # greedy's next token, as the build verified
    await communicator.disconnect()
