from pathlib import Path

from django.apps import AppConfig
from django.conf import settings

from playground.wire import embedded


class PlaygroundConfig(AppConfig):
    name = "playground"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # SQLite cannot create its database file in a folder that does not exist (a fresh clone).
        Path(settings.STATE_DIR).mkdir(parents=True, exist_ok=True)
        # The worker's modules use the models, so it is imported once the app registry is ready;
        # the web side starts it only through the hook it is given here.
        from playground.worker.consumer import ensure_embedded_worker

        embedded.provide(ensure_embedded_worker)
