"""docs/sampling.md's parameter table, made from the fields' declarations (between its two
``sampling parameter table`` markers) and rewritten by ``python -m inference.sampling.stages --write
docs/sampling.md``; a test fails when the doc's table is not what the declarations make.

A row per ``SamplingParams`` field, the stages' fields in the default order (``params.FIELDS``), then
``sampler_order`` and ``seed``: its name; its range (the kind's
``range_words()``, with "null accepted as" the default for a nullable field that has one); its off
value or default (the default as ``to_dict`` writes it, or the field's ``off`` words when they say
more than that the default is off); its ``definition``. ``sampler_order``, which no stage declares,
has its words in ``params.py`` beside its check.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from inference.sampling.doc_block import block_in, write_block
from inference.sampling.params import FIELDS, ORDER_DEFINITION, ORDER_OFF, ORDER_RANGE, SamplingParams
from inference.sampling.stages.fields import Field

BEGIN = "<!-- sampling parameter table: made by `python -m inference.sampling.stages --write docs/sampling.md` from the fields' declarations; edit those -->"
END = "<!-- end of sampling parameter table -->"
_START = "<!-- sampling parameter table"  # the first marker's opening words (the rest may be reworded)


def _written(value: Any) -> str:
    """A default as the table shows it: a number or null plain, anything else as code."""
    if value is None:
        return "null"
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return f"`{json.dumps(value, ensure_ascii=False)}`"


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def range_cell(f: Field) -> str:
    """ "[0, 2]", "> 0", "integer >= 1", ">= 0 (null accepted as 0)"."""
    words = f.range_words()
    if f.nullable and f.default is not None:
        words += f" (null accepted as {_written(f.default)})"
    return words


def default_cell(f: Field, default: Any) -> str:
    """The default (as ``to_dict`` writes it), or the ``off`` words when they say more: "0 = the
    whole history", not "0 = off" or "default 1.75"."""
    shown = _written(default)
    plain = shown.strip("`")
    if f.off.startswith("default") or f.off in (f"{plain} = off", f"{plain} or null = off"):
        return shown
    return f.off


def param_row(name: str, range_words: str, default_words: str, definition: str) -> str:
    if not definition:
        raise ValueError(f"the field {name!r} has no definition: give its declaration one (definition=...)")
    return f"| `{name}` | {_cell(range_words)} | {_cell(default_words)} | {_cell(definition)} |"


def param_table(fields: Mapping[str, Field] = FIELDS) -> str:
    """The Markdown table of docs/sampling.md, with its markers: a row per ``SamplingParams`` field
    (``fields``: every one but ``sampler_order``, ``seed`` last)."""
    defaults = SamplingParams().to_dict()
    rows = [
        param_row(name, range_cell(f), default_cell(f, defaults[name]), f.definition)
        for name, f in fields.items()
        if name != "seed"
    ]
    rows.append(param_row("sampler_order", ORDER_RANGE, ORDER_OFF, ORDER_DEFINITION))
    rows.append(
        param_row("seed", range_cell(fields["seed"]), default_cell(fields["seed"], defaults["seed"]), fields["seed"].definition)
    )
    head = ["| parameter | range | off / default | exact definition |", "| --- | --- | --- | --- |"]
    return "\n".join([BEGIN, *head, *rows, END]) + "\n"


def param_table_in(text: str) -> str:
    """The parameter table a document holds, markers included ("" when it has none)."""
    return block_in(text, _START, END)


def write_param_table_into(path: Path) -> bool:
    """Puts ``param_table()`` between the markers of the file at ``path``; True if it changed."""
    return write_block(path, _START, END, param_table())
