"""Our run's events → OpenAI's response objects and stream chunks.

The events are the websocket's (``started``, ``token``, ``done``; docs/websocket-api.md), so the
API answers with exactly what that run streamed: ``logprob`` is the natural log of the token's
``raw_prob`` (the model's own distribution, before any sampling stage), ``top_logprobs`` the
alternatives' likewise. Our extra truth goes under one extension key, ``playground``: per choice
(per chunk, when streaming) the tokens' traces (raw and final probability, ``removed_by``, the
stage counts, the draw, the alternatives), and on the response the saved run (``run_id``,
``permalink``, ``delete_token``), the seed and the normalized parameters.

Where OpenAI's semantics and the run's differ, OpenAI's hold:
- ``text_offset`` counts characters from the start of the prompt, echoed or not: a completion's
  first token is at the prompt's length.
- Completion mode feeds ``<|endoftext|>`` before the prompt (``inference.text``): that token is not
  the client's prompt, so ``usage.prompt_tokens`` does not count it and ``echo`` does not list it;
  the prompt's own tokens are counted, and with ``echo`` and ``logprobs`` each of them is listed.
- A chat's ``logprobs.content`` lists the message's tokens only: the end-of-sequence token
  (``<|im_end|>``) that ends a choice has no bytes in the message. ``usage.completion_tokens``
  counts every generated token, that one included (it is generated, as OpenAI counts), and the
  choice's ``playground.tokens`` traces it.
"""

from __future__ import annotations

import codecs
import math
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from playground.openai_api.translate import ApiRequest

EXTENSION = "playground"
NO_PROBABILITY = -9999.0  # the logprob of a token the model gives probability 0 (JSON has no -inf)
FINISH_REASONS = {"eos": "stop", "stop": "stop", "max_tokens": "length", "cancelled": "stop"}
TRACE_DROPPED = ("type", "request_id", "sample")
DOCUMENT_START_TOKENS = 1  # completion mode's ``<|endoftext|>`` (inference.text.DOCUMENT_START), fed before the prompt
_BYTE_ESCAPE = re.compile(r"<0x([0-9A-F]{2})>")


def logprob(probability: float) -> float:
    return math.log(probability) if probability > 0 else NO_PROBABILITY


def token_bytes(text: str) -> list[int]:
    """A token's bytes from its display text, where a byte that is no whole character shows as ``<0xNN>``."""
    out = bytearray()
    position = 0
    for match in _BYTE_ESCAPE.finditer(text):
        out += text[position : match.start()].encode("utf-8")
        out.append(int(match.group(1), 16))
        position = match.end()
    out += text[position:].encode("utf-8")
    return list(out)


