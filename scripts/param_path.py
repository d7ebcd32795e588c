"""How far one request parameter travels: ``temperature`` from a client's request to its sampler stage.

    .venv/bin/python scripts/param_path.py [--show] [--carried]

Two paths, each traced with ``sys.setprofile`` from the front door's parser to the built stage:

- websocket: a ``generate`` frame's text → ``playground.edge.frames.parse_client_frame`` → the
  channel-layer message (``channel_messages.request``, through JSON as the layer carries it) →
  the worker's ``job_from_dict`` → the program the scheduler makes (``new_program``) → its sampler
  chain's ``Temperature`` stage;
- HTTP: a ``/v1/chat/completions`` body → ``playground.openai_api.translate.translate`` → the same.

Every moment the value is checked (a ``Field.check`` of ``temperature``), written for the wire
(``Field.dump``) or handed to its stage (``Temperature.__init__``) is a *touch*; the call stack
under each touch, down to the front door's entry, is the value's path there. **Hops** are the
distinct repository functions on those paths (a function on several paths counts once; a
comprehension's frame is its function's, as Python 3.12 inlines it), **files**
the distinct files they are in, **checks** the touches that check it, by process side (before the
channel layer: the front door; after it: the worker). ``--show`` lists the functions.
A plain field such as ``temperature`` is written for the wire and read back with all the sampler
settings at once (``SamplingParams.to_dict`` / ``from_json``), with no touch of its own;
``--carried`` counts those whole-settings writes and reads as touches too, so the path through the
channel layer's message is counted as well. Needs the
tiny test model (``.models/tiny-*``, built by the test suite's ``tiny_runtime`` fixture).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "playground.settings.test")
os.environ.setdefault("PLAYGROUND_TEST_DB", "/tmp/param-path.sqlite3")

import django  # noqa: E402

django.setup()

from django.conf import settings  # noqa: E402

from inference.decoding.generation import new_program  # noqa: E402
from inference.modelbuild import default_tiny_dir  # noqa: E402
from inference.runtime import CPU, load_runtime  # noqa: E402
from playground.edge import frames  # noqa: E402
from playground.openai_api.translate import translate  # noqa: E402
from playground.wire import channel_messages  # noqa: E402

PACKAGES = (str(ROOT / "inference"), str(ROOT / "playground"))
VALUE = 0.7
CARRIERS = ("SamplingParams.to_dict", "SamplingParams.from_json", "SamplingParams.from_dict")  # --carried


class Tracer:
    """Records the repository call stack under every touch of ``temperature``."""

    def __init__(self, carried: bool = False) -> None:
        self.carried = carried
        self.paths: list[tuple[str, tuple[str, ...]]] = []  # (side: edge | worker, functions)
        self.side = "edge"
        self.checks = {"edge": 0, "worker": 0}

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        touch = None
        if code.co_name in ("check", "dump") and frame.f_locals.get("self") is not None:
            owner = frame.f_locals["self"]
            if getattr(owner, "name", None) == "temperature" and code.co_filename.endswith("fields.py"):
                touch = code.co_name
        elif self.carried and code.co_qualname in CARRIERS and code.co_filename.endswith("params.py"):
            touch = "carry"
        elif code.co_name == "__init__" and type(frame.f_locals.get("self")).__name__ == "Temperature":
            touch = "stage"
        if touch is None:
            return
        if touch == "check":
            self.checks[self.side] += 1
        stack = []
        walk: FrameType | None = frame
        while walk is not None and walk.f_code is not run_path.__code__:
            if walk.f_code.co_filename.startswith(PACKAGES) and not walk.f_code.co_name.startswith("<"):
                stack.append(f"{Path(walk.f_code.co_filename).relative_to(ROOT)}:{walk.f_code.co_qualname}")
            walk = walk.f_back
        self.paths.append((self.side, tuple(reversed(stack))))


def run_path(tracer: Tracer, front_door: Any, runtime: Any) -> None:
    """The front door's parser, the channel layer's round trip, the worker's rebuild and program."""
    job = front_door()
    carried = json.loads(json.dumps(channel_messages.request(job, "reply")))
    tracer.side = "worker"
    rebuilt = channel_messages.job_from_dict(carried["job"])
    new_program(runtime, rebuilt.request)


def trace(name: str, front_door: Any, runtime: Any, show: bool, carried: bool) -> None:
    tracer = Tracer(carried)
    sys.setprofile(tracer)
    try:
        run_path(tracer, front_door, runtime)
    finally:
        sys.setprofile(None)
    functions = list(dict.fromkeys(function for _, path in tracer.paths for function in path))
    files = {function.split(":")[0] for function in functions}
    print(
        f"{name}: {len(functions)} hops, {len(files)} files; checked {tracer.checks['edge']}x on the front door's side, "
        f"{tracer.checks['worker']}x on the worker's"
    )
    if show:
        for function in functions:
            print(f"    {function}")


def main() -> None:
    show, carried = "--show" in sys.argv, "--carried" in sys.argv
    runtime = load_runtime(default_tiny_dir(), (CPU,), intra_op_threads=1)
    model = settings.INFERENCE["MODELS"][0]
    frame = json.dumps(
        {"type": "generate", "request_id": "r-1", "prompt": "Once upon a time", "params": {"temperature": VALUE, "max_tokens": 4}}
    )
    trace("websocket generate frame", lambda: frames.parse_client_frame(frame), runtime, show, carried)
    body = {"model": model, "messages": [{"role": "user", "content": "Hi"}], "temperature": VALUE, "max_tokens": 4}
    trace("/v1/chat/completions", lambda: translate(body, "chat", [model]).job, runtime, show, carried)


if __name__ == "__main__":
    main()
