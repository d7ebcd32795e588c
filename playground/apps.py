from pathlib import Path

from django.apps import AppConfig
from django.conf import settings


class PlaygroundConfig(AppConfig):
    name = "playground"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # SQLite cannot create its database file in a folder that does not exist (a fresh clone).
        Path(settings.STATE_DIR).mkdir(parents=True, exist_ok=True)
