"""Permalink, comparison and history pages, and the JSON endpoints behind them (docs/runs.md).

Every JSON error has the websocket API's shape, ``{"error": {"code", "message", "param"}}``,
with ``param`` naming the bad part of the request (``playground.runs.errors``); no input, however
odd (ids, bodies, content types, text that is not text), gets a 500. Nothing here lists runs: a
run is reached only by its id, and the history endpoint answers only for ids the browser already
holds.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from functools import wraps
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.db import router, transaction
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_safe

from inference.model_catalog import CATALOG, display_name, is_special_token, model_dir_for, special_token_ids, special_token_texts
from playground.edge.param_facts import LIVE_COLUMN, LIVE_SHARED, default_params, live_fields, params_schema
from playground.protocol import parse_json
from playground.runs import schema
from playground.runs.address import encode_address, run_texts, turns_text
from playground.runs.compare import compare
from playground.runs.conversation import page_fields
from playground.runs.errors import BadRequest, NotFound, RunsError
from playground.runs.fields import REQUEST, RESULT, RUN
from playground.runs.ids import RUN_ID_RULE, hash_delete_token, is_run_id, new_delete_token
from playground.runs.models import Run
from playground.runs.text_check import excerpt, first_unencodable, repaired
from playground.runs.token_rows import sample_rows
from playground.runs.tree import root_of, tree_dict, tree_of

log = logging.getLogger(__name__)

MAX_IMPORT_BYTES = 32 * 1024 * 1024
MAX_SUMMARY_IDS = 500
MAX_SUMMARY_BYTES = 1024 * 1024
MAX_DELETE_BYTES = 4096
MAX_QUERY_CHARACTERS = 1000
MAX_DELETE_TOKEN_CHARACTERS = 200


def error_json(error: RunsError) -> JsonResponse:
    return JsonResponse({"error": error.to_dict()}, status=error.status)


def json_endpoint(*methods: str) -> Callable[[Callable[..., HttpResponse]], Callable[..., HttpResponse]]:
    """Answers these methods only, and any ``RunsError`` the view raises, as JSON errors."""

    def decorate(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def answer(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
            if request.method not in methods:
                response = error_json(
                    BadRequest(
                        None, f"this address answers {' and '.join(methods)}, not {request.method}", "method_not_allowed", 405
                    )
                )
                response["Allow"] = ", ".join(methods)
                return response
            try:
                return view(request, *args, **kwargs)
            except RunsError as error:
                return error_json(error)

        return answer

    return decorate


def _page(request: HttpRequest, template: str, context: dict[str, Any], status: int = 200) -> HttpResponse:
    return render(request, template, context, status=status)  # its CSP: playground/edge/security.py, as every page


def _not_found_page(request: HttpRequest, error: NotFound) -> HttpResponse:
    return _page(request, "runs/not_found.html", {"message": error.message}, status=404)


def get_run(run_id: str, param: str = "id") -> Run:
    if not is_run_id(run_id):
        raise NotFound(param, f"{excerpt(run_id)} is not a run id ({RUN_ID_RULE})", "invalid_id")
    run = Run.objects.filter(pk=run_id).first()
    if run is None:
        raise NotFound(param, f"no saved run has the id {run_id!r}")
    return _shown_safely(run)


def _shown_safely(run: Run) -> Run:
    """A run saved, before saving refused it, with text that cannot be shown (a lone surrogate):
    shown with U+FFFD in its place, and logged so that ``manage.py repair_run_text`` is run."""
    found = run.unencodable_text()
    if found is not None:
        log.warning("run %s holds unencodable text (%s %s); shown repaired: run manage.py repair_run_text", run.id, *found)
        for name, value in run.text_fields():
            setattr(run, name, repaired(value))
    return run


def get_runs(ids: str) -> list[Run]:
    """``a,b[,c[,d]]`` → those runs, in that order."""
    parts = ids.split(",", schema.MAX_COMPARED)
    if not 2 <= len(parts) <= schema.MAX_COMPARED:
        count = len(parts) if len(parts) <= schema.MAX_COMPARED else "more"
        raise NotFound(
            "ids", f"a comparison takes 2 to {schema.MAX_COMPARED} run ids separated by commas, got {count}", "invalid_id"
        )
    return [get_run(part, f"ids[{i}]") for i, part in enumerate(parts)]


def playground_query(run: Run) -> str:
    """The playground's address with this run's prompt (or its chat turns and the answer it
    continued) and settings, in the page's own address format (playground/runs/address.py)."""
    request = {
        "prompt": run.prompt,
        "mode": run.mode,
        "system": run.system,
        "top_n": run.top_n,
        "use_cache": run.use_cache,
        "model": run.model,
    }
    messages = run.conversation()
    if messages is not None:
        request |= page_fields(messages, run.continue_final_message)
    return f"{reverse('index')}?{encode_address(run_texts(request, run.parameters()))}"


