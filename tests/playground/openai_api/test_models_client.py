"""Several models through the OpenAI-compatible API (issue 23), with the official ``openai``
client against a real daphne: ``/v1/models`` with our extension fields, ``model`` choosing the
model (real Gemma 3 270M beside SmolLM2), an unserved model and chat with the base model refused
by field. The Gemma decoding tests are skipped unless ``.models/gemma-3-270m`` is built."""

from __future__ import annotations

import json
import urllib.request

import openai
import pytest

from inference import model_dir as md
from inference.models import GEMMA

pytestmark = pytest.mark.real_model

GEMMA_ID = "gemma-3-270m"
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def client(api_server) -> openai.OpenAI:
    return openai.OpenAI(base_url=api_server.url + "/v1", api_key="unused", max_retries=0, timeout=300)


@pytest.fixture
def gemma_built():
    if not (md.MODELS_ROOT / GEMMA.dir_name / md.MANIFEST_FILE).is_file():
        pytest.skip("Gemma is not built: python -m inference.modelbuild --model gemma-3-270m")


def test_models_carry_owner_and_our_extension_fields(client, model_id, api_server):
    smollm, gemma = client.models.list().data
    assert (smollm.id, smollm.owned_by, gemma.id, gemma.owned_by) == (model_id, "HuggingFaceTB", GEMMA_ID, "google")
    ours = smollm.model_extra["playground"]
    assert ours["kind"] == "instruct" and ours["default"] is True and ours["context_length"] == 8192
    assert ours["license"]["name"] == "Apache-2.0" and ours["variant"] == "exact"
    with urllib.request.urlopen(f"{api_server.url}/api/models") as response:
        served = json.loads(response.read())["models"][0]
    assert ours["kernels"] == served["kernels"]  # one fact: /v1/models says what /api/models says
    theirs = client.models.retrieve(GEMMA_ID).model_extra["playground"]
    assert theirs["kind"] == "base" and theirs["default"] is False
    assert theirs["license"] == {"name": "Gemma Terms of Use", "url": "https://ai.google.dev/gemma/terms"}


def test_an_unserved_model_is_a_404_naming_model(client):
    with pytest.raises(openai.NotFoundError) as caught:
        client.completions.create(model="gpt-4o", prompt=PROMPT, max_tokens=1)
    error = caught.value.body
    assert (error["param"], error["code"]) == ("model", "model_not_found")
    assert GEMMA_ID in error["message"]


def test_chat_with_the_base_model_is_a_400_naming_messages_with_the_reason(client, gemma_built):
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model=GEMMA_ID, messages=[{"role": "user", "content": "Hi"}], max_tokens=1)
    error = caught.value.body
    assert error["param"] == "messages"
    assert error["message"] == "gemma-3-270m is a base model: it has no chat template; use completion"


def test_a_gemma_completion_runs_on_gemma_and_its_run_records_it(client, api_server, gemma_built):
    answer = client.completions.create(model=GEMMA_ID, prompt=PROMPT, max_tokens=3, temperature=0, logprobs=2)
    extension = answer.model_extra["playground"]
    assert answer.model == GEMMA_ID
    assert [t["id"] for t in extension["prompt_tokens"]] == [2, 818, 5279, 529, 7001, 563]  # <bos>, then Gemma's ids
    assert answer.usage.prompt_tokens == 5  # the prompt's own tokens, not the <bos> before them
    first = answer.choices[0].model_extra["playground"]["tokens"][0]
    assert first["id"] == 506 and all(a["id"] < 262144 for a in first["alternatives"])
    with urllib.request.urlopen(f"{api_server.url}/r/{extension['run_id']}.json") as saved:
        run = json.load(saved)["run"]
    assert run["model"]["id"] == GEMMA_ID and run["model"]["name"] == "gemma-3-270m"
