"""The stages in words, made from their declarations: the package docstring's numbered list (in
``inference/sampling/__init__.py``, between its ``Default order`` paragraph and ``then the final
pick``) and the stage table of docs/sampling.md (between its two ``stage table`` markers), both
rewritten by ``python -m inference.sampling.stages --write docs/sampling.md``. A test fails when
either is not what the declarations make.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import inference.sampling.stages
from inference.sampling.doc_block import block_in, write_block
from inference.sampling.stages import STAGES
from inference.sampling.stages.declaration import Clause, Declaration, ParamIs

BEGIN = "<!-- stage table: made by `python -m inference.sampling.stages --write docs/sampling.md` from the declarations; edit those -->"
END = "<!-- end of stage table -->"


def _value(v: Any) -> str:
    return f"{v:g}" if isinstance(v, float) else str(v)


def clause_text(clause: Clause, quote: str = "`") -> str:
    """One clause in words: "`top_p` < 1", "`logit_bias` not empty", "`dynamic_temperature` off"."""
    if isinstance(clause, ParamIs):
        if clause.op == "nonempty":
            return f"{quote}{clause.param}{quote} not empty"
        return f"{quote}{clause.param}{quote} {clause.op} {_value(clause.value)}"
    return f"{quote}{clause.stage}{quote} {'on' if clause.on else 'off'}"


def on_text(stage: Declaration) -> str:
    """When the stage runs (and when the chain ends after it)."""
    text = " and ".join(clause_text(c) for c in stage.on)
    if stage.ends_chain is not None:
        text += f"; the chain ends here when {clause_text(stage.ends_chain)}"
    return text


def stage_list(stages: Sequence[Declaration] = STAGES, indent: str = "    ") -> str:
    """The numbered list of the package docstring: number, name, what the stage does."""
    width = max(len(stage.name) for stage in stages)
    lines = []
    for i, stage in enumerate(stages, 1):
        ends = "" if stage.ends_chain is None else f"; the chain ends here when {clause_text(stage.ends_chain, quote='')}"
        lines.append(f"{indent}{i:>2}. {stage.name:<{width}} {stage.does}{ends}\n")
    return "".join(lines)


def stage_table(stages: Sequence[Declaration] = STAGES) -> str:
    """The Markdown table of docs/sampling.md, with its markers."""
    rows = [
        "| # | stage | runs when | reads | what it does |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {i} | `{stage.name}` | {on_text(stage)} | {', '.join(f'`{f.name}`' for f in stage.fields)} | {stage.does} |"
            for i, stage in enumerate(stages, 1)
        ),
    ]
    return "\n".join([BEGIN, *rows, END]) + "\n"


def table_in(text: str) -> str:
    """The stage table a document holds, markers included ("" when it has none)."""
    return block_in(text, "<!-- stage table", END)  # the first marker's wording may have changed


def write_into(path: Path) -> bool:
    """Puts ``stage_table()`` between the markers of the file at ``path``; True if it changed."""
    return write_block(path, "<!-- stage table", END, stage_table())


PACKAGE_SOURCE = Path(inference.sampling.stages.__file__).resolve().parents[1] / "__init__.py"
_LIST_START = "(``stage_table.stage_list()``):\n\n"  # the line before the package docstring's list ends so
_LIST_END = "    then the final pick"


def list_in(text: str) -> str | None:
    """The numbered stage list the package docstring in ``text`` holds (None: no place for one)."""
    start = text.find(_LIST_START)
    end = text.find(_LIST_END, start)
    return None if start < 0 or end < 0 else text[start + len(_LIST_START) : end]


def write_list_into(path: Path = PACKAGE_SOURCE) -> bool:
    """Puts ``stage_list()`` into the package docstring at ``path``; True if it changed."""
    text = path.read_text()
    old = list_in(text)
    if old is None:
        raise SystemExit(f"{path}: no stage list (a paragraph ending {_LIST_START!r} ... {_LIST_END!r})")
    start = text.find(_LIST_START) + len(_LIST_START)
    new = text[:start] + stage_list() + text[start + len(old) :]
    path.write_text(new)
    return new != text
