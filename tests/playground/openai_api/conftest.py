"""Real daphne servers for the OpenAI-compatible API, driven by clients nobody here wrote.

``api_server``: the dev settings with the real built model and the embedded worker, as
``daphne playground.asgi:application`` serves it. ``locked_server``: no worker at all, API keys
required, one allowed CORS origin and a client rate of one request then a long wait: where 401,
429, 503 and CORS are checked without loading a model.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from inference.model_catalog import configured_models
from inference.model_dir import MANIFEST_FILE, default_model_dir
from tests.servers import Daphne, running_daphne

ALLOWED_ORIGIN = "http://course.example:8080"


@pytest.fixture(scope="session")
def model_id() -> str:
    """The default model's id, as ``/v1/models`` lists it first (its manifest's model_name,
    ``SmolLM2-135M-Instruct``, names it too)."""
    return configured_models()[0]


@pytest.fixture(scope="session")
def api_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daphne]:
    if not (default_model_dir() / MANIFEST_FILE).is_file():
        pytest.fail(f"no built model in {default_model_dir()}: run `python -m inference.modelbuild`")
    with running_daphne(tmp_path_factory.mktemp("openai-api")) as server:
        yield server


@pytest.fixture(scope="session")
def locked_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daphne]:
    with running_daphne(
        tmp_path_factory.mktemp("openai-api-locked"),
        PLAYGROUND_EMBEDDED_WORKER="0",
        PLAYGROUND_WORKER_ACK_TIMEOUT="1",
        PLAYGROUND_API_KEYS_REQUIRED="1",
        PLAYGROUND_API_CORS_ORIGINS=ALLOWED_ORIGIN,
        PLAYGROUND_CLIENT_BURST="1",
        PLAYGROUND_CLIENT_REQUESTS_PER_SECOND="0.01",
    ) as server:
        yield server
