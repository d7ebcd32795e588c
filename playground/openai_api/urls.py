"""Routes of the OpenAI-compatible API, mounted at ``/v1/``."""

from django.urls import path, re_path

from playground.openai_api import views

app_name = "openai_api"

urlpatterns = [
    path("completions", views.completions, name="completions"),
    path("chat/completions", views.chat_completions, name="chat_completions"),
    path("models", views.models, name="models"),
    path("models/<path:model_id>", views.model, name="model"),
    re_path(r"^(?P<path>.*)$", views.unknown_route, name="unknown"),  # any other /v1/ path: 404 in OpenAI's shape
]
