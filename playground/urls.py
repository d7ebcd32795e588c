from django.urls import include, path, re_path

from playground import views

urlpatterns = [
    path("", views.index, name="index"),
    path("v1/", include("playground.openai_api.urls")),  # the OpenAI-compatible API (docs/openai-api.md)
    path("batch", views.batch, name="batch"),
    path("api/params.schema.json", views.params_schema_view, name="params_schema"),
    path("api/load", views.load_view, name="load"),
    path("api/models", views.models_view, name="models"),  # the served models (docs/websocket-api.md)
    path("", include("playground.runs.urls")),  # saved runs: /r/<id>, /compare/<ids>, /history, /api/runs/…
    # Last: any other address gets the site's own 404 page in every setting, dev included (where
    # DEBUG would answer with Django's page listing every route); handler404 for a view's Http404.
    re_path(r"^", views.not_found, name="not_found"),
]

handler404 = "playground.views.not_found"
