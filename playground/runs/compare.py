"""Lines 2–4 saved runs up token by token and says where and why they differ.

Only sample 0 of each run is compared. The first run is the reference: each other run's
distribution at a position is compared with the first run's there.

The divergence between two runs at a position is the **total variation distance** between their
final (sampled-with) distributions, ½ Σ |p(t) − q(t)|. It is only compared where both runs had
fed the model the same tokens (the same prompt and the same tokens before the position: up to
and including the pair's first divergence); after it each run continues its own text, the two
distributions are over different next steps and no distance is given (``{"context": "different"}``).

In the same context:
- **The same settings** (every setting that shapes a step's distribution: the model build, its
  runtime, the sampler parameters; not the seed, the lengths, stop strings or ``top_n``): the two
  distributions are one function of one model output, so the distance is exactly 0 — given as
  ``lower = upper = 0`` with ``same_settings: true`` once the stored alternatives agree.
- **Different settings**: only each step's top-N alternatives are stored, so the distance is a
  range. Over the tokens both runs stored (the set S) ½ Σ_S |p − q| is exact; the mass outside S
  (1 − p(S) in one run, 1 − q(S) in the other) adds at least ½ |p(S̄) − q(S̄)| and at most
  ½ (p(S̄) + q(S̄)). Both ends are reported: a wide range means the lists hold little of the mass.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from playground.runs.conversation import conversation_text
from playground.runs.fields import MODEL, REQUEST
from playground.runs.models import Run
from playground.runs.token_rows import sample_rows
from playground.wire.token_event import TokenEvent

METRIC = {
    "name": "total_variation",
    "over": "final (sampled-with) probabilities of the top-N alternatives both runs stored",
    "description": (
        "Total variation distance ½·Σ|p−q| between the runs' final distributions at a position, "
        "given only where both runs had the same tokens before it. With the same settings it is "
        "exactly 0. With different settings only the top-N alternatives are stored, so it is a "
        "range: `lower` counts the stored tokens, `upper` adds the mass the lists leave out."
    ),
}

# Settings shown in the table of differences (by their export keys, ``fields``), besides every key
# of ``params`` and the conversation.
REQUEST_KEYS = ("prompt", "mode", "system", "top_n", "use_cache")
MODEL_KEYS = ("name", "manifest_sha256", "onnxruntime_version", "execution_provider")

# Differences (``differing_settings`` names) that leave a step's distribution alone, given the same
# tokens before it: the context itself (judged by the tokens), how many tokens and alternatives are
# kept, when to stop, how many samples or beams. The seed is one too, unless XTC draws with it.
NOT_SHAPING = frozenset(
    {
        "prompt",
        "mode",
        "system",
        "messages",
        "continue_final_message",
        "top_n",
        "params.max_tokens",
        "params.stop",
        "params.n",
        "params.num_beams",
        "params.length_penalty",
    }
)
# Stored probabilities of two runs with the same settings and context may differ by float rounding
# (another batch's shapes): up to this much summed difference they are read as the same.
SAME_TOLERANCE = 1e-4


def compare(runs: Sequence[Run]) -> dict[str, Any]:
    columns = [sample_rows(run.tokens) for run in runs]
    length = max((len(c) for c in columns), default=0)
    same_prompt = len({tuple(map(tuple, r.prompt_tokens)) for r in runs}) == 1
    first_divergence = _first_divergence(columns) if same_prompt else 0
    # per other run: the last position at which it and run 1 share a context (-1: none)
    shared_until = [_shared_context(runs[0], columns[0], run, column) for run, column in zip(runs[1:], columns[1:])]
    same_settings = [not shaping_differences(runs[0], run) for run in runs[1:]]

    positions = []
    for i in range(length):
        tokens = [c[i] if i < len(c) else None for c in columns]
        present = [t for t in tokens if t is not None]
        positions.append(
            {
                "index": i,
                "tokens": [_cell(t) for t in tokens],
                "same": len(present) == len(tokens) and len({t.id for t in present}) == 1,
                "same_context": same_prompt and (first_divergence is None or i <= first_divergence),
                "divergence": [None]
                + [
                    _divergence(tokens[0], t, same_context=i <= until, same_settings=same)
                    for t, until, same in zip(tokens[1:], shared_until, same_settings)
                ],
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


def shaping_differences(a: Run, b: Run) -> list[str]:
    """The settings, differing between two runs, that can make their distributions differ at a
    step both reached through the same tokens."""
    names = [row["name"] for row in differing_settings([a, b])]
    xtc = any(r.parameters().get("xtc_probability", 0) for r in (a, b))  # XTC's coin is the seed's
    return [n for n in names if n not in NOT_SHAPING and (n != "seed" or xtc)]


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


def seed_note(runs: Sequence[Run], columns: list[list[TokenEvent]], first: int | None, same_prompt: bool) -> str:
    """What a difference between these runs can honestly be blamed on. Positions are counted from
    1, as every page counts them (``first`` is 0-based, as the JSON's ``first_divergence``)."""
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
            f"The runs share seed {seed} and the same prompt; at position {first + 1} one run had already "
            "stopped, which its stopping settings decided, not chance."
        )
    if all(d is not None for d in draws) and len(set(draws)) == 1:
        return (
            f"The runs share seed {seed}, so they drew the same random number u = {draws[0]:.4f} at "
            f"position {first + 1}, from the same model distribution (the tokens before it are identical). "
            "The different choice there comes from the settings, not from chance."
        )
    if all(d is None for d in draws):
        return (
            f"Every run chose greedily at position {first + 1}, so no chance is involved: the settings alone made the difference."
        )
    return (
        f"The runs share seed {seed}, but at position {first + 1} they did not draw the same random number "
        "(a greedy run draws none, so the streams fall out of step): chance may play a part."
    )