def live_query(runs: list[Run]) -> str:
    """The live comparison's address with these runs' settings: run 1's prompt, mode, system (or
    its chat conversation: earlier turns and the answer's start, as the playground's address
    writes them) and seed, and per run its model and the settings that are not the defaults."""
    first = runs[0]
    defaults = default_params()
    request = {"prompt": first.prompt, "system": first.system}
    messages = first.conversation()
    if messages is not None:
        request |= page_fields(messages, first.continue_final_message)
    query: dict[str, str] = {"prompt": request["prompt"], "mode": first.mode}
    if request["system"] is not None:
        query["system"] = request["system"]
    if request.get("turns"):
        query["turns"] = turns_text(request["turns"])
    if request.get("assistant_prefix"):
        query["assistant_prefix"] = request["assistant_prefix"]
    query["seed"] = str(int(first.seed))
    query["max_tokens"] = str(first.parameters().get("max_tokens", defaults["max_tokens"]))
    query["columns"] = str(len(runs))
    for n, run in enumerate(runs, start=1):
        changed = {k: v for k, v in run.parameters().items() if k not in LIVE_SHARED and v != defaults.get(k, object())}
        for key in LIVE_COLUMN:
            if key in changed:
                query[f"c{n}.{key}"] = json.dumps(changed.pop(key))
        if changed:
            query[f"c{n}.other"] = json.dumps(changed, ensure_ascii=False)
        query[f"c{n}.model"] = run.model  # the served model's id: each column runs its run's model
    return f"{reverse('runs:live_compare')}?{urlencode(query)}"


def settings_rows(params: dict[str, Any]) -> dict[str, list[tuple[str, str]]]:
    """The run's parameters as (name, JSON text) rows: those that differ from a request that sets
    nothing (the seed aside), and all of them."""
    defaults = default_params()
    rows = [(key, json.dumps(value, ensure_ascii=False)) for key, value in sorted(params.items())]
    changed = [(key, text) for key, text in rows if key != "seed" and params[key] != defaults.get(key, object())]
    return {"changed_params": changed, "all_params": rows}


# Pages.


@require_safe
def run_page(request: HttpRequest, run_id: str) -> HttpResponse:
    try:
        run = get_run(run_id)
    except NotFound as error:
        return _not_found_page(request, error)
    data = schema.run_to_dict(run)
    return _page(
        request,
        "runs/run.html",
        {
            "run": run,
            "data": data,
            "conversation": run.conversation(),
            "seed": str(int(run.seed)),
            "playground_url": playground_query(run),
            "tree_root": root_of(run).id if run.parent_id or run.branches.exists() else None,
            **settings_rows(run.parameters()),
            "completion_tokens": len(sample_rows(run.tokens)),
            "model_label": display_name(run.model, run.model_name),  # the one name pages show for it
            "prompt_chips": prompt_chips(run),
            "special_ids": special_ids(run),
        },
    )


