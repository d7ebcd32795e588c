"""Issue 33's measure of one owner per fact, kept: ``temperature`` travels from a websocket frame
and from a ``/v1/chat/completions`` body to its sampler stage through at most 12 functions, and is
checked once on each side of the channel layer (``scripts/param_path.py`` traces it for real)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST_HOPS = 12
LINE = re.compile(
    r"^(?P<path>[^:]+): (?P<hops>\d+) hops, \d+ files; checked (?P<edge>\d+)x on the front door's side, (?P<worker>\d+)x on the worker's$"
)


def test_temperature_reaches_its_stage_in_few_hops_checked_once_a_side(tiny_runtime, tmp_path):
    env = {**os.environ, "PLAYGROUND_TEST_DB": str(tmp_path / "db.sqlite3")}
    result = subprocess.run(
        [sys.executable, "scripts/param_path.py", "--show"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    paths = {m["path"]: m for line in result.stdout.splitlines() if (m := LINE.match(line))}
    assert set(paths) == {"websocket generate frame", "/v1/chat/completions"}, result.stdout
    for name, found in paths.items():
        assert int(found["hops"]) <= MOST_HOPS, f"{name}:\n{result.stdout}"
        assert (found["edge"], found["worker"]) == ("1", "1"), f"{name}:\n{result.stdout}"
    assert "inference/sampling/stages/temperature.py:Temperature.__init__" in result.stdout  # it got there
