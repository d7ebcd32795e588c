from django.apps import AppConfig


class OpenAIApiConfig(AppConfig):
    """The OpenAI-compatible HTTP API (``/v1/``): its views, the ``ApiKey`` model and
    ``manage.py apikey``."""

    name = "playground.openai_api"
    label = "openai_api"
    verbose_name = "OpenAI-compatible API"
    default_auto_field = "django.db.models.BigAutoField"
