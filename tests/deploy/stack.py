"""Driving Docker and the compose stack from the docker tests: the daemon, the base image, the
build context's extras, and a compose project with its own name, port and secrets."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from tests.deploy.helpers import REPO
from tests.servers import free_port

COMPOSE_FILE = REPO / "docker" / "compose.yaml"
BASE_IMAGE_ENV = "PLAYGROUND_DOCKER_BASE_IMAGE"  # a base image to build on; made with debootstrap if unset
LOCAL_BASE_IMAGE = "playground-base:bookworm"
EXTRA_CAS = Path("/usr/local/share/ca-certificates")  # the machine's own CAs (a TLS-intercepting proxy's)
WHEELHOUSE = REPO / "docker" / "wheelhouse"
CERTS = REPO / "docker" / "certs"


def run(
    args: list[str], timeout: float = 600, check: bool = True, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=timeout, env=env)
    if check and result.returncode != 0:
        raise AssertionError(
            f"{' '.join(args)} exited with {result.returncode}:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
        )
    return result


def docker_unavailable() -> str | None:
    """Why the docker tests cannot run here, or None when they can."""
    if os.environ.get("PLAYGROUND_DOCKER_TESTS", "1") == "0":
        return "PLAYGROUND_DOCKER_TESTS=0"
    if shutil.which("docker") is None:
        return "no docker command (the test command installs Debian's docker.io where it can)"
    info = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=60)
    if info.returncode != 0:
        return f"no Docker daemon answers: {info.stderr.strip()[:300]}"
    if compose_command() is None:
        return "neither `docker compose` nor `docker-compose` is installed"
    return None


def compose_command() -> list[str] | None:
    if subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def base_image() -> str:
    """The base image to build on: $PLAYGROUND_DOCKER_BASE_IMAGE; else a bookworm image made here
    with debootstrap (docker/make-base-image.sh: root and debootstrap, no registry needed); else
    the Dockerfile's default, from a registry."""
    chosen = os.environ.get(BASE_IMAGE_ENV)
    if chosen:
        return chosen
    have_local = subprocess.run(["docker", "image", "inspect", LOCAL_BASE_IMAGE], capture_output=True).returncode == 0
    if have_local or (os.geteuid() == 0 and shutil.which("debootstrap")):
        run([str(REPO / "docker" / "make-base-image.sh"), LOCAL_BASE_IMAGE], timeout=1200)
        return LOCAL_BASE_IMAGE
    return "debian:bookworm-slim"


def prepare_build_context() -> None:
    """What this machine's pip relies on, offered to the image's builder stage: its extra CA
    certificates, and a CPU-only torch wheel when its pip finds one for the pinned version."""
    for cert in EXTRA_CAS.glob("*.crt"):
        shutil.copy(cert, CERTS / cert.name)
    if any(WHEELHOUSE.glob("torch-*+cpu-*.whl")):
        return
    pin = next(r for r in _build_requirements() if r.replace(" ", "").startswith("torch=="))
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:", "-d", folder, pin],
            capture_output=True,
            timeout=900,
        )
        for wheel in Path(folder).glob("torch-*+cpu-*.whl"):  # a CUDA build stays out: the index has it too
            shutil.move(str(wheel), WHEELHOUSE / wheel.name)


def _build_requirements() -> list[str]:
    result = run([sys.executable, str(REPO / "docker" / "requirements.py"), "build"])
    return result.stdout.split()


@dataclass
class Stack:
    """One compose project: its own name, volumes, secrets and published port."""

    base_image: str
    project: str = field(default_factory=lambda: f"playgroundtest{secrets.token_hex(3)}")
    port: int = field(default_factory=free_port)
    secret_key: str = field(default_factory=lambda: secrets.token_urlsafe(50))
    postgres_password: str = field(default_factory=lambda: secrets.token_urlsafe(18))

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "BASE_IMAGE": self.base_image,
            "DJANGO_SECRET_KEY": self.secret_key,
            "POSTGRES_PASSWORD": self.postgres_password,
            "DJANGO_ALLOWED_HOSTS": "localhost",
            "PLAYGROUND_PORT": str(self.port),
            "PLAYGROUND_INTRA_OP_THREADS": "1",
        }

    def compose(self, *args: str, timeout: float = 600, check: bool = True) -> subprocess.CompletedProcess[str]:
        command = [*(compose_command() or []), "-f", str(COMPOSE_FILE), "-p", self.project, *args]
        return run(command, timeout=timeout, check=check, env=self.env)

    def containers(self, service: str) -> list[str]:
        return self.compose("ps", "-q", service).stdout.split()

    def inspect(self, container: str) -> dict:
        return json.loads(run(["docker", "inspect", container]).stdout)[0]

    def logs(self, container: str) -> str:
        result = run(["docker", "logs", container], check=False)
        return result.stdout + result.stderr

    def wait_healthy(self, service: str, count: int = 1, timeout: float = 300) -> list[str]:
        """Waits until ``count`` containers of ``service`` run and their health checks pass."""
        deadline = time.monotonic() + timeout
        states: list[str] = []
        while time.monotonic() < deadline:
            containers = self.containers(service)
            states = [self.inspect(c)["State"].get("Health", {}).get("Status", "none") for c in containers]
            if len(containers) == count and all(state == "healthy" for state in states):
                return containers
            time.sleep(2)
        raise AssertionError(
            f"{service}: wanted {count} healthy, have {states}\n"
            + self.compose("logs", "--tail", "40", service, check=False).stdout
        )

    def http(self, path: str, https: bool = True, timeout: float = 30) -> tuple[int, dict[str, str], bytes]:
        """A request as the TLS-terminating proxy would forward it (``X-Forwarded-Proto: https``)."""
        headers = {"Host": "localhost", **({"X-Forwarded-Proto": "https"} if https else {})}
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", headers=headers)
        opener = urllib.request.build_opener(_NoRedirect)
        try:
            with opener.open(request, timeout=timeout) as response:
                return response.status, dict(response.headers), response.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    def ws_url(self) -> str:
        return f"ws://localhost:{self.port}/ws/generate/"

    def down(self) -> None:
        self.compose("down", "--volumes", "--remove-orphans", "--timeout", "5", timeout=300, check=False)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):  # a redirect is an answer to check, not to follow
        return None
