"""Every file the Dockerfile copies from the build context is let into it by .dockerignore (which
keeps everything out but what it names): a COPY of a path it leaves out fails only in a real build,
minutes in."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COPY = re.compile(r"^COPY\s+(?!--from)(.+?)\s+\S+\s*$")


def context_sources() -> list[str]:
    """The sources of the Dockerfile's COPY lines that read the build context (not another stage)."""
    sources = []
    for line in (REPO / "docker" / "Dockerfile").read_text().splitlines():
        if match := COPY.match(line.strip()):
            sources += match.group(1).split()
    return sources


def let_in(path: str) -> bool:
    """Whether .dockerignore's exceptions (``!path``) let ``path`` into the context."""
    allowed = [line[1:].rstrip("/") for line in (REPO / ".dockerignore").read_text().splitlines() if line.startswith("!")]
    path = path.rstrip("/")
    return any(path == a or path.startswith(a + "/") for a in allowed)


def test_the_dockerfile_copies_only_what_the_build_context_holds():
    sources = context_sources()
    assert "pyproject.toml" in sources and "scripts/onnxruntime-provider" in sources  # the parse finds them
    missing = [s for s in sources if not let_in(s)]
    assert not missing, f".dockerignore leaves out what the Dockerfile copies: {missing}"
    for source in sources:
        assert (REPO / source).exists(), source


def test_a_path_left_out_is_seen():
    assert not let_in("scripts/env.sh") and not let_in("tests/conftest.py") and let_in("inference/models/known.py")
