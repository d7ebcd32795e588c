from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.cache import cache_control
from django.views.decorators.http import etag, require_GET

from playground.param_facts import params_schema, params_schema_json


def index(request: HttpRequest) -> HttpResponse:
    """The playground page; everything after the first paint happens over the websocket."""
    return render(request, "playground/index.html", {"param_facts": params_schema()})


@require_GET
@cache_control(public=True, max_age=3600)
@etag(lambda request: params_schema_json()[1])
def params_schema_view(request: HttpRequest) -> HttpResponse:
    """Every parameter's type, range, default and "off" value, and the stage on/off rule, as a
    JSON Schema (docs/params-schema.md)."""
    return HttpResponse(params_schema_json()[0], content_type="application/schema+json")