def _first_divergence(columns: list[list[TokenEvent]]) -> int | None:
    for i in range(max((len(c) for c in columns), default=0)):
        ids = {c[i].id if i < len(c) else None for c in columns}
        if len(ids) > 1:
            return i
    return None


def _shared_context(a: Run, a_tokens: list[TokenEvent], b: Run, b_tokens: list[TokenEvent]) -> int:
    """The last position at which both runs had fed the model the same tokens: the same prompt and
    every token before it the same (so through their first divergence); -1 when the prompts differ."""
    if list(map(tuple, a.prompt_tokens)) != list(map(tuple, b.prompt_tokens)):
        return -1
    first = _first_divergence([a_tokens, b_tokens])
    return max(len(a_tokens), len(b_tokens)) if first is None else first


def _shared_draws(columns: list[list[TokenEvent]], first: int | None) -> int:
    """How many leading positions every run drew the same (non-null) random number."""
    shared = 0
    end = min((len(c) for c in columns), default=0)
    for i in range(end if first is None else min(end, first + 1)):
        draws = {c[i].draw for c in columns}
        if len(draws) != 1 or None in draws:
            break
        shared += 1
    return shared


def _cell(token: TokenEvent | None) -> dict[str, Any] | None:
    if token is None:
        return None
    return {
        "id": token.id,
        "token": token.token,
        "text": token.text,
        "prob": token.prob,
        "raw_prob": token.raw_prob,
        "draw": token.draw,
        "origin": token.origin.value,  # how it got there (docs/websocket-api.md, ``origin``)
    }


def _divergence(a: TokenEvent | None, b: TokenEvent | None, same_context: bool, same_settings: bool) -> dict[str, Any] | None:
    """Run 1's step against another run's: null when either has no token there; no number when the
    tokens before it differ; exactly 0 for the same settings; otherwise bounds from the top-N lists."""
    if a is None or b is None:
        return None
    if not same_context:
        return {"context": "different"}
    lower, upper, shared = _tv_bounds(a, b)
    same = same_settings and lower <= SAME_TOLERANCE
    if same:
        lower = upper = 0.0
    return {"context": "same", "same_settings": same, "lower": lower, "upper": upper, "shared_tokens": shared}


def _tv_bounds(a: TokenEvent, b: TokenEvent) -> tuple[float, float, int]:
    """Bounds on the total variation between two steps' final distributions, from their top-N lists:
    exact over the tokens both stored, and the mass outside them at least ½|p(S̄) − q(S̄)|, at most
    ½(p(S̄) + q(S̄))."""
    p = {alt.id: alt.prob for alt in a.alternatives}
    q = {alt.id: alt.prob for alt in b.alternatives}
    for token, dist in ((a, p), (b, q)):
        dist.setdefault(token.id, token.prob)  # the chosen token, even when ranked below top N
    shared = p.keys() & q.keys()
    inside = sum(abs(p[t] - q[t]) for t in shared)
    p_out = max(0.0, 1 - sum(p[t] for t in shared))
    q_out = max(0.0, 1 - sum(q[t] for t in shared))
    lower = 0.5 * (inside + abs(p_out - q_out))
    upper = min(1.0, 0.5 * (inside + p_out + q_out))
    return round(lower, 6), round(upper, 6), len(shared)
