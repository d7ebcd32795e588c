"""Imports in ``inference/``: no function imports one of our own modules (where an import cycle
hides, as ``modelbuild.quality`` and ``peer_models`` (now ``bench.peers``) once did), only the optional tool chains'
heavy modules are imported late; and the modules of that old cycle each import first."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

INFERENCE = Path(__file__).resolve().parents[2] / "inference"
# The modules of pyproject.toml's `build` and `peers` extras, which a server never installs or
# loads, and onnxruntime, which importing the build API must not load (tests/inference/modelbuild/
# test_build_light.py): each is imported by the function that uses it.
LATE_IMPORTS = {
    "onnxruntime",
    "onnx",
    "torch",
    "transformers",
    "optimum",
    "gguf",
    "llama_cpp",
    "onnxruntime_genai",
}


def imports_inside_functions() -> list[tuple[str, int, str]]:
    """(file, line, module) of every import statement inside a function in ``inference/``."""
    found = []
    for path in sorted(INFERENCE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for function in ast.walk(tree):
            if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(function):
                where = str(path.relative_to(INFERENCE.parent))
                if isinstance(node, ast.Import):
                    found += [(where, node.lineno, alias.name) for alias in node.names]
                elif isinstance(node, ast.ImportFrom):
                    found.append((where, node.lineno, "." * node.level + (node.module or "")))
    return found


def late_import_allowed(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in LATE_IMPORTS)


def test_the_scan_sees_imports_inside_functions():
    assert any(module == "llama_cpp" for _, _, module in imports_inside_functions())  # bench.peers opens llama.cpp late


def test_no_function_in_inference_imports_anything_but_the_optional_tool_chains():
    wrong = [
        f"{where}:{line} imports {module}"
        for where, line, module in imports_inside_functions()
        if not late_import_allowed(module)
    ]
    assert wrong == []


@pytest.mark.parametrize("first", ["inference.modelbuild.quality", "inference.bench.peers"])
def test_the_quality_check_and_the_peers_import_in_either_order(first):
    other = ({"inference.modelbuild.quality", "inference.bench.peers"} - {first}).pop()
    code = f"import {first}, {other}; assert {first}.export_reference is {other}.export_reference"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=INFERENCE.parent, timeout=120)
