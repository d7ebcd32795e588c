"""The embedded default: one process, SQLite, the in-memory channel layer, local model."""

from .base import *  # noqa: F401,F403

DEBUG = True
SECRET_KEY = "dev-only-not-secret"
ALLOWED_HOSTS = ["localhost", "127.0.0.1", "[::1]"]
