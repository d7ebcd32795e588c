"""Routes of saved runs (docs/runs.md). The id patterns take anything on purpose (the JSON routes
even an empty id, or one with a slash): the views answer a malformed id with a 404 that says what
is wrong with it, in JSON for the JSON routes."""

from django.urls import path, re_path

from playground.runs import views

app_name = "runs"

urlpatterns = [
    re_path(r"^r/(?P<run_id>[\s\S]*)\.json$", views.run_json, name="run_json"),
    re_path(r"^r/(?P<run_id>[\s\S]+)$", views.run_page, name="run"),
    path("compare/live", views.live_compare_page, name="live_compare"),  # before the ids pattern
    re_path(r"^compare/(?P<ids>[\s\S]*)\.json$", views.compare_json, name="compare_json"),
    re_path(r"^compare/(?P<ids>[\s\S]+)$", views.compare_page, name="compare"),
    re_path(r"^tree/(?P<run_id>[\s\S]*)\.json$", views.tree_json, name="tree_json"),
    re_path(r"^tree/(?P<run_id>[\s\S]+)$", views.tree_page, name="tree"),
    path("history", views.history_page, name="history"),
    path("api/runs/summaries", views.summaries, name="summaries"),
    path("api/runs/import", views.import_runs, name="import"),
    re_path(r"^api/runs/(?P<run_id>[\s\S]*)/delete$", views.delete, name="delete"),
]
