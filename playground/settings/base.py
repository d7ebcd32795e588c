"""Settings shared by every environment. Environment-specific modules import * from here."""

from __future__ import annotations

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parents[2]
STATE_DIR = Path(os.environ.get("PLAYGROUND_STATE_DIR", BASE_DIR / ".state"))

INSTALLED_APPS = [
    "daphne",  # first: its runserver serves ASGI, websockets included
    "django.contrib.contenttypes",
    "django.contrib.staticfiles",
    "channels",
    "playground",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "playground.security.ContentSecurityPolicyMiddleware",  # one policy for every page
]

ROOT_URLCONF = "playground.urls"
ASGI_APPLICATION = "playground.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": False,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]

# SQLite in the state directory by default; PostgreSQL when DATABASE_URL says so
# (postgres://user:password@host:port/name, see playground/runs/database_url.py).
from playground.runs.database_url import database_from_env  # noqa: E402

DATABASES = {
    "default": database_from_env(os.environ)
    or {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": STATE_DIR / "playground.sqlite3",
    }
}

# Embedded default: the in-memory layer (one process). Scale-out: PLAYGROUND_REDIS_URL points every
# web process and every `manage.py runworker inference` worker at the same Redis, with connection
# settings made for the layer's blocking reads (see playground/channel_layer.py).
_REDIS_URL = os.environ.get("PLAYGROUND_REDIS_URL", "")
if _REDIS_URL:
    from playground.channel_layer import redis_channel_layer  # noqa: E402

    CHANNEL_LAYERS = {"default": redis_channel_layer(_REDIS_URL)}
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer", "CONFIG": {"capacity": 1000}}}

# Worker liveness (playground/liveness.py): a worker holding requests beats this often; a request
# whose worker has said nothing for LEASE_SECONDS fails with `worker_lost` (so a dead worker is
# noticed within LEASE_SECONDS plus a tenth of it); one that no worker acknowledged within
# ACK_TIMEOUT_SECONDS fails with `no_worker`. A worker acknowledges as it takes a request off the
# channel, before loading its model, so the wait covers only a worker (re)starting; it stays below
# the Redis layer's 60 s message expiry, after which an untaken request is gone anyway.
WORKER_LIVENESS = {
    "HEARTBEAT_SECONDS": 1.0,
    "LEASE_SECONDS": 2.5,
    "ACK_TIMEOUT_SECONDS": float(os.environ.get("PLAYGROUND_WORKER_ACK_TIMEOUT", "30")),
}

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = STATE_DIR / "static"
SERVE_STATIC = os.environ.get("PLAYGROUND_SERVE_STATIC", "1") == "1"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_TZ = True

# Inference. The model directory defaults to PLAYGROUND_MODEL_DIR or the ignored .models/ folder.
INFERENCE = {
    # Execution providers in order of preference; CUDA is used only when asked for and available.
    "EXECUTION_PROVIDERS": os.environ.get("PLAYGROUND_EXECUTION_PROVIDERS", "CPUExecutionProvider").split(","),
    "INTRA_OP_THREADS": int(os.environ.get("PLAYGROUND_INTRA_OP_THREADS", "2")),
    # Run an inference worker inside the server process (the embedded default). Set to 0 when
    # `manage.py runworker inference` processes serve the channel layer instead.
    "EMBEDDED_WORKER": os.environ.get("PLAYGROUND_EMBEDDED_WORKER", "1") == "1",
    # Requests one websocket connection may have running or queued at once.
    "MAX_REQUESTS_PER_CONNECTION": 8,
    # Per client address, across its connections (per web process): requests running or queued at
    # once, and new requests per second on average with bursts of BURST (see docs/websocket-api.md).
    "CLIENT_LIMITS": {
        "MAX_ACTIVE_REQUESTS": int(os.environ.get("PLAYGROUND_CLIENT_MAX_ACTIVE_REQUESTS", "32")),
        "REQUESTS_PER_SECOND": float(os.environ.get("PLAYGROUND_CLIENT_REQUESTS_PER_SECOND", "5")),
        "BURST": int(os.environ.get("PLAYGROUND_CLIENT_BURST", "60")),
    },
}

# Pages that may open the websocket, as scheme://host[:port] (comma-separated in the environment).
# Besides these, a page of the server's own origin may: the Origin's scheme, host and port equal
# the socket's own (its Host header, a host in ALLOWED_HOSTS, and http for ws / https for wss).
WEBSOCKET_ALLOWED_ORIGINS = [o for o in os.environ.get("PLAYGROUND_ALLOWED_ORIGINS", "").split(",") if o.strip()]

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "loggers": {
        "inference": {"handlers": ["console"], "level": "INFO"},
        "playground": {"handlers": ["console"], "level": "INFO"},
    },
}
