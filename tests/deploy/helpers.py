"""Running Django under the production settings in a child process, as a server would start."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROD = "playground.settings.prod"


def prod_env(state_dir: Path, **overrides: str | None) -> dict[str, str]:
    """The environment of a production process: a strong key, one allowed host, a state folder.
    An override of None removes the variable."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": PROD,
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "play.example",
        "PLAYGROUND_STATE_DIR": str(state_dir),
        "PLAYGROUND_STATIC_ROOT": str(state_dir / "static"),
    }
    env.pop("DATABASE_URL", None)
    for name, value in overrides.items():
        if value is None:
            env.pop(name, None)
        else:
            env[name] = value
    return env


def run_python(code: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``python -c code`` with Django set up first, from the repository root."""
    setup = "import django; django.setup()\n"
    return subprocess.run(
        [sys.executable, "-c", setup + code], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )


def manage(*args: str, env: dict[str, str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout
    )
