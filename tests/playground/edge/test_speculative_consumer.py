"""Speculative runs over a real websocket on the real model (docs/websocket-api.md): the
``verification`` events come before their step's tokens and agree with the tokens' ``drafted``
flags, ``done.speculative`` sums them up, greedy output is the plain run's, the run is saved with
its parameter, flags and records, and bad values are refused by field. The ``fast`` draft cannot
pay on this machine: it never drafts and ``done`` says why, unless the run keeps drafting."""

from __future__ import annotations

import pytest
from asgiref.sync import sync_to_async

from inference.decoding.loop_params import DRAFT_MODELS
from inference.model_dir import default_model_dir
from inference.speculative.switch_off import cannot_pay
from playground.runs.models import Run
from playground.runs.schema import parse_export, run_export
from tests.communicator import connect
from tests.inference.speculative.test_greedy_real import CODE  # lookup pays on it

from .test_consumer import events_until_end, expect_error

pytestmark = [pytest.mark.real_model, pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

PLAIN = {"temperature": 0, "max_tokens": 64, "ignore_eos": True}


def check_speculative_events(events: list[dict]) -> tuple[list[int], dict]:
    """Checks the run's events against one another; returns its token ids and ``done.speculative``."""
    assert events[0]["type"] == "started" and events[-1]["type"] == "done", events[-1]
    tokens: list[int] = []
    verifications: list[dict] = []
    step_tokens = 0  # tokens the last verification still has to come
    for event in events:
        if event["type"] == "verification":
            assert step_tokens == 0 and event["index"] == len(tokens)  # before its step's tokens
            verifications.append(event)
            step_tokens = event["accepted"] + 1
            judged = [d for d in event["drafted"] if d["accepted"] is not None]
            assert [d["accepted"] for d in judged] == [True] * event["accepted"] + [False] * (len(judged) - event["accepted"])
            assert all(d["q"] == 1.0 and d["p"] == float(d["accepted"]) for d in judged)  # lookup, greedy: point masses
            assert (event["corrected"] is None) == (len(judged) == event["accepted"])
        elif event["type"] == "token":
            position = len(tokens) - verifications[-1]["index"] if step_tokens else None
            drafted = position is not None and position < verifications[-1]["accepted"]
            assert event["drafted"] is drafted, event
            if drafted:
                assert event["id"] == verifications[-1]["drafted"][position]["id"]
            elif position is not None:  # the step's last token: the corrected or the bonus one
                assert event["id"] == (verifications[-1]["corrected"] or verifications[-1]["bonus"])["id"]
            step_tokens = max(0, step_tokens - 1)
            tokens.append(event["id"])
    totals = events[-1]["speculative"]
    # One definition (SpeculativeTotals): every drafted token, the checked ones, the accepted ones.
    assert totals["drafted"] == sum(len(v["drafted"]) for v in verifications)
    assert totals["checked"] == sum(sum(d["accepted"] is not None for d in v["drafted"]) for v in verifications)
    assert totals["accepted"] == sum(v["accepted"] for v in verifications)
    assert totals["verifications"] == len(verifications)
    return tokens, totals


async def test_a_speculative_greedy_run_gives_the_plain_tokens_with_its_records():
    communicator = await connect()
    frame = {"type": "generate", "prompt": CODE, "top_n": 3}
    await communicator.send_json_to({**frame, "request_id": "plain", "params": PLAIN})
    plain = await events_until_end(communicator, "plain")
    assert plain[-1]["speculative"] is None and "drafted" not in plain[1]
    assert not any(e["type"] == "verification" for e in plain)
    params = {**PLAIN, "speculative": {"draft": "prompt_lookup", "k": 4}}
    await communicator.send_json_to({**frame, "request_id": "spec", "params": params})
    events = await events_until_end(communicator, "spec")
    assert events[0]["params"]["speculative"] == {"draft": "prompt_lookup", "k": 4, "switch_off": True}
    tokens, totals = check_speculative_events(events)
    assert tokens == [e["id"] for e in plain if e["type"] == "token"]
    assert totals["accepted"] >= 8 and totals["switched_off_at"] is None and totals["reason"] is None  # lookup pays on code
    await communicator.disconnect()
    saved = (await sync_to_async(lambda: run_export(Run.objects.get(pk=events[-1]["run_id"])))())["run"]
    assert saved["request"]["params"]["speculative"] == {"draft": "prompt_lookup", "k": 4, "switch_off": True}
    sent = [e for e in events if e["type"] in ("token", "verification")]
    assert [t["drafted"] for t in saved["tokens"]] == [e["drafted"] for e in sent if e["type"] == "token"]
    envelope = ("type", "request_id")
    verifications = [{k: v for k, v in e.items() if k not in envelope} for e in sent if e["type"] == "verification"]
    assert saved["speculative"] == {"totals": totals, "verifications": verifications}
    (imported,) = parse_export(run_export(await sync_to_async(Run.objects.get)(pk=events[-1]["run_id"])))  # the import's checks
    assert imported.fields["speculative"] == saved["speculative"]
    plain_saved = (await sync_to_async(lambda: run_export(Run.objects.get(pk=plain[-1]["run_id"])))())["run"]
    assert plain_saved["speculative"] is None and "speculative" not in plain_saved["request"]["params"]


@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"speculative": {"k": 9}}, "params.speculative.k"),
        ({"speculative": {"k": "4"}}, "params.speculative.k"),
        ({"speculative": {"draft": "oracle"}}, "params.speculative.draft"),
        ({"speculative": {"depth": 2}}, "params.speculative.depth"),
        ({"speculative": {"switch_off": 0}}, "params.speculative.switch_off"),
        ({"speculative": {"switch_off": "false"}}, "params.speculative.switch_off"),
        ({"speculative": "prompt_lookup"}, "params.speculative"),
        ({"speculative": {"k": 2}, "n": 2}, "params.speculative"),
        ({"speculative": {"k": 2}, "num_beams": 2}, "params.speculative"),
    ],
)
async def test_bad_speculative_values_are_refused_by_field(params, field):
    communicator = await connect()
    code = "unknown_param" if field.endswith("depth") else "invalid_value"
    await expect_error(communicator, {"type": "generate", "request_id": "b", "prompt": "x", "params": params}, code, field)
    await communicator.disconnect()


