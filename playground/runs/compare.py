"""Lines 2–4 saved runs up token by token and says where and why they differ.

Only sample 0 of each run is compared. The first run is the reference: each other run's
distribution at a position is compared with the first run's there.

The divergence between two runs at a position is the **total variation distance** between their
final (sampled-with) distributions, ½ Σ |p(t) − q(t)|. Only each step's top-N alternatives are
stored, so it cannot be computed exactly: over the tokens both runs stored (the set S) the sum gives
a lower bound, and the probability mass outside S (1 − p(S) in one run, 1 − q(S) in the other)
bounds the rest, so the true value lies in [lower, lower + ½((1 − p(S)) + (1 − q(S)))]. Both ends
are reported. Before the first divergence both runs feed the model the same tokens, so their raw
distributions are identical and any difference is the sampling settings' doing; after it the
contexts differ and the two distributions are over different next steps.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from playground.runs.conversation import conversation_text
from playground.runs.fields import MODEL, REQUEST
from playground.runs.models import Run
from playground.runs.token_rows import TokenRow, sample_rows

METRIC = {
    "name": "total_variation",
    "over": "final (sampled-with) probabilities of the top-N alternatives both runs stored",
    "description": (
        "Total variation distance ½·Σ|p−q| between the runs' final distributions at a position. "
        "Only the top-N alternatives are stored, so it is given as a range: `lower` sums over the "
        "tokens both runs stored, `upper` adds the mass neither list accounts for."
    ),
}

# Settings shown in the table of differences (by their export keys, ``fields``), besides every key
# of ``params`` and the conversation.
REQUEST_KEYS = ("prompt", "mode", "system", "top_n", "use_cache")
MODEL_KEYS = ("name", "manifest_sha256", "onnxruntime_version", "execution_provider")


def compare(runs: Sequence[Run]) -> dict[str, Any]:
    columns = [sample_rows(run.tokens) for run in runs]
    length = max((len(c) for c in columns), default=0)
    same_prompt = len({tuple(map(tuple, r.prompt_tokens)) for r in runs}) == 1
    first_divergence = _first_divergence(columns) if same_prompt else 0

    positions = []
    for i in range(length):
        tokens = [c[i] if i < len(c) else None for c in columns]
        present = [t for t in tokens if t is not None]
        positions.append(
            {
                "index": i,
                "tokens": [_cell(t) for t in tokens],
                "same": len(present) == len(tokens) and len({t.id for t in present}) == 1,
                "same_context": first_divergence is None or i <= first_divergence,
                "divergence": [None] + [_tv(tokens[0], t) for t in tokens[1:]],
            }
        )

    return {
        "runs": [r.id for r in runs],
        "metric": METRIC,
        "differing": differing_settings(runs),
        "same_prompt": same_prompt,
        "same_seed": len({int(r.seed) for r in runs}) == 1,
        "first_divergence": first_divergence,
        "shared_draws": _shared_draws(columns, first_divergence),
        "note": seed_note(runs, columns, first_divergence, same_prompt),
        "positions": positions,
    }


def differing_settings(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Only the settings whose values are not the same in every run."""
    rows = []

    def add(name: str, values: list[Any]) -> None:
        if any(v != values[0] for v in values[1:]):
            rows.append({"name": name, "values": values})

    for key in REQUEST_KEYS:
        add(key, [REQUEST[key].exported(r) for r in runs])
    add("messages", [conversation_text(r.conversation()) for r in runs])
    add("continue_final_message", [r.continue_final_message for r in runs])
    params = [r.parameters() for r in runs]
    keys = sorted({k for p in params for k in p} - {"seed"})
    add("seed", [int(r.seed) for r in runs])
    for key in keys:
        add(f"params.{key}", [p.get(key) for p in params])
    for key in MODEL_KEYS:
        add(f"model.{key}", [MODEL[key].exported(r) for r in runs])
    return rows


def seed_note(runs: Sequence[Run], columns: list[list[TokenRow]], first: int | None, same_prompt: bool) -> str:
    """What a difference between these runs can honestly be blamed on."""
    if not same_prompt:
        return "The runs start from different prompt tokens, so they are not aligned on the same question."
    if len({int(r.seed) for r in runs}) > 1:
        return (
            "The runs used different seeds, so their random draws differ: a difference may come from "
            "chance as well as from the settings. Run them again with one seed to tell the two apart."
        )
    seed = int(runs[0].seed)
    if first is None:
        return f"The runs share seed {seed} and chose the same tokens at every position."
    draws = [c[first].draw if first < len(c) else None for c in columns]
    ended = [first >= len(c) for c in columns]
    if any(ended):
        return (
            f"The runs share seed {seed} and the same prompt; at position {first} one run had already "
            "stopped, which its stopping settings decided, not chance."
        )
    if all(d is not None for d in draws) and len(set(draws)) == 1:
        return (
            f"The runs share seed {seed}, so they drew the same random number u = {draws[0]:.4f} at "
            f"position {first}, from the same model distribution (the tokens before it are identical). "
            "The different choice there comes from the settings, not from chance."
        )
    if all(d is None for d in draws):
        return f"Every run chose greedily at position {first}, so no chance is involved: the settings alone made the difference."
    return (
        f"The runs share seed {seed}, but at position {first} they did not draw the same random number "
        "(a greedy run draws none, so the streams fall out of step): chance may play a part."
    )


def _first_divergence(columns: list[list[TokenRow]]) -> int | None:
    for i in range(max((len(c) for c in columns), default=0)):
        ids = {c[i].id if i < len(c) else None for c in columns}
        if len(ids) > 1:
            return i
    return None


def _shared_draws(columns: list[list[TokenRow]], first: int | None) -> int:
    """How many leading positions every run drew the same (non-null) random number."""
    shared = 0
    end = min((len(c) for c in columns), default=0)
    for i in range(end if first is None else min(end, first + 1)):
        draws = {c[i].draw for c in columns}
        if len(draws) != 1 or None in draws:
            break
        shared += 1
    return shared


def _cell(token: TokenRow | None) -> dict[str, Any] | None:
    if token is None:
        return None
    return {
        "id": token.id,
        "token": token.token,
        "text": token.text,
        "prob": token.prob,
        "raw_prob": token.raw_prob,
        "draw": token.draw,
    }


def _tv(a: TokenRow | None, b: TokenRow | None) -> dict[str, float] | None:
    """Bounds on the total variation between two steps' final distributions, from their top-N lists."""
    if a is None or b is None:
        return None
    p = {alt.id: alt.prob for alt in a.alternatives}
    q = {alt.id: alt.prob for alt in b.alternatives}
    for token, dist in ((a, p), (b, q)):
        dist.setdefault(token.id, token.prob)  # the chosen token, even when ranked below top N
    shared = p.keys() & q.keys()
    if not shared:
        return None
    lower = 0.5 * sum(abs(p[t] - q[t]) for t in shared)
    outside = max(0.0, 1 - sum(p[t] for t in shared)) + max(0.0, 1 - sum(q[t] for t in shared))
    upper = min(1.0, lower + 0.5 * outside)
    return {"lower": round(lower, 6), "upper": round(upper, 6), "shared_tokens": len(shared)}