def prompt_chips(run: Run) -> list[tuple[int, str, bool]]:
    """The prompt's tokens as (id, text, special) for the page: special as the playground marks
    them, the run's own model's named special tokens (Gemma's ``<bos>``) and special ids included."""
    named = special_token_texts(run.model, list(settings.INFERENCE["MODELS"]))
    ranges = special_ids(run)
    return [
        (int(token_id), text, is_special_token(text, named) or any(a <= int(token_id) <= b for a, b in ranges))
        for token_id, text in run.prompt_tokens
    ]


def special_ids(run: Run) -> list[list[int]]:
    """The run's model's special token ids as ranges (``model_catalog.special_token_ids``), for its
    output's labels; none when that model is not built here."""
    if run.model not in CATALOG:
        return []
    return special_token_ids(run.model, model_dir_for(run.model, list(settings.INFERENCE["MODELS"])))


@require_safe
def compare_page(request: HttpRequest, ids: str) -> HttpResponse:
    try:
        runs = get_runs(ids)
    except NotFound as error:
        return _not_found_page(request, error)
    comparison = compare(runs)
    for row in comparison["differing"]:  # as the run page shows settings: JSON, not Python's repr
        row["texts"] = [value if isinstance(value, str) else json.dumps(value, ensure_ascii=False) for value in row["values"]]
    for position in comparison["positions"]:
        position["cells"] = [
            {"token": token, "prob": _percent(token["prob"]) if token else None, **_tv_cell(tv)}
            for token, tv in zip(position["tokens"], position["divergence"])
        ]
    return _page(
        request,
        "runs/compare.html",
        {
            "runs": runs,
            "comparison": comparison,
            "ids": ids,
            "run_data": [schema.run_to_dict(r) for r in runs],
            "live_url": live_query(runs),
            "table_columns": 2 * len(runs),  # the position, each run's token and each other run's TV
            "top_n_text": str(runs[0].top_n) if len({r.top_n for r in runs}) == 1 else "N",
            "conversations": [
                {"messages": r.conversation(), "continued": r.continue_final_message, "system": r.system, "prompt": r.prompt}
                for r in runs
            ]
            if any(r.messages is not None for r in runs)
            else None,
        },
    )


# The live comparison's starting texts: two columns that differ in top-p, a short run.
LIVE_START = {"max_tokens": "24", "columns": [{"temperature": "1"}, {"temperature": "1", "top_p": "0.5"}, {}, {}]}


@require_GET
def live_compare_page(request: HttpRequest) -> HttpResponse:
    """One prompt, 2–4 settings, one seed, streamed side by side; the page reads its settings from
    the query string itself (static/runs/js/live-settings.js). Its fields are the parameter facts'
    (``live_fields``), rendered here and read by the page's scripts from the same data."""
    fields = live_fields()
    columns = [
        {"n": n, "fields": [{**field, "value": start.get(field["key"], "")} for field in fields["column"]]}
        for n, start in enumerate(LIVE_START["columns"], start=1)
    ]
    return _page(
        request,
        "runs/live_compare.html",
        {
            "columns": columns,
            "max_tokens": LIVE_START["max_tokens"],
            "live_fields": fields,
            "param_facts": params_schema(),
        },
    )


def _percent(p: float) -> str:
    return "0%" if p == 0 else "<0.01%" if p < 0.00005 else f"{p * 100:.2f}%"


def _tv_cell(tv: dict[str, Any] | None) -> dict[str, str | None]:
    """A TV cell's text and kind: none (no token to compare), other (the tokens before differ: not
    compared), zero (the same settings in the same context) or a value or range."""
    if tv is None:
        return {"tv": None, "tv_kind": "none"}
    if tv["context"] == "different":
        return {"tv": None, "tv_kind": "other"}
    if tv["same_settings"]:
        return {"tv": "0", "tv_kind": "zero"}
    exact = tv["upper"] - tv["lower"] < 0.0005
    return {"tv": f"{tv['lower']:.3f}" if exact else f"{tv['lower']:.3f}–{tv['upper']:.3f}", "tv_kind": "range"}