@dataclass
class _Choice:
    """One sample's answer so far."""

    text_length: int = 0  # characters of output released so far (for text_offset)
    tokens: list[dict[str, Any]] = field(default_factory=list)  # the traces (extension)
    legacy: dict[str, list[Any]] = field(
        default_factory=lambda: {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    )
    content: list[dict[str, Any]] = field(default_factory=list)  # chat logprobs


def echo_logprobs(prompt_scores: dict[str, Any], top: int) -> dict[str, list[Any]]:
    """The echoed prompt's tokens in the legacy logprobs shape, from a ``prompt_scores`` event. The
    document-start token completion mode puts first is not part of the echoed text and is left out
    (nor counted in ``usage.prompt_tokens``); so every echoed token has its log-probability (given
    the tokens before it)."""
    tokens = prompt_scores["tokens"][DOCUMENT_START_TOKENS:]
    legacy: dict[str, list[Any]] = {"tokens": [], "token_logprobs": [], "top_logprobs": [], "text_offset": []}
    offset = 0
    characters = codecs.getincrementaldecoder("utf-8")()  # a token may end inside a character
    for token in tokens:
        legacy["tokens"].append(token["token"])
        legacy["token_logprobs"].append(token["logprob"])
        legacy["top_logprobs"].append({a["token"]: a["logprob"] for a in token["top"][:top]})
        legacy["text_offset"].append(offset)
        offset += len(characters.decode(bytes(token_bytes(token["token"]))))  # the prompt's characters it completes
    return legacy


def echo_only(api: ApiRequest, prompt_scores: dict[str, Any], fingerprint: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``echo`` with ``max_tokens`` 0: the prompt and its log-probabilities, nothing generated.
    Returns the whole response and the stream's chunks (before ``[DONE]``)."""
    n = int(api.job.request.loop.n)
    legacy = echo_logprobs(prompt_scores, api.logprobs or 0) if api.logprobs is not None else None
    head = {
        "id": "cmpl-" + secrets.token_hex(12),
        "object": "text_completion",
        "created": int(time.time()),
        "model": api.model,
        "system_fingerprint": fingerprint,
    }
    prompt_tokens = max(0, len(prompt_scores["tokens"]) - DOCUMENT_START_TOKENS)
    usage = {"prompt_tokens": prompt_tokens, "completion_tokens": 0, "total_tokens": prompt_tokens}
    choices = [{"index": i, "text": api.echo, "logprobs": legacy, "finish_reason": "length"} for i in range(n)]
    chunks = [head | {"choices": [choice]} | ({"usage": None} if api.include_usage else {}) for choice in choices]
    if api.include_usage:
        chunks.append(head | {"choices": [], "usage": usage})
    return head | {"choices": choices, "usage": usage, EXTENSION: {"run_id": None, "permalink": None}}, chunks


class Responder:
    """Builds one request's answer, whole or as stream chunks, from its events."""

    def __init__(
        self,
        api: ApiRequest,
        started: dict[str, Any],
        permalink: Callable[[str], str],
        end_ids: frozenset[int],
        prompt_scores: dict[str, Any] | None = None,
    ) -> None:
        """``end_ids``: the model's end-of-sequence token ids (a chat's logprobs leave out the one
        that ends a choice)."""
        self.api = api
        self.echoed = None if prompt_scores is None else echo_logprobs(prompt_scores, api.logprobs or 0)
        self.chat = api.kind == "chat"
        self.id = ("chatcmpl-" if self.chat else "cmpl-") + secrets.token_hex(12)
        self.created = int(time.time())
        self.fingerprint = started["model"]["manifest_sha256"]
        self.started = started
        self.permalink = permalink
        self.choices = [_Choice() for _ in range(int(started["params"]["n"]))]
        self._run_pending = False  # the run's extension still to be sent on a stream's next chunk
        # a token ending its choice is not content (it ends the sample unless ignore_eos, docs/websocket-api.md)
        self._ending_ids = frozenset() if api.job.request.loop.ignore_eos else end_ids
        prefix = 0 if self.chat else len(api.job.request.prompt)  # text_offset counts from the prompt's start
        for choice in self.choices:
            choice.text_length = prefix
            if self.echoed is not None:
                choice.legacy = {key: list(values) for key, values in self.echoed.items()}

    # -- the parts both shapes share

    def _head(self, object_name: str) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": object_name,
            "created": self.created,
            "model": self.api.model,
            "system_fingerprint": self.fingerprint,
        }

    def run_extension(self, done: dict[str, Any] | None = None) -> dict[str, Any]:
        """The response's ``playground`` object: the saved run, the seed, the parameters used."""
        source = done if done is not None else self.started
        run_id = source.get("run_id")
        extension: dict[str, Any] = {
            "run_id": run_id,
            "permalink": self.permalink(run_id) if run_id else None,
            "seed": self.started["seed"],
            "params": self.started["params"],
            "prompt_tokens": self.started["prompt_tokens"],
        }
        if source.get("delete_token"):
            extension["delete_token"] = source["delete_token"]
        if done is not None:
            extension["timing"] = done.get("timing")
            if done.get("speculative") is not None:  # a speculative run's totals (done.speculative)
                extension["speculative"] = done["speculative"]
            if done.get("save_error"):
                extension["save_error"] = done["save_error"]
        return extension

    def _observe(self, event: dict[str, Any]) -> tuple[_Choice, dict[str, Any] | None, dict[str, Any] | None, dict[str, Any]]:
        """Takes one ``token`` event in; returns its choice, its logprobs entries (the legacy shape's;
        chat's, None for the token that ends the choice) and its trace."""
        choice = self.choices[event["sample"]]
        trace = {k: v for k, v in event.items() if k not in TRACE_DROPPED}
        choice.tokens.append(trace)
        top = self.api.logprobs or 0
        alternatives = event.get("alternatives", [])[:top]
        legacy = {
            "tokens": [event["token"]],
            "token_logprobs": [logprob(event["raw_prob"])],
            "top_logprobs": [{a["token"]: logprob(a["raw_prob"]) for a in alternatives}],
            "text_offset": [choice.text_length],
        }
        content: dict[str, Any] | None = {
            "token": event["token"],
            "logprob": logprob(event["raw_prob"]),
            "bytes": token_bytes(event["token"]),
            "top_logprobs": [
                {"token": a["token"], "logprob": logprob(a["raw_prob"]), "bytes": token_bytes(a["token"])} for a in alternatives
            ],
        }
        if self.chat and event["id"] in self._ending_ids:
            content = None  # the end of the message is no part of it
        choice.text_length += len(event["text"])
        if self.api.logprobs is None:
            return choice, None, content, trace
        return choice, legacy, content, trace

    def usage(self, done: dict[str, Any]) -> dict[str, int]:
        usage = done.get("usage", {})
        prompt = max(0, int(usage.get("prompt_tokens", 0)) - (0 if self.chat else DOCUMENT_START_TOKENS))
        completion = int(usage.get("total_completion_tokens", usage.get("completion_tokens", 0)))
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    # -- a whole answer

    def observe(self, event: dict[str, Any]) -> None:
        choice, legacy, content, _ = self._observe(event)
        if legacy is not None:
            for key, values in legacy.items():
                choice.legacy[key] += values
            if content is not None:
                choice.content.append(content)

    def complete(self, done: dict[str, Any]) -> dict[str, Any]:
        choices = []
        for sample in done["samples"]:
            index = sample["sample"]
            choice = self.choices[index]
            extension = {"tokens": choice.tokens, "reason": sample["reason"], "stop_string": sample.get("stop_string")}
            reason = FINISH_REASONS.get(sample["reason"], "stop")
            if self.chat:
                logprobs = None if self.api.logprobs is None else {"content": choice.content, "refusal": None}
                message = {"role": "assistant", "content": sample["text"], "refusal": None}
                choices.append(
                    {"index": index, "message": message, "logprobs": logprobs, "finish_reason": reason, EXTENSION: extension}
                )
            else:
                text = (self.api.echo or "") + sample["text"]
                logprobs = None if self.api.logprobs is None else choice.legacy
                choices.append(
                    {"index": index, "text": text, "logprobs": logprobs, "finish_reason": reason, EXTENSION: extension}
                )
        object_name = "chat.completion" if self.chat else "text_completion"
        return self._head(object_name) | {"choices": choices, "usage": self.usage(done), EXTENSION: self.run_extension(done)}

    # -- a stream

    def _chunk(self, choices: list[dict[str, Any]]) -> dict[str, Any]:
        chunk = self._head("chat.completion.chunk" if self.chat else "text_completion") | {"choices": choices}
        if self.api.include_usage:
            chunk["usage"] = None
        return chunk

    def _choice_chunk(
        self, index: int, piece: str, finish: str | None, logprobs: Any, extension: dict[str, Any]
    ) -> dict[str, Any]:
        if self.chat:
            delta = {"content": piece} if piece or finish is None else {}
            body = {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
        else:
            body = {"index": index, "text": piece, "logprobs": logprobs, "finish_reason": finish}
        return body | {EXTENSION: extension}

    def opening_chunks(self) -> list[dict[str, Any]]:
        """Chat: each choice's first chunk names the assistant's role; completions with echo: the
        prompt's text first. The first chunk carries the saved run's id and permalink."""
        chunks = []
        for index in range(len(self.choices)):
            if self.chat:
                delta = {"role": "assistant", "content": ""}
                body = {"index": index, "delta": delta, "logprobs": None, "finish_reason": None}
            elif self.api.echo:
                body = {"index": index, "text": self.api.echo, "logprobs": self.echoed, "finish_reason": None}
            else:
                continue
            chunks.append(self._chunk([body]))
        if chunks:
            chunks[0][EXTENSION] = self.run_extension()
        else:
            self._run_pending = True  # the first token's chunk carries it
        return chunks

    def token_chunk(self, event: dict[str, Any]) -> dict[str, Any]:
        choice, legacy, content, trace = self._observe(event)
        logprobs: Any = None
        if self.api.logprobs is not None:
            logprobs = {"content": [] if content is None else [content], "refusal": None} if self.chat else legacy
        chunk = self._chunk([self._choice_chunk(event["sample"], event["text"], None, logprobs, {"tokens": [trace]})])
        if self._run_pending:
            self._run_pending = False
            chunk[EXTENSION] = self.run_extension()
        return chunk

    def closing_chunks(self, done: dict[str, Any]) -> list[dict[str, Any]]:
        """Each choice's last chunk (its held-back tail and finish_reason), then the usage chunk."""
        chunks = []
        for sample in done["samples"]:
            extension = {"reason": sample["reason"], "stop_string": sample.get("stop_string")}
            finish = FINISH_REASONS.get(sample["reason"], "stop")
            chunks.append(self._chunk([self._choice_chunk(sample["sample"], sample.get("tail", ""), finish, None, extension)]))
        if chunks:
            chunks[-1][EXTENSION] = self.run_extension(done)
        if self.api.include_usage:
            chunks.append(
                self._head(chunks[0]["object"] if chunks else "text_completion") | {"choices": [], "usage": self.usage(done)}
            )
        return chunks
