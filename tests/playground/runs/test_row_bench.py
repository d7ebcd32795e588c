"""``python -m playground.runs.row_bench`` runs and prints its figures for a row that reads back."""

from __future__ import annotations

import json
import subprocess
import sys

from playground.runs.row_bench import sample_row
from playground.runs.token_rows import from_stored, to_stored


def test_its_row_is_one_the_recorder_could_have_written():
    row = sample_row(20)
    assert to_stored(from_stored(row)) == row


def test_it_prints_each_figure():
    result = subprocess.run(
        [sys.executable, "-m", "playground.runs.row_bench", "--rows", "20", "--rounds", "1"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    figures = json.loads(result.stdout)
    assert figures["alternatives"] == 20
    assert all(figures[key] > 0 for key in ("from_stored", "exported", "to_json"))
