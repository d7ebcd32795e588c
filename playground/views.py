from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control, never_cache
from django.views.decorators.http import etag, require_GET

from inference.model_catalog import describe, model_dir_for
from playground.edge import load
from playground.edge.param_facts import params_schema, params_schema_json

BATCH_LANES = 8  # the batch view's most prompts (issue 9), within one connection's limit of requests at once


def index(request: HttpRequest) -> HttpResponse:
    """The playground page; everything after the first paint happens over the websocket."""
    return render(request, "playground/index.html", {"param_facts": params_schema()})


# What an address that almost names a page meant, by its first part.
NOT_FOUND_HINTS = {
    "compare": "A comparison's address names 2 to 4 saved runs: /compare/<id>,<id>. Pick runs in your "
    "history, or run settings side by side live.",
    "r": "A saved run's address is /r/<id>, its permalink; your history lists the runs this browser made.",
    "tree": "A branch tree's address is /tree/<id>, the id of any run in the tree.",
}


def not_found(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """Every address nothing else answers (the last route) and any view's ``Http404``
    (``handler404``): a page in the site's own frame, in every setting (Django's debug 404 would
    list every route); a JSON error for ``/api/`` addresses."""
    path = request.path
    if path.startswith("/api/"):
        error = {"code": "not_found", "message": f"nothing answers {path[:200]!r}", "param": None}
        return JsonResponse({"error": error}, status=404)
    first = path.strip("/").split("/", 1)[0]
    context = {"path": path if len(path) <= 200 else f"{path[:200]}…", "hint": NOT_FOUND_HINTS.get(first)}
    return render(request, "404.html", context, status=404)


def batch(request: HttpRequest) -> HttpResponse:
    """The batch view: up to eight prompts, each with its own settings, decoded together."""
    return render(request, "playground/batch.html", {"param_facts": params_schema(), "batch_lanes": batch_lanes()})


def batch_lanes() -> int:
    """The batch view's lanes at most: eight, or fewer when one connection may run fewer requests."""
    return min(BATCH_LANES, settings.INFERENCE["MAX_REQUESTS_PER_CONNECTION"])


@require_GET
@cache_control(public=True, max_age=3600)
@etag(lambda request: params_schema_json()[1])
def params_schema_view(request: HttpRequest) -> HttpResponse:
    """Every parameter's type, range, default and "off" value, and the stage on/off rule, as a
    JSON Schema (docs/params-schema.md)."""
    return HttpResponse(params_schema_json()[0], content_type="application/schema+json")


@require_GET
@never_cache
async def load_view(request: HttpRequest) -> HttpResponse:
    """The inference workers' load (requests decoding, rows in use, requests waiting), from their
    ping answers, at most a second old, or ``?fresh=1``: gathered after the request came
    (playground/edge/load.py); ``age_ms`` says how old it is."""
    fresh = request.GET.get("fresh", "0")
    if fresh not in ("0", "1"):
        message = f"fresh must be 1 (an answer gathered after this request) or 0, got {fresh[:20]!r}"
        return JsonResponse({"error": {"code": "invalid_value", "param": "fresh", "message": message}}, status=400)
    return JsonResponse((await load.current_load(fresh == "1")).answer())


@require_GET
@never_cache
def models_view(request: HttpRequest) -> HttpResponse:
    """The served models, the default first, with what a page shows about each (docs/websocket-api.md, *Models*)."""
    served = settings.INFERENCE["MODELS"]
    return JsonResponse({"default": served[0], "models": [describe(m, model_dir_for(m, served)) for m in served]})
