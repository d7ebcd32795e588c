from django.apps import AppConfig


class RunsConfig(AppConfig):
    """Saved runs: the ``Run`` model, its pages and JSON endpoints, export/import and
    ``manage.py repair_run_text``."""

    name = "playground.runs"
    label = "runs"
    verbose_name = "Saved runs"
    default_auto_field = "django.db.models.BigAutoField"
