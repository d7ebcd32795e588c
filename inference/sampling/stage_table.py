"""The stages in words, made from their declarations: the package docstring's numbered list and the
stage table of docs/sampling.md (between its two ``stage table`` markers), which
``python -m inference.sampling.stages --write docs/sampling.md`` rewrites. A test fails when the
doc's table is not what ``stage_table()`` makes.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

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
            f"| {i} | `{stage.name}` | {on_text(stage)} | {', '.join(f'`{f.name}`' for f in stage.params)} | {stage.does} |"
            for i, stage in enumerate(stages, 1)
        ),
    ]
    return "\n".join([BEGIN, *rows, END]) + "\n"


def table_in(text: str) -> str:
    """The stage table a document holds, markers included ("" when it has none)."""
    start, end = text.find("<!-- stage table"), text.find(END)  # the first marker's wording may have changed
    if start < 0 or end < start:
        return ""
    return text[start : end + len(END)] + "\n"


def write_into(path: Path) -> bool:
    """Puts ``stage_table()`` between the markers of the file at ``path``; True if it changed."""
    text = path.read_text()
    old = table_in(text)
    if not old:
        raise SystemExit(f"{path}: no stage table markers ({BEGIN!r} ... {END!r})")
    new = text.replace(old, stage_table())
    path.write_text(new)
    return new != text