@require_safe
def history_page(request: HttpRequest) -> HttpResponse:
    return _page(request, "runs/history.html", {})


# JSON.


def _export_response(data: dict[str, Any]) -> JsonResponse:
    # allow_nan=False: a value JSON cannot carry is an error here, never a file the import refuses
    return JsonResponse(data, json_dumps_params={"ensure_ascii": False, "allow_nan": False})


@json_endpoint("GET", "HEAD")
def run_json(request: HttpRequest, run_id: str) -> JsonResponse:
    return _export_response(schema.run_export(get_run(run_id)))


@require_safe
def tree_page(request: HttpRequest, run_id: str) -> HttpResponse:
    """A run and every saved branch under it, drawn as nested lists, each node opening its run."""
    try:
        root = get_run(run_id)
    except NotFound as error:
        return _not_found_page(request, error)
    tree = tree_of(root)
    data = tree_dict(tree)
    return _page(
        request,
        "runs/tree.html",
        {"root": root, "tree": tree, "count": len(data["nodes"]), "prompt": root.prompt, "seed": str(int(root.seed))},
    )


@json_endpoint("GET", "HEAD")
def tree_json(request: HttpRequest, run_id: str) -> JsonResponse:
    return _export_response(schema.tree_export(tree_of(get_run(run_id))))


@json_endpoint("GET", "HEAD")
def compare_json(request: HttpRequest, ids: str) -> JsonResponse:
    runs = get_runs(ids)
    return _export_response(schema.comparison_export(runs, compare(runs)))


def _json_body(request: HttpRequest, limit: int) -> Any:
    """The request's JSON body; raises ``BadRequest`` naming the problem."""
    content_type = request.content_type or ""
    if content_type != "application/json":
        raise BadRequest(
            None, f"send the body as application/json, got {excerpt(content_type or 'none')}", "unsupported_media_type", 415
        )
    body = request.read(limit + 1)
    if len(body) > limit:
        size = f"{limit // (1024 * 1024)} MB" if limit >= 1024 * 1024 else f"{limit} bytes"
        raise BadRequest(None, f"the body is larger than {size}", "too_large", 413)
    try:
        return parse_json(body.decode("utf-8"))
    except ValueError as error:  # UnicodeDecodeError is one too
        raise BadRequest(None, f"the body is not valid JSON: {excerpt(str(error), 200)}", "invalid_json") from None


def _text_field(value: Any, param: str, high: int, low: int = 0) -> str:
    """A string field of a request body that the database can take."""
    if not isinstance(value, str) or not low <= len(value) <= high:
        raise BadRequest(param, f"{param} must be a string of {low} to {high} characters", "invalid_value")
    found = first_unencodable(value, param)
    if found is not None:
        raise BadRequest(param, f"{param} {found[1]}", "invalid_value")
    return value


# JSON-only POST endpoints: a cross-site form cannot send application/json without a CORS
# preflight this server never grants, so they need no CSRF cookie (and scripts can call them).


@csrf_exempt
@json_endpoint("POST")
def summaries(request: HttpRequest) -> JsonResponse:
    """``{"ids": [...], "q": "text"}`` → summaries of those runs whose prompt contains ``q``."""
    body = _json_body(request, MAX_SUMMARY_BYTES)
    if not isinstance(body, dict) or set(body) - {"ids", "q"}:
        extra = sorted(set(body) - {"ids", "q"}) if isinstance(body, dict) else None
        raise BadRequest(
            extra[0][:100] if extra else None, 'the body must be an object with "ids" and optional "q"', "invalid_value"
        )
    ids = body.get("ids")
    if not isinstance(ids, list) or len(ids) > MAX_SUMMARY_IDS or not all(isinstance(i, str) for i in ids):
        raise BadRequest("ids", f"ids must be an array of at most {MAX_SUMMARY_IDS} strings", "invalid_value")
    query = _text_field(body.get("q", ""), "q", MAX_QUERY_CHARACTERS)
    valid = [i for i in ids if is_run_id(i)]
    runs = Run.objects.filter(pk__in=valid).defer("tokens", "beam_steps", "samples", "beams")
    if query:
        runs = runs.filter(prompt__icontains=query)
    found = {r.id: r for r in runs}
    matched_ids = set(Run.objects.filter(pk__in=valid).values_list("pk", flat=True)) if query else set(found)
    return JsonResponse(
        {
            "runs": [_summary(found[i]) for i in ids if i in found],
            "missing": [i for i in ids if i not in matched_ids],
        }
    )


