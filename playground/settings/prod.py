"""Production: safe by default. Secrets and hosts come from the environment; nothing turns DEBUG on.

Assumes what docs/deploy.md describes: TLS ends at a reverse proxy (or load balancer) that forwards
plain HTTP to daphne and sets ``X-Forwarded-Proto`` on every request, overwriting any value a
client sent. ``python manage.py check --deploy`` is clean with these settings.

Environment:
- ``DJANGO_SECRET_KEY`` (or ``DJANGO_SECRET_KEY_FILE``, a file holding it): required, 50+ characters.
- ``DJANGO_ALLOWED_HOSTS``: required, comma-separated host names the site answers to.
- ``DJANGO_CSRF_TRUSTED_ORIGINS``: optional, comma-separated ``https://host`` origins.
- ``DJANGO_SECURE_SSL_REDIRECT`` (default 1), ``DJANGO_HSTS_SECONDS`` (default one year),
  ``DJANGO_HSTS_INCLUDE_SUBDOMAINS`` (default 1), ``DJANGO_HSTS_PRELOAD`` (default 1).
- ``PLAYGROUND_HTTPS`` (default 1): 0 serves a trial over plain HTTP (no redirect, no HSTS, cookies
  not marked secure); never for a site others reach.
"""

import os
import warnings
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from .base import *  # noqa: F401,F403
from .base import LOGGING, STATE_DIR

DEBUG = False  # never read from the environment

SECRET_KEY_MIN_LENGTH = 50  # what `check --deploy` asks of a key


def _required(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise ImproperlyConfigured(f"the environment variable {name} must be set in production")
    return value


def _secret_key() -> str:
    key_file = os.environ.get("DJANGO_SECRET_KEY_FILE", "").strip()
    if key_file:
        try:
            key = Path(key_file).read_text(encoding="utf-8").strip()
        except OSError as error:
            raise ImproperlyConfigured(f"DJANGO_SECRET_KEY_FILE cannot be read: {error}") from None
    else:
        key = _required("DJANGO_SECRET_KEY")
    if len(key) < SECRET_KEY_MIN_LENGTH or len(set(key)) < 5:
        raise ImproperlyConfigured(
            f"DJANGO_SECRET_KEY must be at least {SECRET_KEY_MIN_LENGTH} random characters, e.g. "
            "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'"
        )
    return key


def _flag(name: str, default: bool) -> bool:
    value = os.environ.get(name, "").strip().lower()
    if not value:
        return default
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ImproperlyConfigured(f"{name} must be 1 or 0, got {value!r}")


def _list(name: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, "").split(",") if item.strip()]


SECRET_KEY = _secret_key()
ALLOWED_HOSTS = _list("DJANGO_ALLOWED_HOSTS")
if not ALLOWED_HOSTS:
    raise ImproperlyConfigured("the environment variable DJANGO_ALLOWED_HOSTS must be set in production")
CSRF_TRUSTED_ORIGINS = _list("DJANGO_CSRF_TRUSTED_ORIGINS")

# Behind the TLS-terminating proxy: it says which scheme the client used. Only safe when the proxy
# always sets this header itself (docs/deploy.md).
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
# PLAYGROUND_HTTPS=0: a trial over plain HTTP on localhost, no proxy; `check --deploy` then warns
# about each of the settings it switches off, as it should.
HTTPS = _flag("PLAYGROUND_HTTPS", True)
SECURE_SSL_REDIRECT = HTTPS and _flag("DJANGO_SECURE_SSL_REDIRECT", True)
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", str(365 * 24 * 3600))) if HTTPS else 0
SECURE_HSTS_INCLUDE_SUBDOMAINS = _flag("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = _flag("DJANGO_HSTS_PRELOAD", True)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
SESSION_COOKIE_SECURE = HTTPS
CSRF_COOKIE_SECURE = HTTPS
X_FRAME_OPTIONS = "DENY"

# Compressed files with content-hashed names, written by `collectstatic` (at image build time) and
# served by WhiteNoise with long cache lifetimes; module imports between scripts are rewritten to
# the hashed names too.
STATIC_ROOT = Path(os.environ.get("PLAYGROUND_STATIC_ROOT") or STATE_DIR / "static")
WHITENOISE_USE_FINDERS = False  # the collected, hashed files only
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "playground.static_storage.HashedModuleStorage"},
}
# WhiteNoise is a synchronous middleware: under ASGI Django reads each (small) static file whole
# before sending it and warns about doing so on every response. The files are small; the warning is noise.
warnings.filterwarnings("ignore", message="StreamingHttpResponse must consume synchronous iterators")

# One JSON object per log line (time, level, logger, message, pid, host).
LOGGING = {**LOGGING, "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "json"}}}
