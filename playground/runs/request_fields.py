"""What a run's recorder keeps from its request beside its events (``started`` has only the prompt's
tokens): the adapter from a typed ``generate`` job (``playground.wire.jobs.Generate``) to the
``request_data`` a ``RunRecorder`` saves."""

from __future__ import annotations

from typing import Any

from playground.wire.jobs import Generate


def record_fields(job: Generate) -> dict[str, Any]:
    """The prompt and system text or the chat conversation, the forced prefix (and how much of it was
    typed), the watched tokens, the branch it labels and whether to save it."""
    request = job.request
    return {
        "prompt": request.prompt,
        "mode": request.mode,
        "system": request.system,
        "prefix_tokens": list(request.prefix_tokens),
        "watch": list(request.watch),
        "parent_run": None if job.branch is None else job.branch.parent_run,
        "branch_index": None if job.branch is None else job.branch.branch_index,
        "typed_tokens": job.typed_tokens,
        "messages": None if request.chat is None else request.chat.to_list(),
        "continue_final_message": request.chat is not None and request.chat.continue_final_message,
        "save": job.save,
    }
