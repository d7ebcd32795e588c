"""The image's HEALTHCHECK: asks the process of this container's role whether it can serve.

- web: ``GET /health`` on the local daphne (the liveness endpoint; ``/ready`` is for load balancers).
- worker: the channel layer's Redis answers PING and every served model baked into the image is complete.
  (The worker process itself is the container's main process: if it dies, the container stops.)
Standard library and the Redis client only: it runs every few seconds and must start fast.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from pathlib import Path

ROLE_FILE = Path("/tmp/playground-role")  # written by entrypoint.sh
TIMEOUT_S = 3.0


def check_web() -> str:
    port = os.environ.get("PORT", "8000")
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=TIMEOUT_S) as response:
        body = json.load(response)
    if body.get("status") != "ok":
        raise RuntimeError(f"/health answered {body}")
    return "web: /health ok"


def check_worker() -> str:
    import redis  # the channel layer's own client library

    url = os.environ.get("PLAYGROUND_REDIS_URL", "")
    if not url:
        raise RuntimeError("PLAYGROUND_REDIS_URL is not set: a worker has no channel layer to serve")
    redis.Redis.from_url(url, socket_timeout=TIMEOUT_S, socket_connect_timeout=TIMEOUT_S).ping()
    root = Path(os.environ["PLAYGROUND_MODELS_ROOT"])
    models = [m.strip() for m in os.environ["PLAYGROUND_MODELS"].split(",") if m.strip()]
    for model in models:  # every served model baked into the image (each in /opt/models/<id>)
        manifest = root / model / "manifest.json"
        if not manifest.is_file():
            raise RuntimeError(f"no model: {manifest} is missing")
    return f"worker: redis answers, models present ({', '.join(models)})"


def main() -> int:
    role = ROLE_FILE.read_text().strip() if ROLE_FILE.exists() else "web"
    checks = {"web": check_web, "worker": check_worker}
    if role not in checks:
        print(f"{role}: nothing to check")
        return 0
    try:
        print(checks[role]())
    except Exception as error:  # noqa: BLE001 — any failure is "unhealthy", with its reason
        print(f"{role}: unhealthy: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