def _summary(run: Run) -> dict[str, Any]:
    """What the history lists of a run: values of its export (``fields``), texts cut short."""
    return {
        **{key: RUN[key].exported(run) for key in ("id", "created_at", "status", "source")},
        "prompt": run.prompt[:300],
        "mode": run.mode,
        "turns": None if run.messages is None else len(run.messages),  # a chat conversation's messages
        "reason": RESULT["reason"].exported(run),
        "text": run.text[:300],
        "seed": REQUEST["seed"].exported(run),
        "params": run.parameters(),
        "completion_tokens": run.usage.get("completion_tokens"),
        "model": run.model_name,
        "model_id": run.model,  # the served model's id (what a frame's model takes)
        "url": reverse("runs:run", args=[run.id]),
    }


@csrf_exempt
@json_endpoint("POST")
def delete(request: HttpRequest, run_id: str) -> HttpResponse:
    """``{"delete_token": "…"}``, the token the run's ``done`` event (or its import) gave once."""
    body = _json_body(request, MAX_DELETE_BYTES)
    token = body.get("delete_token") if isinstance(body, dict) else None
    if token is None:
        raise BadRequest("delete_token", "delete_token is required", "missing_field")
    _text_field(token, "delete_token", MAX_DELETE_TOKEN_CHARACTERS, 1)
    run = get_run(run_id)
    if not run.check_delete_token(token):
        raise BadRequest("delete_token", "this delete_token does not belong to this run", "forbidden", 403)
    run.delete()
    return HttpResponse(status=204)


@csrf_exempt
@json_endpoint("POST")
def import_runs(request: HttpRequest) -> JsonResponse:
    """An exported run or comparison → new runs with new ids; existing runs are never touched.

    A branch whose parent is in the same file becomes a branch of that parent's new copy; one
    whose parent is saved here keeps it; otherwise the link is dropped (``branch_index`` stays)."""
    records = schema.parse_export(_json_body(request, MAX_IMPORT_BYTES))
    created = []
    copies: dict[str, Run] = {}  # the file's run id → its new copy
    db = router.db_for_write(Run)
    with transaction.atomic(using=db):
        for record in records:
            token = new_delete_token()
            parent = Run.objects.using(db).filter(pk=record.parent_run).first() if record.parent_run else None
            run = Run(**record.fields, parent=parent, delete_token_hash=hash_delete_token(token))
            run.save(force_insert=True, using=db)  # refuses unencodable text: the file was checked for it
            if record.original_id:
                copies.setdefault(record.original_id, run)
            created.append((record, run, token))
        for record, run, _ in created:
            copy_of_parent = copies.get(record.parent_run or "")
            if copy_of_parent is not None and copy_of_parent is not run:
                run.parent = copy_of_parent
                run.save(update_fields=["parent"], using=db)
    created = [{"id": run.id, "delete_token": token, "url": reverse("runs:run", args=[run.id])} for _, run, token in created]
    result: dict[str, Any] = {"runs": created}
    if 1 < len(created) <= schema.MAX_COMPARED:  # a comparison takes 2 to 4 runs; a tree file may hold more
        result["compare_url"] = reverse("runs:compare", args=[",".join(c["id"] for c in created)])
    if records and all(record.parent_run in copies for record in records[1:]):  # one tree: the first its root
        result["tree_url"] = reverse("runs:tree", args=[created[0]["id"]])
    return JsonResponse(result, status=201)
