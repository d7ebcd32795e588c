"""The playground's address format, written by the server: a run's settings in the page's query string.

The page keeps its settings in its address (static/shared/js/address.js); "Open in the
playground" links from a saved run write the same format here. Both codecs read the same
parameter facts (``playground.edge.param_facts``) and are tested on one table of cases
(tests/playground/runs/address_cases.json), down to the byte: values are written as JavaScript writes
them (``String(0.5)``, ``JSON.stringify``) and the query as ``URLSearchParams`` serializes it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl

from inference.chat_template import ROLES as TURN_ROLES
from inference.model_catalog import DEFAULT_MODELS
from playground.edge.param_facts import params_schema

#: The request's own settings, before the parameters: chat mode's earlier turns (``turns``, JSON
#: ``[[role, content], …]``) and the answer's start to continue (``assistant_prefix``) among them;
#: ``watch`` is the page's watched tokens (JSON ``[[id, text or null], …]``; a saved run has none),
#: ``model`` the served model's id (written only for a model other than the default), and
#: ``speculative`` speculative decoding (JSON ``{"draft", "k"}``, ``"switch_off": false`` only when set: a key of ``params`` that the
#: parameter facts do not list, being neither the sampler chain's nor the loop's).
REQUEST_KEYS = ("prompt", "mode", "system", "turns", "assistant_prefix", "top_n", "no_cache", "watch", "model", "speculative")

# Bytes application/x-www-form-urlencoded leaves as they are (the URL standard's serializer).
_PLAIN = frozenset(b"*-._0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def address_keys() -> tuple[str, ...]:
    """Every key the address may hold, in the order it is written."""
    return (*REQUEST_KEYS, *params_schema()["properties"])


def encode_line(text: str) -> str:
    """One entry of a line-per-entry control: backslash, newline and tab written as escapes."""
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t")


def js_number(value: int | float) -> str:
    """A number as JavaScript's ``String(n)`` writes it: ``1`` for 1.0, ``1e-7``, ``1e+21``."""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    # repr has the shortest digits that read back as this double, as JavaScript picks them
    _, digit_tuple, exponent = Decimal(repr(abs(value))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    n = exponent + len(digits)  # value = 0.digits × 10^n
    k = len(digits)
    if k <= n <= 21:
        text = digits + "0" * (n - k)
    elif 0 < n <= 21:
        text = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        text = "0." + "0" * -n + digits
    else:
        e = n - 1
        text = digits[0] + ("." + digits[1:] if k > 1 else "") + "e" + ("+" if e >= 0 else "-") + str(abs(e))
    return sign + text


def _json(value: Any) -> str:
    """JSON as ``JSON.stringify`` writes it: no spaces, numbers as JavaScript writes them."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (int, float)):
        return js_number(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_json(str(k))}:{_json(v)}" for k, v in value.items()) + "}"
    return "[" + ",".join(_json(item) for item in value) + "]"


def param_text(key: str, value: Any) -> str:
    """A parameter's value as the page's control shows it (and the address's value)."""
    kind = params_schema()["properties"][key]["x-kind"]
    if value is None:
        return ""
    if kind == "boolean":
        return "1" if value else ""
    if kind == "strings":
        return "\n".join(encode_line(item) for item in ([value] if isinstance(value, str) else value))
    if kind == "stage_order":
        return ",".join(value)
    if kind == "grammar":
        return _json(value)
    if kind == "token_bias":
        # a {token id: bias} mapping by id (a JavaScript object orders such keys so); editor entries as they are
        entries = value if isinstance(value, list) else sorted([int(token), bias] for token, bias in value.items())
        return _json(entries) if entries else ""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return js_number(value)
    return str(value)


def speculative_text(value: Mapping[str, Any] | None) -> str:
    """``params.speculative`` as the address holds it: JSON ``{"draft", "k"}`` as ``JSON.stringify``
    writes it, with ``"switch_off": false`` only when the run keeps drafting whatever it costs;
    off (null): ""."""
    if not value:
        return ""
    kept = {} if value.get("switch_off", True) else {"switch_off": False}
    return _json({"draft": value["draft"], "k": value["k"], **kept})


def turns_text(turns: list[Mapping[str, str]]) -> str:
    """Chat turns (``[{role, content}, …]``) as the address holds them: JSON ``[[role, content], …]``
    as ``JSON.stringify`` writes it; no turns: ""."""
    return _json([[turn["role"], turn["content"]] for turn in turns]) if turns else ""


def turns_value(text: str) -> list[dict[str, str]]:
    """The address's ``turns`` text back to ``[{role, content}, …]``; malformed entries are left
    out (an address is typed by people), malformed text gives none."""
    try:
        parsed = json.loads(text or "[]")
    except ValueError:
        return []
    if not isinstance(parsed, list):
        return []
    return [
        {"role": entry[0], "content": entry[1]}
        for entry in parsed
        if isinstance(entry, list) and len(entry) == 2 and entry[0] in TURN_ROLES and isinstance(entry[1], str)
    ]


def _usv(text: str) -> str:
    """The text as a URL holds it: a lone surrogate becomes U+FFFD, as in a browser."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _form_encode(text: str) -> str:
    return "".join(chr(b) if b in _PLAIN else "+" if b == 0x20 else f"%{b:02X}" for b in _usv(text).encode("utf-8"))


def encode_address(texts: Mapping[str, str]) -> str:
    """The query string for ``texts`` ({key: text}): known keys only, in the address order."""
    return "&".join(f"{_form_encode(key)}={_form_encode(texts[key])}" for key in address_keys() if key in texts)


def decode_address(query: str) -> dict[str, str]:
    """{key: text} from a query string (with or without its ``?``); unknown keys are ignored."""
    known = set(address_keys())
    return {key: text for key, text in parse_qsl(query.removeprefix("?"), keep_blank_values=True) if key in known}


def run_texts(request: Mapping[str, Any], params: Mapping[str, Any]) -> dict[str, str]:
    """A run's settings as the page's control texts: its prompt, mode, system (when it had one),
    a conversation's earlier ``turns`` and ``assistant_prefix`` (when given and not empty), top_n,
    no_cache, ``speculative`` (when on), and every parameter whose control would not already show it on a fresh page (a
    parameter is left out only when its text is empty, like its default's)."""
    texts: dict[str, str] = {"prompt": request["prompt"], "mode": request["mode"], "top_n": str(request["top_n"])}
    if request.get("system") is not None:
        texts["system"] = request["system"]
    if request.get("turns"):
        texts["turns"] = turns_text(request["turns"])
    if request.get("assistant_prefix"):
        texts["assistant_prefix"] = request["assistant_prefix"]
    if not request.get("use_cache", True):
        texts["no_cache"] = "1"
    if request.get("model") and request["model"] != DEFAULT_MODELS[0]:
        texts["model"] = request["model"]
    if params.get("speculative"):
        texts["speculative"] = speculative_text(params["speculative"])
    properties = params_schema()["properties"]
    for key in (key for key in params if key in properties):
        text = param_text(key, params[key])
        if text or param_text(key, properties[key]["default"]):
            texts[key] = text
    return texts
