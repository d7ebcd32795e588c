"""The worker's ping ``load`` (``InferenceWorker.load``): a generation whose last event (``done`` or
``error``) is on its way is no longer counted, so a page that has its ``done`` and asks for the load
at once does not see its own finished run as waiting (issue 30: "1 waiting" after Done)."""

from __future__ import annotations

import json

from playground.edge import frames
from playground.worker.consumer import InferenceWorker
from playground.worker.serving import Assignment


def test_a_job_whose_last_event_is_on_its_way_is_not_counted() -> None:
    worker = InferenceWorker()
    command = frames.parse_client_frame(json.dumps({"type": "generate", "request_id": "r", "prompt": "hi"}))
    held = [Assignment(f"r{i}", "reply", command, quick=False) for i in range(3)]
    for job in held:
        worker.jobs[job.key] = job
    counted = lambda: worker.load()["running"] + worker.load()["waiting"]  # noqa: E731
    assert counted() == 3
    held[0].answered = True  # its done is being sent; the job itself is let go after its last send
    assert counted() == 2
