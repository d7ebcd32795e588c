"""A saved run's prompt surprisal (``inference.decoding.surprisal``, docs/websocket-api.md's
``prompt_surprisal`` events): gathered from the event pages by the recorder, stored and exported in
one shape, and checked on import. An optional part of a run: null when the run did not ask for it
(and in every file written before it existed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from playground.runs.checks import a_list, a_number, a_prob, a_str, an_int, an_object, objects, optional
from playground.runs.errors import SchemaError

KEYS = ("count", "perplexity", "total_bits", "tokens")
TOKEN_KEYS = ("id", "token", "prob", "logprob", "rank", "entropy", "alternatives")
ALTERNATIVE_KEYS = ("id", "token", "prob")
MAX_ALTERNATIVES = 20  # a generate's top_n at most


def from_pages(pages: Sequence[dict[str, Any]]) -> dict[str, Any] | None:
    """The events' pages (in order) as one record; None when there were none or some are missing."""
    if not pages:
        return None
    tokens = [token for page in pages for token in page["tokens"]]
    first = pages[0]
    if len(tokens) != first["count"]:
        return None
    return {"count": first["count"], "perplexity": first["perplexity"], "total_bits": first["total_bits"], "tokens": tokens}


def check(value: Any, path: str) -> dict[str, Any]:
    """The import's check of the record on its own (``schema`` ties it to the prompt's tokens)."""
    an_object(value, path, KEYS)
    optional(a_number)(value["perplexity"], f"{path}.perplexity")
    a_number(value["total_bits"], f"{path}.total_bits")
    tokens = a_list(value["tokens"], f"{path}.tokens", 1)
    if an_int(value["count"], f"{path}.count", 1) != len(tokens):
        raise SchemaError(f"{path}.count", f"must be the number of tokens ({len(tokens)})")
    for i, (token, p) in enumerate(objects(tokens, f"{path}.tokens", TOKEN_KEYS)):
        an_int(token["id"], f"{p}.id")
        a_str(token["token"], f"{p}.token")
        scored = i > 0  # the first token has no prediction: nothing comes before it
        for key, check_value in (("prob", a_prob), ("logprob", lambda v, q: a_number(v, q, None)), ("rank", an_int)):
            if scored:
                check_value(token[key], f"{p}.{key}")
            elif token[key] is not None:
                raise SchemaError(f"{p}.{key}", "must be null for the first token")
        optional(a_number)(token["entropy"], f"{p}.entropy")
        for alternative, q in objects(token["alternatives"], f"{p}.alternatives", ALTERNATIVE_KEYS, 0, MAX_ALTERNATIVES):
            an_int(alternative["id"], f"{q}.id")
            a_str(alternative["token"], f"{q}.token")
            a_prob(alternative["prob"], f"{q}.prob")
    return value


def check_against_prompt(value: dict[str, Any] | None, prompt_tokens: list[dict[str, Any]], path: str) -> None:
    """Its tokens must be the prompt's own, in order."""
    if value is not None and [t["id"] for t in value["tokens"]] != [t["id"] for t in prompt_tokens]:
        raise SchemaError(f"{path}.tokens", "must be the prompt's tokens (prompt_tokens), in order")