FAST_BUILT = (default_model_dir().parent / DRAFT_MODELS["fast"] / "manifest.json").is_file()


@pytest.mark.skipif(
    not FAST_BUILT,
    reason="the fast draft model is not built (python -m inference.modelbuild --variant fast --model-dir .models/smollm2-135m-instruct-fast, ~3 min)",
)
async def test_the_fast_draft_model_cannot_pay_but_drafts_when_kept_and_greedy_output_is_the_plain_runs():
    communicator = await connect()
    frame = {"type": "generate", "prompt": "Once upon a time, in a village by the sea,", "top_n": 3}
    await communicator.send_json_to({**frame, "request_id": "plain", "params": {**PLAIN, "max_tokens": 24}})
    plain = [e["id"] for e in await events_until_end(communicator, "plain") if e["type"] == "token"]
    params = {**PLAIN, "max_tokens": 24, "speculative": {"draft": "fast", "k": 3}}
    await communicator.send_json_to({**frame, "request_id": "off", "params": params})
    events = await events_until_end(communicator, "off")
    assert not any(e["type"] == "verification" for e in events)
    assert [e["id"] for e in events if e["type"] == "token"] == plain
    reason = cannot_pay("fast", 3)
    assert events[-1]["speculative"] == {
        "drafted": 0,
        "checked": 0,
        "accepted": 0,
        "verifications": 0,
        "switched_off_at": 0,
        "reason": {"rule": "cannot_pay", "tokens": 4, "steps": reason.steps},
    }
    kept = {**params, "speculative": {"draft": "fast", "k": 3, "switch_off": False}}
    await communicator.send_json_to({**frame, "request_id": "kept", "params": kept})
    events = await events_until_end(communicator, "kept")
    assert events[0]["params"]["speculative"] == kept["speculative"]
    verifications = [e for e in events if e["type"] == "verification"]
    assert verifications and all(len(v["drafted"]) == 3 or v["index"] + len(v["drafted"]) >= 24 for v in verifications)
    assert [e["id"] for e in events if e["type"] == "token"] == plain
    assert events[-1]["speculative"]["accepted"] > 0 and events[-1]["speculative"]["reason"] is None
    await communicator.disconnect()
    saved = (await sync_to_async(lambda: run_export(Run.objects.get(pk=events[-1]["run_id"])))())["run"]
    assert saved["request"]["params"]["speculative"] == kept["speculative"]  # replay and /r/<id> keep drafting
