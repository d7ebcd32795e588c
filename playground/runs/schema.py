"""The versioned JSON export of a run, a comparison or a tree of branches, and the validating import
(docs/runs.md).

One definition serves both directions, and the recorder too: ``playground.runs.fields`` is the
table of a run's fields (the export's key, the ``Run`` column, the check on import, the
conversions); tokens are ``TokenEvent``s, exported with ``token_rows.exported`` and read back on
import by ``TokenEvent.from_saved``, which checks them field by field. So whatever an export writes, the import reads back, and
export → import → export gives the same file again (only ``id``, ``source`` and
``imported_from`` say that it is a copy). This module adds the file's envelope (``schema``,
``version``), the upgrades of older versions and the checks that tie fields together (the request,
by the websocket's parser; the reason by the status; the tokens within ``top_n`` and ``n``).

Versions: 3 (written now) has every field of every part, tokens included (``removed_by`` and
``forced`` on each token; ``draw_interval`` and ``watched``, added later, may be left out of a
token in any version and read as null and [], as ``request.watch`` reads as [],
``request.typed_tokens`` as 0 and a run's ``prompt_surprisal`` as null), and a chat run's whole
conversation (``request.messages``,
``request.continue_final_message``). Version 2 files are version 3 without the conversation
(``_upgrade_v2``: ``messages`` null, ``continue_final_message`` false). Version 1 files may leave
out what version 1 left out; ``_upgrade_v1`` fills in the defaults, then they are version 2 files.

``request``: either ``prompt`` (and ``system``) with ``messages`` null and
``continue_final_message`` false, or ``messages`` (``[{role, content}, …]``, checked by the
websocket's own parser) with ``system`` null and ``prompt`` equal to the last user message's text
(``conversation.shown_prompt``).

``parse_export`` checks every field of an uploaded file and raises ``SchemaError`` naming the first
bad field by its path (``run.tokens[3].alternatives[0].prob``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from inference.decoding.request import MAX_WATCH, GenerationRequest
from inference.errors import FieldError
from inference.model_catalog import DEFAULT_MODELS
from inference.sampling.params import MAX_SEED
from playground.edge import frames
from playground.runs import prompt_surprisal
from playground.runs.checks import (
    a_bool,
    a_draw_interval,
    a_list,
    a_str,
    an_int,
    an_object,
    kind,
    one_of,
    shown,
)
from playground.runs.conversation import shown_prompt
from playground.runs.errors import SchemaError
from playground.runs.fields import MAX_TOKENS_PER_RUN, MODEL, REQUEST, RESULT, RUN
from playground.runs.models import Run
from playground.runs.text_check import first_unencodable
from playground.runs.tree import MAX_TREE_RUNS, Node, flattened, tree_dict
from playground.wire.token_event import EventError, TokenEvent

__all__ = [
    "RUN_SCHEMA",
    "COMPARISON_SCHEMA",
    "VERSION",
    "READABLE_VERSIONS",
    "SchemaError",
    "ImportedRun",
    "run_to_dict",
    "run_export",
    "comparison_export",
    "tree_export",
    "parse_export",
    "parse_run_export",
    "parse_comparison_export",
]

RUN_SCHEMA = "token-playground.run"
COMPARISON_SCHEMA = "token-playground.comparison"
TREE_SCHEMA = "token-playground.tree"
VERSION = 3
READABLE_VERSIONS = (1, 2, 3)
MAX_COMPARED = 4
CONVERSATION_KEYS = ("messages", "continue_final_message")  # new in version 3
MAX_STAGES = MAX_STAGE_NAME = 64  # a token's ``stages``, and a stage name's characters
REASONS = {"complete": ("eos", "stop", "max_tokens"), "cancelled": ("cancelled",), "failed": (None,)}


# Export.


def run_to_dict(run: Run) -> dict[str, Any]:
    """The run's full record, in the export's shape (``fields.RUN``)."""
    return RUN.exported(run)


def run_export(run: Run) -> dict[str, Any]:
    return {"schema": RUN_SCHEMA, "version": VERSION, "run": run_to_dict(run)}


def comparison_export(runs: list[Run], comparison: dict[str, Any]) -> dict[str, Any]:
    """``comparison`` is derived from the runs and ignored on import."""
    return {
        "schema": COMPARISON_SCHEMA,
        "version": VERSION,
        "runs": [run_to_dict(r) for r in runs],
        "comparison": comparison,
    }


def tree_export(tree: Node) -> dict[str, Any]:
    """A run and its branches: ``runs`` depth first (the root first), each branch's ``parent_run``
    an earlier run of the file; ``tree`` is derived from the runs and ignored on import."""
    return {
        "schema": TREE_SCHEMA,
        "version": VERSION,
        "runs": [run_to_dict(node.run) for node in flattened(tree)],
        "tree": tree_dict(tree),
    }


# Import.


@dataclass(frozen=True)
class ImportedRun:
    """A validated run record, ready to become a new ``Run`` (a new id, ``source`` imported,
    ``imported_from`` the file's id): ``fields`` are its keyword arguments but the parent, which
    ``parent_run`` names in the file."""

    fields: dict[str, Any]
    original_id: str | None
    parent_run: str | None


def parse_export(data: Any) -> list[ImportedRun]:
    """Either kind of export file, told apart by its ``schema``; any readable version."""
    if not isinstance(data, dict):
        raise SchemaError("(file)", f"must be a JSON object, got {kind(data)}")
    found = first_unencodable(data)
    if found is not None:
        raise SchemaError(*found)
    if data.get("schema") == COMPARISON_SCHEMA:
        return parse_comparison_export(data)
    if data.get("schema") == TREE_SCHEMA:
        return parse_tree_export(data)
    return [parse_run_export(data)]


def parse_run_export(data: Any) -> ImportedRun:
    version = _header(data, RUN_SCHEMA, ("schema", "version", "run"))
    return _run(_upgraded(data["run"], version, "run"), "run")


def parse_comparison_export(data: Any) -> list[ImportedRun]:
    version = _header(data, COMPARISON_SCHEMA, ("schema", "version", "runs", "comparison"))
    runs = a_list(data["runs"], "runs", 2, MAX_COMPARED)
    return [_run(_upgraded(r, version, f"runs[{i}]"), f"runs[{i}]") for i, r in enumerate(runs)]


def parse_tree_export(data: Any) -> list[ImportedRun]:
    """A tree's runs: the root first, then each branch after the run it names as ``parent_run``."""
    version = _header(data, TREE_SCHEMA, ("schema", "version", "runs", "tree"))
    runs = a_list(data["runs"], "runs", 1, MAX_TREE_RUNS)
    imported = [_run(_upgraded(r, version, f"runs[{i}]"), f"runs[{i}]") for i, r in enumerate(runs)]
    seen = {imported[0].original_id}
    for i, run in enumerate(imported[1:], 1):
        if run.parent_run is None or run.parent_run not in seen:
            raise SchemaError(f"runs[{i}].parent_run", "must name an earlier run of this tree (the root comes first)")
        seen.add(run.original_id)
    return imported


def _header(data: Any, schema: str, keys: tuple[str, ...]) -> int:
    if not isinstance(data, dict):
        raise SchemaError("(file)", f"must be a JSON object, got {kind(data)}")
    if data.get("schema") != schema:
        one_of(data.get("schema"), "schema", (RUN_SCHEMA, COMPARISON_SCHEMA, TREE_SCHEMA))
    version = data.get("version")
    if isinstance(version, bool) or version not in READABLE_VERSIONS:
        readable = ", ".join(map(str, READABLE_VERSIONS))
        raise SchemaError("version", f"this server reads versions {readable}, got {shown(version)}")
    an_object(data, "", keys)
    return version


def _upgraded(run: Any, version: int, path: str) -> Any:
    if version == 1:
        run = _upgrade_v1(run, path)
    return _upgrade_v2(run, path) if version <= 2 else run


def _upgrade_v2(run: Any, path: str) -> Any:
    """A version 2 run as version 3: asked with ``prompt`` (and ``system``), no conversation."""
    if not isinstance(run, dict) or not isinstance(run.get("request"), dict):
        return run
    for key in CONVERSATION_KEYS:
        if key in run["request"]:
            raise SchemaError(f"{path}.request.{key}", "is not a field of versions 1 and 2 (it is of version 3)")
    return run | {"request": run["request"] | {"messages": None, "continue_final_message": False}}


def _upgrade_v1(run: Any, path: str) -> Any:
    """A version 1 run with what version 1 could leave out filled in with its defaults."""
    if not isinstance(run, dict):
        return run
    run = {
        "id": None,
        "created_at": None,
        "source": "live",
        "imported_from": None,
        "parent_run": None,
        "branch_index": None,
        "tokens": [],
        "beam_steps": [],
    } | run
    if isinstance(run.get("result"), dict):
        run["result"] = RESULT.empty() | run["result"]
    if isinstance(run["tokens"], list):
        run["tokens"] = [_upgrade_v1_token(t) for t in run["tokens"]]
    if isinstance(run["beam_steps"], list):
        run["beam_steps"] = [
            {"beams": [], "pruned": [], "finished": [], "elapsed_ms": None} | s if isinstance(s, dict) else s
            for s in run["beam_steps"]
        ]
    return run


def _upgrade_v1_token(token: Any) -> Any:
    if not isinstance(token, dict):
        return token
    token = {
        "sample": 0,
        "removed_by": None,
        "forced": False,
        "draw": None,
        "entropy": {"before": None, "after": None},
        "stages": [],
        "elapsed_ms": None,
    } | token
    if isinstance(token.get("alternatives"), list):
        token["alternatives"] = [{"removed_by": None} | a if isinstance(a, dict) else a for a in token["alternatives"]]
    return token


def _run(data: Any, path: str) -> ImportedRun:
    if isinstance(data, dict):  # files written before runs had ``prompt_surprisal`` (optional in every version)
        data = {"prompt_surprisal": None, "speculative": None} | data
    if isinstance(data, dict) and isinstance(data.get("request"), dict):  # files from before ``watch``
        data = data | {"request": {"watch": []} | data["request"]}
    run = RUN.checked(data, path)  # every key, and the run's own fields (``fields.RUN``'s checks)
    status = run["status"]
    request = data["request"]
    if isinstance(request, dict):  # files written before edits were typed (optional in every version)
        request = {"typed_tokens": 0} | request
    request = an_object(request, f"{path}.request", REQUEST.keys)
    seed = an_int(request["seed"], f"{path}.request.seed", 0, MAX_SEED)
    parsed = _generate_request(request, f"{path}.request")
    typed = an_int(request["typed_tokens"], f"{path}.request.typed_tokens", 0, len(parsed.prefix_tokens))
    if not isinstance(request["params"], dict) or request["params"].get("seed") != seed:
        raise SchemaError(f"{path}.request.params.seed", f"must equal request.seed ({seed})")
    model_part = data["model"]
    if isinstance(model_part, dict):  # files written before several models were served ran on the default
        model_part = {"id": DEFAULT_MODELS[0]} | model_part
    model = MODEL.checked(model_part, f"{path}.model")
    result = RESULT.checked(data["result"], f"{path}.result")
    reason = one_of(result["reason"], f"{path}.result.reason", REASONS[status])
    if (status == "failed") != (result["error"] is not None):
        raise SchemaError(f"{path}.result.error", 'must be an object when status is "failed", null otherwise')
    tokens = a_list(data["tokens"], f"{path}.tokens", 0, MAX_TOKENS_PER_RUN)
    for i, token in enumerate(tokens):
        _token(token, f"{path}.tokens[{i}]", parsed.top_n, parsed.loop.n)

    prompt_surprisal.check_against_prompt(run["prompt_surprisal"], run["prompt_tokens"], f"{path}.prompt_surprisal")
    kept = ("created_at", "status", "branch_index", "prompt_tokens", "prompt_surprisal", "beam_steps", "speculative")
    copy = {key: run[key] for key in kept} | {
        "source": Run.Source.IMPORTED,  # a copy: a new id, the file's id in imported_from
        "imported_from": run["id"],
        "request": {
            "prompt": request["prompt"] if parsed.chat is not None else parsed.prompt,
            "mode": parsed.mode,
            "system": parsed.system,
            "messages": None if parsed.chat is None else parsed.chat.to_list(),
            "continue_final_message": parsed.chat is not None and parsed.chat.continue_final_message,
            "params": parsed.params_dict(),  # normalized, as live runs store them
            "seed": seed,
            "top_n": parsed.top_n,
            "use_cache": parsed.use_cache,
            "prefix_tokens": parsed.prefix_tokens,
            "watch": list(parsed.watch),
            "typed_tokens": typed,
        },
        "model": model,
        "result": result | {"reason": reason},
        "tokens": tokens,
    }
    return ImportedRun(RUN.columns(copy), run["id"], run["parent_run"])


def _generate_request(request: dict[str, Any], path: str) -> GenerationRequest:
    """The export's request as the ``generate`` frame a replay sends, parsed by the websocket's own
    parser: ``prompt`` (and ``system``), or the conversation in ``messages`` (see the module's
    docstring for the rules of the two)."""
    continued = a_bool(request["continue_final_message"], f"{path}.continue_final_message")
    skipped = {"seed", "messages", "continue_final_message", "typed_tokens"}  # typed_tokens: checked by _run
    if request["messages"] is None:
        if continued:
            raise SchemaError(f"{path}.continue_final_message", "must be false when messages is null")
    else:
        a_list(request["messages"], f"{path}.messages", 1)
        if request["system"] is not None:
            raise SchemaError(f"{path}.system", "must be null when messages is given (a system message is a turn)")
        if request["prompt"] is None:
            raise SchemaError(f"{path}.prompt", "is required (the last user message's text when messages is given)")
        skipped |= {"prompt", "system"}
    generate = {k: v for k, v in request.items() if k not in skipped and v is not None}
    if request["messages"] is not None:
        generate |= {"messages": request["messages"], "continue_final_message": continued}
    try:
        parsed = frames.parse_generate(generate).request  # what a replay will send must be a valid request
    except FieldError as error:
        param = re.sub(r"\.(\d+)", r"[\1]", error.param) if error.param else None  # messages.1.role → messages[1].role
        raise SchemaError(f"{path}.{param}" if param else path, error.message) from None
    if parsed.chat is not None:
        expected = shown_prompt(parsed.chat.to_list())
        if request["prompt"] != expected:
            raise SchemaError(
                f"{path}.prompt", f"must be the last user message's text when messages is given ({shown(expected)})"
            )
    return parsed


def _token(data: Any, path: str, top_n: int, samples: int) -> None:
    """A token of the run: the event's own fields and types (``TokenEvent.from_saved``; a field
    added after the file was written reads as the class says), then what ties it to its run."""
    if not isinstance(data, dict):
        raise SchemaError(path, f"must be an object, got {kind(data)}")
    try:
        token = TokenEvent.from_saved(data)
    except EventError as error:
        raise SchemaError(f"{path}.{error.path}", error.message) from None
    an_int(token.sample, f"{path}.sample", 0, samples - 1)
    if token.draw_interval is not None:
        a_draw_interval(list(token.draw_interval), f"{path}.draw_interval")
    a_list(list(token.watched), f"{path}.watched", 0, MAX_WATCH)
    a_list(list(token.stages), f"{path}.stages", 0, MAX_STAGES)
    for i, stage in enumerate(token.stages):
        a_str(stage.name, f"{path}.stages[{i}].name", 1, MAX_STAGE_NAME)
    a_list(list(token.alternatives), f"{path}.alternatives", 0, top_n)
