"""The test suite: the dev settings with a throw-away database file (daphne-served tests need a file)."""

import os

from .base import STATE_DIR
from .dev import *  # noqa: F401,F403

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": STATE_DIR / "test-playground.sqlite3",
        "TEST": {"NAME": os.environ.get("PLAYGROUND_TEST_DB", str(STATE_DIR / "test-playground-db.sqlite3"))},
    }
}
