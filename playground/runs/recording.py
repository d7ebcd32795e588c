"""Records one request's events on the decode thread and saves the run when it ends.

The worker hands every event it emits to a ``RunRecorder``. When the run finishes (``done``, any
reason) or fails after it started, the recorder saves it in one transaction and adds ``run_id``
and ``delete_token`` to the ``done`` event before it goes out. Saving never breaks streaming: a
database error is logged and the ``done`` event carries ``save_error`` instead.

Each run has one record, written by whoever ends the request first: the worker (finished,
cancelled, failed), or a connection's watchdog that relays the run and saves it as failed when its
worker is lost (``playground.edge.watchdog``, the same run id). Every ending goes through ``_save``,
which inserts the run only if no record of that id exists: a second ending, from the same recorder
or another, is a no-op that answers with the run that stands, never an integrity error.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, connections, reset_queries, router, transaction

from playground.runs import prompt_surprisal
from playground.runs.conversation import shown_prompt
from playground.runs.errors import UnencodableText
from playground.runs.fields import RESULT, RUN
from playground.runs.ids import hash_delete_token, new_delete_token, new_run_id
from playground.runs.models import Run
from playground.runs.token_rows import sample_text, stored_row_from_event

log = logging.getLogger(__name__)


class RunRecorder:
    def __init__(self, request_id: str, request_data: dict[str, Any]) -> None:
        self.request_id = request_id
        # ``frames.record_fields`` of the typed job: the prompt and system text, or the chat
        # messages and continue_final_message (``started`` has only the prompt's tokens)
        self.request_data = request_data
        self.started: dict[str, Any] | None = None
        self.tokens: list[list[Any]] = []
        self.beam_steps: list[dict[str, Any]] = []
        self.verifications: list[dict[str, Any]] = []  # a speculative run's verification events
        self.prompt_surprisal_pages: list[dict[str, Any]] = []
        self.broken: Exception | None = None  # set when an event could not be recorded
        # Known from the start, so the client holds the permalink even if it never sees ``done``.
        self.run_id = new_run_id()
        self.delete_token = new_delete_token()
        self.save = request_data.get("save", True)  # false: the request asked not to be saved

    def observe(self, event: dict[str, Any]) -> dict[str, Any]:
        """Keeps what a ``started``, ``token`` or ``beam_step`` event says about the run; returns
        the event to emit (``started`` gains the run's future ``run_id`` and its ``delete_token``)."""
        try:
            kind = event["type"]
            if kind == "started" and not self.save:
                self.started = event
            elif kind == "started":
                event = event | {"run_id": self.run_id, "delete_token": self.delete_token}
                self.started = event
            elif kind == "token":
                self.tokens.append(stored_row_from_event(event))
            elif kind == "prompt_surprisal":
                self.prompt_surprisal_pages.append(event)
            elif kind == "beam_step":
                self.beam_steps.append({k: v for k, v in event.items() if k not in ("type", "request_id")})
            elif kind == "verification":
                self.verifications.append({k: v for k, v in event.items() if k not in ("type", "request_id")})
        except Exception as error:  # noqa: BLE001 — recording must never stop the stream
            log.exception("could not record a %s event of request %s", event.get("type"), self.request_id)
            self.broken = self.broken or error
        return event

    def finish(self, done: dict[str, Any]) -> dict[str, Any]:
        """Saves the finished run; returns the ``done`` event to emit, with ``run_id`` or ``save_error``."""
        if not self.save:
            return done | {"run_id": None}
        status = Run.Status.CANCELLED if done["reason"] == "cancelled" else Run.Status.COMPLETE
        # ``done`` carries the export's result keys; those it leaves out are empty
        result = RESULT.empty() | {key: done[key] for key in RESULT.keys if key in done} | {"error": None}
        try:
            run_id, delete_token = self._save(status, result, done.get("speculative"))
        except UnencodableText as error:  # the text itself, not the server: no traceback
            log.warning("run of request %s not saved: %s", self.request_id, error)
            return done | {"run_id": None, "save_error": f"the run could not be saved: UnencodableText: {error}"[:300]}
        except Exception as error:  # noqa: BLE001 — the stream must end normally whatever the database does
            log.exception("could not save run of request %s", self.request_id)
            return done | {"run_id": None, "save_error": f"the run could not be saved: {type(error).__name__}: {error}"[:300]}
        return done | {"run_id": run_id, "delete_token": delete_token}

    def fail(self, error_event: dict[str, Any]) -> str | None:
        """Saves a run that failed after it started, with what it generated; returns its id."""
        if self.started is None or not self.save:
            return None
        result = RESULT.empty() | {"text": sample_text(self.tokens), "error": error_event.get("error")}
        try:
            return self._save(Run.Status.FAILED, result)[0]
        except UnencodableText as error:
            log.warning("failed run of request %s not saved: %s", self.request_id, error)
            return None
        except Exception:  # noqa: BLE001
            log.exception("could not save failed run of request %s", self.request_id)
            return None

    def _save(self, status: str, result: dict[str, Any], totals: dict[str, Any] | None = None) -> tuple[str, str]:
        """``totals``: ``done.speculative`` (none when the run failed)."""
        if self.broken is not None:
            raise RuntimeError(f"an event could not be recorded: {self.broken}") from self.broken
        if self.started is None:
            raise RuntimeError("the run never started")
        started = self.started
        messages = self.request_data.get("messages")  # a chat conversation, as the typed job gave it
        record = {  # in the export's shape (playground.runs.fields)
            "id": self.run_id,
            "status": status,
            "source": Run.Source.LIVE,
            "request": {
                "prompt": shown_prompt(messages) if messages else self.request_data["prompt"],
                "mode": started["mode"],
                "system": None if messages else self.request_data.get("system"),
                "messages": messages or None,
                "continue_final_message": bool(messages) and self.request_data.get("continue_final_message", False),
                "params": started["params"],
                "seed": started["seed"],
                "top_n": started["top_n"],
                "use_cache": started.get("use_cache", True),
                "prefix_tokens": self.request_data.get("prefix_tokens", []),
                "watch": self.request_data.get("watch", []),
                "typed_tokens": self.request_data.get("typed_tokens", 0),
            },
            "prompt_tokens": started["prompt_tokens"],
            "prompt_surprisal": prompt_surprisal.from_pages(self.prompt_surprisal_pages),
            "model": started["model"],  # the export's model keys
            "result": result,  # the done event's keys, the export's result
            "beam_steps": self.beam_steps,
            "speculative": (
                {"totals": totals, "verifications": self.verifications} if started["params"].get("speculative") else None
            ),
        }
        delete_token = self.delete_token
        run = Run(**RUN.columns(record), tokens=self.tokens, delete_token_hash=hash_delete_token(delete_token))
        db = router.db_for_write(Run)
        _drop_if_stale(db)  # the decode thread is long-lived: its connection may have gone stale
        try:
            if self._saved_already(db, status):
                return run.id, delete_token
            try:
                with transaction.atomic(using=db):
                    parent_id = self.request_data.get("parent_run")
                    if parent_id and Run.objects.using(db).filter(pk=parent_id).exists():
                        run.parent_id = parent_id  # a branch of a run that is (still) saved
                        run.branch_index = self.request_data.get("branch_index")
                    run.save(force_insert=True, using=db)
            except IntegrityError:
                if not self._saved_already(db, status):  # (another ending won the race): else a real fault
                    raise
        finally:
            _drop_if_stale(db)
        return run.id, delete_token

    def _saved_already(self, db: str, status: str) -> bool:
        """Whether the run has its record already (an earlier ending's, which stands)."""
        saved = Run.objects.using(db).filter(pk=self.run_id).values_list("status", flat=True).first()
        if saved is None:
            return False
        log.info(
            "run %s of request %s was saved already as %s; ending it as %s changes nothing",
            self.run_id,
            self.request_id,
            saved,
            status,
        )
        return True


def _drop_if_stale(db: str) -> None:
    """Closes this thread's connection if it is broken or past CONN_MAX_AGE, and empties its debug
    query log (as Django does around each request: the decode thread serves none, so with DEBUG
    on, as in the dev settings, it kept its last 9,000 queries, each run's INSERT with all its
    tokens: the server's memory grew by tens of kB a run); the connection is never closed inside a
    transaction."""
    connection = connections[db]
    reset_queries()
    if not connection.in_atomic_block:
        connection.close_if_unusable_or_obsolete()
