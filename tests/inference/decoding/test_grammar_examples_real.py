"""The page's built-in JSON Schema example (``GRAMMAR_EXAMPLES`` in static/shared/js/grammar.js, read
here through Node so the test runs the page's own text) finishes well inside its token budget with
each served model: greedy and at a seed, every run ends by end-of-sequence, in far fewer tokens than
``BUDGET`` (the JSON demo's max tokens), with JSON the schema accepts (checked with ``json`` +
``jsonschema``, not by the engine's library). The schema is closed (issue 30: the old one let the
model add fields until max tokens cut it, "✗ not JSON … incomplete")."""

from __future__ import annotations

from pathlib import Path

import pytest

from inference import model_dir as md
from inference.decoding.generation import GenerationRequest
from inference.decoding.loop_params import LoopParams
from inference.engine import CPU
from inference.models import GEMMA
from inference.runtime import Runtime, load_runtime
from inference.sampling import SamplingParams
from tests.inference.grammar_cases import validates
from tests.inference.helpers import collect
from tests.js import module_url, run_js

BUDGET = 48  # max tokens of the page's JSON demo (static/runs/js/live-presets.js)
WELL_INSIDE = 36  # three quarters of it: the example must end by itself long before max tokens
SETTINGS = [(0.0, 1), (0.8, 3)]  # greedy, and sampled at a seed
GEMMA_DIR = md.MODELS_ROOT / GEMMA.dir_name

EXAMPLES = f"""
const {{ GRAMMAR_EXAMPLES }} = await import("{module_url("shared/js/grammar.js")}");
console.log(JSON.stringify({{ schema: JSON.parse(GRAMMAR_EXAMPLES.json_schema) }}));
"""


@pytest.fixture(scope="module")
def example() -> dict:
    return {"type": "json_schema", "schema": run_js(EXAMPLES)["schema"]}


def test_the_example_is_a_closed_schema(example) -> None:
    schema = example["schema"]
    assert schema["additionalProperties"] is False and sorted(schema["required"]) == sorted(schema["properties"])
    for name, prop in schema["properties"].items():
        bounded = "enum" in prop or "maxLength" in prop or "maximum" in prop or "maxItems" in prop
        assert bounded, f"{name} is unbounded"


def finishes(runtime: Runtime, grammar: dict, prompt: str, mode: str, temperature: float, seed: int) -> None:
    request = GenerationRequest(
        prompt,
        mode=mode,  # type: ignore[arg-type]
        sampling=SamplingParams(grammar=grammar, temperature=temperature, seed=seed),
        loop=LoopParams(max_tokens=BUDGET),
    )
    _, _, finished = collect(runtime, request)
    sample = finished.first
    assert sample.reason == "eos" and sample.completion_tokens <= WELL_INSIDE, (sample.completion_tokens, sample.text)
    assert validates(grammar, sample.text), sample.text


@pytest.mark.real_model
@pytest.mark.parametrize(("temperature", "seed"), SETTINGS)
def test_smollm2_writes_the_example_and_ends(real_runtime, example, temperature, seed) -> None:
    finishes(real_runtime, example, "Describe a person as JSON.", "chat", temperature, seed)


@pytest.fixture(scope="module")
def gemma_runtime() -> Runtime:
    if not (Path(GEMMA_DIR) / md.MANIFEST_FILE).is_file():
        pytest.skip("Gemma is not built: python -m inference.modelbuild --model gemma-3-270m")
    return load_runtime(GEMMA_DIR, (CPU,), intra_op_threads=2)


@pytest.mark.gemma_model
@pytest.mark.parametrize(("temperature", "seed"), SETTINGS)
def test_gemma_writes_the_example_and_ends(gemma_runtime, example, temperature, seed) -> None:
    finishes(gemma_runtime, example, "A person, as JSON: ", "completion", temperature, seed)
