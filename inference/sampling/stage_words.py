"""The stages' and their fields' words for the pages, made from their declarations: each stage's
title and each field's label, one-line explanation and dial group, written as an ES module
(``static/playground/js/stage-words.js``) by ``python -m inference.sampling.stages --write
docs/sampling.md``; ``static/playground/js/param-labels.js`` reads it. A test fails when the file
is not what the declarations make.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from inference.sampling.stages import STAGES
from inference.sampling.stages.declaration import Declaration

MODULE_PATH = Path(__file__).resolve().parents[2] / "static" / "playground" / "js" / "stage-words.js"
HEADER = (
    "// Made by `python -m inference.sampling.stages --write docs/sampling.md` from the stage declarations\n"
    "// (inference/sampling/stages/): edit those, then run it. A test fails when this is not what they make.\n"
)


def stage_words(stages: Sequence[Declaration] = STAGES) -> dict[str, Any]:
    """``titles``: stage name -> its title, in the default order; ``fields``: field name -> its
    label, about and group (the group of the first stage that declares it), in declaration order."""
    fields: dict[str, dict[str, Any]] = {}
    for stage in stages:
        for f in stage.fields:
            fields.setdefault(f.name, {"label": f.label, "about": f.about, "group": stage.group})
    return {"titles": {stage.name: stage.title for stage in stages}, "fields": fields}


def words_module(stages: Sequence[Declaration] = STAGES) -> str:
    """The ES module's text: ``STAGE_TITLES`` and ``FIELD_WORDS``, one entry a line."""
    words = stage_words(stages)

    def entries(mapping: dict[str, Any]) -> str:
        return "".join(f"  {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},\n" for k, v in mapping.items())

    return (
        HEADER
        + "\n/** Each stage's name in words, by identifier, in the default order. */\n"
        + f"export const STAGE_TITLES = {{\n{entries(words['titles'])}}};\n"
        + "\n/** Each stage field's label, one-line explanation and dial group (null: an editor of its own). */\n"
        + f"export const FIELD_WORDS = {{\n{entries(words['fields'])}}};\n"
    )


def write_module(path: Path = MODULE_PATH) -> bool:
    """Writes ``words_module()`` to ``path``; True if it changed."""
    new = words_module()
    old = path.read_text() if path.exists() else None
    if old != new:
        path.write_text(new)
    return old != new
