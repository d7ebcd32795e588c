from django.urls import include, path

from playground import views

urlpatterns = [
    path("", views.index, name="index"),
    path("api/params.schema.json", views.params_schema_view, name="params_schema"),
    path("", include("playground.runs.urls")),  # saved runs: /r/<id>, /compare/<ids>, /history, /api/runs/…
]
