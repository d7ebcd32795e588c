"""Worker liveness, the protocol both sides keep: heartbeats from the workers
(``playground.worker.heartbeat``), a watchdog in each front door (``playground.edge.watchdog``).

A request travels to a worker over the channel layer, and nothing there says when that worker
dies: a ``runworker`` killed mid-stream simply stops talking. So, on top of the five messages
described in ``playground.wire.channel_messages``:

- every request a connection sends carries a fresh ``lease`` token; the worker repeats it on every
  message about that request (``inference.queued``, ``inference.event``, ``inference.finished``);
- while a worker holds requests (queued or running) it sends each of their connections an
  ``inference.heartbeat`` every ``HEARTBEAT_SECONDS``: its ``worker_channel`` and the
  ``[request_id, lease]`` pairs it holds for that connection;
- each connection's ``Watchdog`` renews a request's lease on every message from its worker. A
  request a worker acknowledged and started but has not mentioned for ``LEASE_SECONDS`` ends with
  an ``error`` of code ``worker_lost``; a request no worker acknowledged within ``ACK_TIMEOUT_SECONDS`` ends
  with ``no_worker``, unless a worker answers a ping to the workers' group (then every worker is
  full, and the request waits in the channel for room, checked again after as long). Either way the error reaches the client as if a worker had sent it, so the
  request id is free again; a worker that is alive after all is told to cancel, and whatever it
  still sends under the old lease is dropped, even when the client reuses the id;
- a request its worker took but never started (it waited in that worker's backlog) is not failed
  when the worker is lost: it goes back to the shared channel under a new lease, same request id,
  and another worker serves it;
- a run that had started is saved as failed with the tokens the client saw, under the run id its
  ``started`` announced: the connection relays every event, so it records them with the same
  ``RunRecorder`` the worker uses.

The settings live in ``settings.WORKER_LIVENESS``; ``README.md`` (Scale-out) explains them.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings


@dataclass(frozen=True)
class Timing:
    """How often workers beat, and how long a connection waits before it gives a request up."""

    heartbeat_seconds: float  # a worker holding requests beats this often
    lease_seconds: float  # an acknowledged request whose worker is silent this long is lost
    ack_timeout_seconds: float  # a request no worker acknowledged within this is refused

    def __post_init__(self) -> None:
        if not self.heartbeat_seconds > 0:
            raise ValueError(f"WORKER_LIVENESS HEARTBEAT_SECONDS must be above 0, got {self.heartbeat_seconds}")
        if not self.lease_seconds >= 2 * self.heartbeat_seconds:
            raise ValueError(
                f"WORKER_LIVENESS LEASE_SECONDS ({self.lease_seconds}) must be at least twice HEARTBEAT_SECONDS "
                f"({self.heartbeat_seconds}): one late heartbeat must not lose a request"
            )
        if not self.ack_timeout_seconds > 0:
            raise ValueError(f"WORKER_LIVENESS ACK_TIMEOUT_SECONDS must be above 0, got {self.ack_timeout_seconds}")

    @property
    def watch_interval(self) -> float:
        """How often a watchdog looks at its leases: a lost worker is noticed within
        ``lease_seconds + watch_interval`` of its last word."""
        return self.lease_seconds / 10

    @classmethod
    def from_settings(cls) -> Timing:
        config = settings.WORKER_LIVENESS
        return cls(float(config["HEARTBEAT_SECONDS"]), float(config["LEASE_SECONDS"]), float(config["ACK_TIMEOUT_SECONDS"]))
