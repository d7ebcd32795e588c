"""Running the page's pure ES modules in Node, to test them against the Python they mirror.

``run_js(source, payload)`` runs ``source`` as an ES module with ``payload`` (JSON) on stdin and
returns what it prints as JSON; ``module_url(path)`` names a module under static/ for its imports.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
STATIC = REPO / "static"


def module_url(path: str) -> str:
    """The file URL of ``static/<path>``, for an ``import`` in a script run by ``run_js``."""
    return (STATIC / path).as_uri()


def run_js(source: str, payload: Any = None, node_flags: Sequence[str] = ()) -> Any:
    """Runs ``source`` (an ES module; ``INPUT`` holds the payload) and returns its printed JSON.
    ``node_flags`` go to ``node`` before the script (e.g. a V8 feature Chromium has on by default)."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: the test command installs it (Debian package nodejs)")
    prelude = 'import { readFileSync } from "node:fs";\nconst INPUT = JSON.parse(readFileSync(0, "utf8"));\n'
    result = subprocess.run(
        [node, *node_flags, "--input-type=module", "-e", prelude + source],
        input=json.dumps(payload),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if result.returncode != 0:
        raise AssertionError(f"node failed ({result.returncode}):\n{result.stderr}")
    return json.loads(result.stdout)
