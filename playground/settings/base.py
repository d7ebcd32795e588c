"""Settings shared by every environment. Environment-specific modules import * from here."""

from __future__ import annotations

import os
import socket
from pathlib import Path

from inference.batching.params import ADMISSION_WINDOW_S, DEFAULT_MAX_BATCH, DEFAULT_SPINNING, PREFILL_CHUNK_BESIDE_DECODE
from inference.model_catalog import configured_models

BASE_DIR = Path(__file__).resolve().parents[2]
STATE_DIR = Path(os.environ.get("PLAYGROUND_STATE_DIR", BASE_DIR / ".state"))

INSTALLED_APPS = [
    "daphne",  # first: its runserver serves ASGI, websockets included
    "django.contrib.contenttypes",
    "django.contrib.staticfiles",
    "playground",  # before channels: its runworker (capacity-aware intake) replaces channels' own
    "playground.runs",  # saved runs: the Run model, pages, export/import (label "runs")
    "playground.openai_api",  # the HTTP API /v1/ and its ApiKey model (label "openai_api")
    "channels",
]

MIDDLEWARE = [
    # First: /health, /ready and /metrics answer probes and scrapers that reach a process by its
    # address (no allowed host, no HTTPS redirect applies to them).
    "playground.edge.health.ProbeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files (compressed, hashed names under prod); in development straight from STATICFILES_DIRS.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "playground.edge.security.ContentSecurityPolicyMiddleware",  # one policy for every page
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

# SQLite in the state directory by default; any database dj-database-url reads from DATABASE_URL
# among those this project ships a driver for (postgres://user:password@host:port/name?sslmode=...).
import dj_database_url  # noqa: E402
from django.core.exceptions import ImproperlyConfigured  # noqa: E402

DATABASE_ENGINES = ("django.db.backends.postgresql", "django.db.backends.sqlite3")


def database_from_url(url: str) -> dict:
    """``DATABASE_URL`` → a ``DATABASES`` entry; a URL that cannot work is refused, naming what is wrong."""
    try:
        database = dj_database_url.parse(url, conn_max_age=0, conn_health_checks=True)
    except ValueError as error:  # unknown scheme, port out of range, unquoted characters
        raise ImproperlyConfigured(f"DATABASE_URL cannot be read: {error}") from None
    if database["ENGINE"] not in DATABASE_ENGINES:
        raise ImproperlyConfigured(
            f"DATABASE_URL names {database['ENGINE']}; this project ships drivers for PostgreSQL "
            "(postgresql://…) and SQLite (sqlite:///…) only"
        )
    if not database.get("NAME"):
        raise ImproperlyConfigured("DATABASE_URL must name one database, e.g. postgresql://host/playground")
    return database


DATABASES = {
    "default": database_from_url(os.environ.get("DATABASE_URL", "").strip() or f"sqlite:///{STATE_DIR / 'playground.sqlite3'}")
}

# Embedded default: the in-memory layer (one process). Scale-out: PLAYGROUND_REDIS_URL points every
# web process and every `manage.py runworker inference` worker at the same Redis, with connection
# settings made for the layer's blocking reads (see playground/wire/channel_layer.py).
# The waiting line (playground/edge/waiting_line.py): a generation that finds MAX_WAITING requests already
# waiting for a worker is refused at once with `busy`; none waits longer than MAX_WAIT_SECONDS (the
# channel layer keeps messages a margin longer, so a waiting request is never dropped silently).
WAITING_LINE = {
    "MAX_WAITING": int(os.environ.get("PLAYGROUND_MAX_WAITING", "64")),
    "MAX_WAIT_SECONDS": float(os.environ.get("PLAYGROUND_MAX_WAIT_SECONDS", "300")),
}
from playground.wire.channel_layer import in_memory_channel_layer, redis_channel_layer  # noqa: E402

_REDIS_URL = os.environ.get("PLAYGROUND_REDIS_URL", "")
if _REDIS_URL:
    CHANNEL_LAYERS = {"default": redis_channel_layer(_REDIS_URL, WAITING_LINE["MAX_WAIT_SECONDS"])}
else:
    CHANNEL_LAYERS = {"default": in_memory_channel_layer(WAITING_LINE["MAX_WAIT_SECONDS"])}

# Worker liveness (playground/wire/liveness.py): a worker holding requests beats this often; a request
# whose worker has said nothing for LEASE_SECONDS fails with `worker_lost` (so a dead worker is
# noticed within LEASE_SECONDS plus a tenth of it); one that no worker acknowledged within
# ACK_TIMEOUT_SECONDS fails with `no_worker`. A worker acknowledges as it takes a request off the
# channel, before loading its model, so the wait covers only a worker (re)starting. A request
# that waits because every worker is full (they answer pings) waits up to WAITING_LINE's
# MAX_WAIT_SECONDS instead, then is refused with `busy`.
WORKER_LIVENESS = {
    "HEARTBEAT_SECONDS": 1.0,
    "LEASE_SECONDS": 2.5,
    "ACK_TIMEOUT_SECONDS": float(os.environ.get("PLAYGROUND_WORKER_ACK_TIMEOUT", "30")),
}

STATIC_URL = "/static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
# Where `collectstatic` writes and WhiteNoise serves from under prod (the image bakes it in at build
# time); development reads STATICFILES_DIRS directly and needs none.
STATIC_ROOT = Path(os.environ["PLAYGROUND_STATIC_ROOT"]) if os.environ.get("PLAYGROUND_STATIC_ROOT") else None
# Without collected files WhiteNoise serves the source folders (whatever DEBUG says: tests run with it off).
WHITENOISE_USE_FINDERS = STATIC_ROOT is None
# Development and tests serve the files as they are; prod.py switches to compressed files with
# hashed names.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_TZ = True

# Inference. The model directory defaults to PLAYGROUND_MODEL_DIR or the ignored .models/ folder.
INFERENCE = {
    # The models served (PLAYGROUND_MODELS, comma-separated ids of inference/model_catalog.py; the
    # first is the default a request without `model` gets). Each is loaded on its first request.
    "MODELS": list(configured_models()),
    # Execution providers in order of preference; CUDA is used only when asked for and available.
    "EXECUTION_PROVIDERS": os.environ.get("PLAYGROUND_EXECUTION_PROVIDERS", "CPUExecutionProvider").split(","),
    "INTRA_OP_THREADS": int(os.environ.get("PLAYGROUND_INTRA_OP_THREADS", "2")),
    # Whether those threads spin between decoder calls (1, the default: quickest on a machine of its
    # own) or sleep (0: for a machine whose cores other work shares; inference/batching/params.py).
    "INTRA_OP_SPINNING": os.environ.get("PLAYGROUND_INTRA_OP_SPINNING", str(int(DEFAULT_SPINNING))) == "1",
    # Run an inference worker inside the server process (the embedded default). Set to 0 when
    # `manage.py runworker inference` processes serve the channel layer instead.
    "EMBEDDED_WORKER": os.environ.get("PLAYGROUND_EMBEDDED_WORKER", "1") == "1",
    # Continuous batching (inference/batching/scheduler.py): rows decoded as one batch per step in each
    # worker process (n samples and beams take one row each), the prompt tokens a joining request
    # prefills per step while others decode, and the generations a worker takes off the shared
    # channel beyond its rows (it reads the channel only while it holds fewer than MAX_BATCH +
    # INTAKE_BACKLOG, so requests go to workers with room). An idle decode loop woken by a request
    # waits up to ADMISSION_WINDOW_MS for the next of a burst (0: starts at once).
    "MAX_BATCH": int(os.environ.get("PLAYGROUND_MAX_BATCH", str(DEFAULT_MAX_BATCH))),
    "PREFILL_CHUNK": int(os.environ.get("PLAYGROUND_PREFILL_CHUNK", str(PREFILL_CHUNK_BESIDE_DECODE))),
    "ADMISSION_WINDOW_MS": float(os.environ.get("PLAYGROUND_ADMISSION_WINDOW_MS", str(ADMISSION_WINDOW_S * 1000))),
    "INTAKE_BACKLOG": int(os.environ.get("PLAYGROUND_WORKER_BACKLOG", "2")),
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

# The OpenAI-compatible API under /v1/ (docs/openai-api.md): bearer keys (made by
# `manage.py apikey create`) required only when asked for, and the browser origins (scheme://host[:port],
# comma-separated) that may call it cross-origin.
OPENAI_API = {
    "API_KEYS_REQUIRED": os.environ.get("PLAYGROUND_API_KEYS_REQUIRED", "0") == "1",
    "CORS_ALLOWED_ORIGINS": [o.strip() for o in os.environ.get("PLAYGROUND_API_CORS_ORIGINS", "").split(",") if o.strip()],
    # A streamed request still waiting for a worker's room after this long gets its response's
    # headers and then an SSE comment line this often until its run starts (proxies cut quiet
    # connections; clients ignore comments).
    "SSE_KEEPALIVE_SECONDS": float(os.environ.get("PLAYGROUND_API_SSE_KEEPALIVE_SECONDS", "10")),
}

# Plain lines in development; prod.py switches the same handler to one JSON object per line.
LOG_LEVEL = os.environ.get("PLAYGROUND_LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "json": {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s %(process)d",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger", "process": "pid"},
            "static_fields": {"host": socket.gethostname()},
            "timestamp": False,
        },
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    # One handler, on the root logger: every library's records come out in the same format.
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "inference": {"level": LOG_LEVEL},
        "playground": {"level": LOG_LEVEL},
        "django": {"level": "INFO"},
        "daphne": {"level": "INFO"},
    },
}
