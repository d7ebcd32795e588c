"""Which models a server serves (``PLAYGROUND_MODELS``), where each one's build is, what the page
is told about one not built yet, and ``manage.py build_model --served`` (what scripts/run and
scripts/test call). No model is loaded."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.test import override_settings

from inference import model_catalog as catalog
from inference.model_dir import MODEL_DIR_ENV, MODELS_ROOT

BOTH = ("smollm2-135m-instruct", "gemma-3-270m")


def test_both_models_are_served_by_default_smollm_first():
    assert catalog.configured_models({}) == BOTH
    assert catalog.configured_models({"PLAYGROUND_MODELS": ""}) == BOTH
    assert catalog.configured_models({"PLAYGROUND_MODELS": " gemma-3-270m "}) == ("gemma-3-270m",)


@pytest.mark.parametrize("setting", ["gpt-4", "gemma-3-270m,gemma-3-270m"])
def test_an_unknown_or_repeated_model_is_refused_naming_the_setting(setting):
    with pytest.raises(ValueError, match="PLAYGROUND_MODELS"):
        catalog.configured_models({"PLAYGROUND_MODELS": setting})


def test_model_directories_default_to_dot_models_and_can_be_moved(tmp_path):
    assert catalog.model_dir_for("gemma-3-270m", BOTH, {}) == MODELS_ROOT / "gemma-3-270m"
    moved = {MODEL_DIR_ENV: str(tmp_path / "first")}
    # PLAYGROUND_MODEL_DIR keeps moving the first (default) model's directory, and only that one
    assert catalog.model_dir_for("smollm2-135m-instruct", BOTH, moved) == tmp_path / "first"
    assert catalog.model_dir_for("gemma-3-270m", BOTH, moved) == MODELS_ROOT / "gemma-3-270m"
    assert catalog.model_dir_for("gemma-3-270m", ("gemma-3-270m",), moved) == tmp_path / "first"
    own = {"PLAYGROUND_MODEL_DIR_GEMMA_3_270M": str(tmp_path / "g")}
    assert catalog.model_dir_for("gemma-3-270m", BOTH, own) == tmp_path / "g"
    root = {"PLAYGROUND_MODELS_ROOT": str(tmp_path / "models")}  # the image's /opt/models
    assert [catalog.model_dir_for(m, BOTH, root) for m in BOTH] == [tmp_path / "models" / m for m in BOTH]


def test_a_model_is_named_by_id_or_manifest_name_case_ignored():
    assert catalog.resolve("SmolLM2-135M-Instruct", BOTH) == "smollm2-135m-instruct"
    assert catalog.resolve("Gemma-3-270M", BOTH) == "gemma-3-270m"
    assert catalog.resolve("gemma-3-270m", ("smollm2-135m-instruct",)) is None


def test_a_model_not_built_is_described_with_nulls_and_chat_is_refused_only_once_built(tmp_path, monkeypatch):
    facts = catalog.describe("gemma-3-270m", tmp_path)
    assert facts["built"] is False and facts["vocab_size"] is None and facts["special_tokens"] is None
    assert facts["kind"] == "base" and facts["license"]["name"] == "Gemma Terms of Use"
    monkeypatch.setenv("PLAYGROUND_MODEL_DIR_GEMMA_3_270M", str(tmp_path))
    assert catalog.chat_refusal("gemma-3-270m", BOTH) is None  # not built: its requests fail as that says
    (tmp_path / "manifest.json").write_text("{}")  # built, and no chat_template.jinja beside it
    assert catalog.chat_refusal("gemma-3-270m", BOTH) == "gemma-3-270m is a base model: it has no chat template; use completion"


def test_build_model_served_dry_run_names_each_served_models_directory_and_its_draft(tmp_path, monkeypatch):
    from playground.management.commands.build_model import Command

    monkeypatch.setenv(MODEL_DIR_ENV, str(tmp_path / "smollm"))
    monkeypatch.setenv("PLAYGROUND_MODEL_DIR_GEMMA_3_270M", str(tmp_path / "gemma"))
    err = io.StringIO()
    command = Command(stdout=io.StringIO(), stderr=err)
    options = vars(command.create_parser("manage.py", "build_model").parse_args(["--served", "--dry-run", "--skip-checks"]))
    with override_settings(INFERENCE={"MODELS": list(BOTH)}):
        command.execute(**options)
    lines = err.getvalue().splitlines()
    # the speculative `fast` draft of SmolLM2 is built beside it
    assert [Path(line.split(":")[0]) for line in lines] == [
        tmp_path / "smollm",
        tmp_path / "gemma",
        tmp_path / "smollm2-135m-instruct-fast",
    ]
    assert all("would build: not built yet" in line for line in lines)
