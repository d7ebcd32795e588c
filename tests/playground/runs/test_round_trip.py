"""Export → import → export gives the same file back, for runs of every kind made by the real
worker code (``playground.worker.serving``: the protocol's events, the recorder, the database) on the tiny
model: plain, chat, a multi-turn conversation with an answer to continue, ``n`` samples, beam
search, a branch, an edit (typed tokens forced), cancelled, failed. Only ``id``, ``source`` and ``imported_from`` say that the copy
is a copy. Files of versions 1 and 2 still import."""

from __future__ import annotations

import copy
import dataclasses
import html
import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from inference.batching.scheduler import Scheduler
from playground.edge import frames
from playground.runs import schema
from playground.runs.address import turns_value
from playground.runs.models import Run
from playground.runs.token_rows import ENVELOPE_KEYS, exported, load_rows
from playground.wire.token_event import TokenEvent
from playground.worker import serving

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])

PROMPT = "The capital of France is"
PARAMS = {"temperature": 0.9, "top_p": 0.95, "max_tokens": 4, "seed": 11}
IDENTITY = ("id", "source", "imported_from")  # what an import changes, on purpose
CONVERSATION = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "Capital of France?"},
    {"role": "assistant", "content": "Paris."},
    {"role": "user", "content": "And of Italy?"},
    {"role": "assistant", "content": "The capital of Italy is"},
]


class FailingDecoder:
    """The tiny model's decoder, whose state fails on its ``fail_at``-th call (the prefill is the
    first): a model that breaks in the middle of a run."""

    def __init__(self, decoder: Any, fail_at: int) -> None:
        self._decoder, self._calls, self._fail_at = decoder, 0, fail_at

    def __getattr__(self, name: str) -> Any:
        return getattr(self._decoder, name)

    def run_rows(self, *args: Any, **kwargs: Any) -> Any:  # the worker's decode loop calls this
        self._calls += 1
        if self._calls >= self._fail_at:
            raise RuntimeError("the decoder failed (injected)")
        return self._decoder.run_rows(*args, **kwargs)

    def new_state(self, *args: Any, **kwargs: Any) -> Any:
        state = self._decoder.new_state(*args, **kwargs)
        outer = self

        class State:
            def __getattr__(self, name: str) -> Any:
                return getattr(state, name)

            def append_tokens(self, *a: Any, **k: Any) -> Any:
                outer._calls += 1
                if outer._calls >= outer._fail_at:
                    raise RuntimeError("the decoder failed (injected)")
                return state.append_tokens(*a, **k)

        return State()


def generate(model, request_id: str, cancel_after: int | None = None, **frame: Any) -> list[dict[str, Any]]:
    """One ``generate`` frame served by the worker's own generation path; its events."""
    body = {"type": "generate", "request_id": request_id, "prompt": PROMPT, "params": PARAMS, "top_n": 3} | frame
    body = {key: value for key, value in body.items() if value is not None}
    command = frames.parse_client_frame(json.dumps(body))
    job = serving.Assignment(request_id, "test-reply", command, quick=False)
    events: list[dict[str, Any]] = []

    def emit(event: dict[str, Any]) -> None:
        events.append(event)
        if cancel_after is not None and sum(e["type"] == "token" for e in events) >= cancel_after:
            job.cancelled.set()

    # the worker's listener on a decode loop of this test's own, stepped here until it is idle
    scheduler = Scheduler(model, max_batch=max(command.request.loop.n, command.request.loop.num_beams))
    scheduler.submit(serving.GenerationListener(job, model, emit, lambda: None).ticket())
    while not scheduler.idle():
        scheduler.step()
    return events


def run_id_of(events: list[dict[str, Any]]) -> str:
    last = events[-1]
    assert last["type"] in ("done", "error") and last.get("run_id"), last
    return last["run_id"]


@pytest.fixture
def runs_of_every_kind(tiny_runtime, db_alias) -> dict[str, str]:
    """kind → run id, each made by the worker's generation path and saved by its recorder."""
    made = {
        "plain": generate(tiny_runtime, "plain"),
        "chat": generate(
            tiny_runtime,
            "chat",
            mode="chat",
            system="Answer briefly.",
            params=PARAMS | {"stop": ["\n\n"], "repetition_penalty": 1.2},
        ),
        "conversation": generate(tiny_runtime, "conversation", prompt=None, messages=CONVERSATION, continue_final_message=True),
        "turns": generate(tiny_runtime, "turns", prompt=None, messages=CONVERSATION[1:4]),
        "samples": generate(tiny_runtime, "samples", params=PARAMS | {"n": 3}),
        "beams": generate(tiny_runtime, "beams", params={"num_beams": 3, "max_tokens": 3, "seed": 5}),
        "cancelled": generate(tiny_runtime, "cancelled", cancel_after=2, params=PARAMS | {"max_tokens": 50}),
        "failed": generate(dataclasses.replace(tiny_runtime, decoder=FailingDecoder(tiny_runtime.decoder, 3)), "failed"),
        "surprisal": generate(tiny_runtime, "surprisal", prompt_scores=True),
    }
    ids = {kind: run_id_of(events) for kind, events in made.items()}
    parent = Run.objects.get(pk=ids["plain"])
    first = load_rows(parent.tokens)[0].id  # the parent's first token
    branch = generate(tiny_runtime, "branch", prefix_tokens=[first], parent_run=parent.id, branch_index=1)
    ids["branch"] = run_id_of(branch)
    typed = [first, 7, 8]  # the parent's first token kept, then two tokens typed by the person
    edit = generate(tiny_runtime, "edit", prefix_tokens=typed, typed_tokens=2, parent_run=parent.id, branch_index=1)
    ids["edit"] = run_id_of(edit)
    return ids


def test_the_runs_are_of_the_kinds_they_claim(runs_of_every_kind):
    runs = {kind: Run.objects.get(pk=run_id) for kind, run_id in runs_of_every_kind.items()}
    assert runs["plain"].status == "complete" and runs["plain"].tokens
    assert runs["chat"].mode == "chat" and runs["chat"].system == "Answer briefly."
    assert {row.sample for row in load_rows(runs["samples"].tokens)} == {0, 1, 2} and len(runs["samples"].samples) == 3
    assert runs["beams"].tokens == [] and runs["beams"].beam_steps and len(runs["beams"].beams) == 3
    assert runs["cancelled"].status == "cancelled" and 2 <= len(runs["cancelled"].tokens) < 50
    assert runs["failed"].status == "failed" and runs["failed"].error["code"] == "generation_failed"
    assert len(runs["failed"].tokens) == 2  # the prefill, two tokens, then the decoder broke
    branch = runs["branch"]
    assert branch.parent_id == runs["plain"].id and branch.branch_index == 1
    exported = schema.run_to_dict(branch)["tokens"]
    assert exported[0]["forced"] is True and exported[1]["forced"] is False
    edit = schema.run_to_dict(runs["edit"])
    assert edit["request"]["typed_tokens"] == 2 and edit["parent_run"] == runs["plain"].id
    assert [t["forced"] for t in edit["tokens"][:4]] == [True, True, True, False]
    assert [t["id"] for t in edit["tokens"][:3]] == [load_rows(runs["plain"].tokens)[0].id, 7, 8]
    # each token's origin, recorded from its event and exported: the typed ones the person's
    assert [t["origin"] for t in edit["tokens"][1:4]] == ["typed", "typed", "sampled"]
    assert edit["tokens"][0]["origin"] in ("sampled", "kept")


def test_a_run_saved_before_origins_gets_them_from_its_request(runs_of_every_kind):
    """Rows without ``origin`` (as saved before it): typed from ``typed_tokens``, a branch's
    alternative from ``branch_index``, other forced tokens kept, the rest from their draws."""
    edit = Run.objects.get(pk=runs_of_every_kind["edit"])
    old_rows = [row[:13] + [{k: v for k, v in row[13].items() if k != "origin"}] if len(row) > 13 else row for row in edit.tokens]
    edit.tokens = old_rows
    assert [t["origin"] for t in schema.run_to_dict(edit)["tokens"][:4]] == ["kept", "typed", "typed", "sampled"]
    edit.typed_tokens, edit.branch_index = 0, 2  # as a branch: its parent's tokens, then the alternative at 2
    assert [t["origin"] for t in schema.run_to_dict(edit)["tokens"][:4]] == ["kept", "kept", "branch", "sampled"]


KINDS = ("plain", "chat", "conversation", "turns", "samples", "beams", "branch", "edit", "cancelled", "failed")


def test_a_conversation_is_saved_whole(client, runs_of_every_kind):
    run = Run.objects.get(pk=runs_of_every_kind["conversation"])
    assert run.conversation() == CONVERSATION and run.continue_final_message is True
    assert run.prompt == "And of Italy?" and run.system is None  # its last user message: what history searches
    fed = "".join(text for _, text in run.prompt_tokens)
    assert fed.endswith("And of Italy?<|im_end|>\n<|im_start|>assistant\nThe capital of Italy is")
    assert fed.count("Capital of France?") == 1 and fed.count("Paris.") == 1
    request = client.get(f"/r/{run.id}.json").json()["run"]["request"]
    assert request["messages"] == CONVERSATION and request["continue_final_message"] is True
    assert (request["prompt"], request["system"], request["mode"]) == ("And of Italy?", None, "chat")

    turns = Run.objects.get(pk=runs_of_every_kind["turns"])
    assert turns.conversation() == CONVERSATION[1:4] and turns.continue_final_message is False
    assert "".join(text for _, text in turns.prompt_tokens).endswith("<|im_start|>assistant\n")

    body = json.dumps({"ids": [run.id, runs_of_every_kind["chat"]], "q": "of italy"})
    summaries = client.post("/api/runs/summaries", data=body, content_type="application/json").json()["runs"]
    assert [(s["id"], s["prompt"], s["turns"]) for s in summaries] == [(run.id, "And of Italy?", 5)]

    single = client.get(f"/r/{runs_of_every_kind['chat']}.json").json()["run"]["request"]
    assert single["messages"] is None and single["continue_final_message"] is False  # one turn: prompt + system
    assert Run.objects.get(pk=runs_of_every_kind["chat"]).messages is None


def test_a_conversation_is_shown_on_its_page_and_in_a_comparison(client, runs_of_every_kind):
    run_id = runs_of_every_kind["conversation"]
    page = client.get(f"/r/{run_id}").content.decode()
    for message in CONVERSATION:
        assert f'data-role="{message["role"]}"' in page and message["content"] in page
    compared = client.get(f"/compare/{runs_of_every_kind['chat']},{run_id}").content.decode()
    assert "The capital of Italy is" in compared and "Capital of France?" in compared
    assert 'data-setting="messages"' in compared  # the conversations differ
    live = client.get(f"/compare/{run_id},{runs_of_every_kind['chat']}").content.decode()
    link = html.unescape(re.search(r'href="([^"]*)" data-action="live-compare"', live).group(1))
    texts = {k: v[0] for k, v in parse_qs(urlsplit(link).query).items()}
    assert turns_value(texts["turns"]) == CONVERSATION[1:3]  # run 1's conversation, as the playground's address
    assert (texts["system"], texts["prompt"], texts["assistant_prefix"]) == (
        "Answer briefly.",
        "And of Italy?",
        "The capital of Italy is",
    )


@pytest.mark.parametrize("kind", KINDS)
def test_export_import_export_is_the_same_file(client, runs_of_every_kind, kind):
    original_id = runs_of_every_kind[kind]
    first = client.get(f"/r/{original_id}.json")
    assert first.status_code == 200
    exported = first.json()
    assert exported["version"] == schema.VERSION

    answer = client.post("/api/runs/import", data=first.content, content_type="application/json")
    assert answer.status_code == 201, answer.content
    copy_id = answer.json()["runs"][0]["id"]
    again = client.get(f"/r/{copy_id}.json").json()
    expected = copy.deepcopy(exported)
    expected["run"].update(id=copy_id, source="imported", imported_from=original_id)
    assert again == expected

    # And once more, from the copy: a copy of a copy is the same run again.
    answer = client.post("/api/runs/import", data=json.dumps(again), content_type="application/json")
    assert answer.status_code == 201, answer.content
    third_id = answer.json()["runs"][0]["id"]
    third = client.get(f"/r/{third_id}.json").json()
    assert third == again | {"run": again["run"] | {"id": third_id, "imported_from": copy_id}}

    # The copy is shown like the original.
    assert client.get(f"/r/{copy_id}").status_code == 200
    assert client.get(f"/compare/{original_id},{copy_id}").status_code == 200


def test_a_run_that_asked_for_prompt_scores_is_saved_with_them(client, runs_of_every_kind, tiny_runtime):
    events = generate(tiny_runtime, "surprisal-again", prompt_scores=True)
    (page,) = [e for e in events if e["type"] == "prompt_surprisal"]
    saved = client.get(f"/r/{runs_of_every_kind['surprisal']}.json").json()["run"]
    assert saved["prompt_surprisal"] == {key: page[key] for key in ("count", "perplexity", "total_bits", "tokens")}
    plain = client.get(f"/r/{runs_of_every_kind['plain']}.json").json()["run"]
    assert plain["prompt_surprisal"] is None


@pytest.mark.parametrize(
    ("change", "param"),
    [
        (lambda s: s["tokens"].pop(), "run.prompt_surprisal.count"),
        (lambda s: s["tokens"][1].update(prob=1.5), "run.prompt_surprisal.tokens[1].prob"),
        (lambda s: s["tokens"][0].update(rank=1), "run.prompt_surprisal.tokens[0].rank"),
        (lambda s: s["tokens"][1].update(id=s["tokens"][1]["id"] + 1), "run.prompt_surprisal.tokens"),
    ],
)
def test_a_prompt_surprisal_that_does_not_hold_together_is_refused_by_name(client, runs_of_every_kind, change, param):
    exported = client.get(f"/r/{runs_of_every_kind['surprisal']}.json").json()
    change(exported["run"]["prompt_surprisal"])
    answer = client.post("/api/runs/import", data=json.dumps(exported), content_type="application/json")
    assert answer.status_code == 400 and answer.json()["error"]["param"] == param, answer.content


def test_every_token_field_the_worker_sends_is_a_field_of_the_schema(runs_of_every_kind, tiny_runtime):
    """The protocol and the export's token must not drift apart (the cause of the broken import)."""
    events = generate(tiny_runtime, "fields", params=PARAMS | {"max_tokens": 2})
    token = next(e for e in events if e["type"] == "token")
    assert set(token) - ENVELOPE_KEYS == set(exported(TokenEvent.from_json(token)))


def test_a_comparison_of_a_branch_and_its_parent_imports_as_a_branch_of_the_new_parent(client, runs_of_every_kind):
    parent_id, branch_id = runs_of_every_kind["plain"], runs_of_every_kind["branch"]
    exported = client.get(f"/compare/{parent_id},{branch_id}.json").json()
    answer = client.post("/api/runs/import", data=json.dumps(exported), content_type="application/json")
    assert answer.status_code == 201, answer.content
    new_parent, new_branch = (r["id"] for r in answer.json()["runs"])
    assert Run.objects.get(pk=new_branch).parent_id == new_parent
    again = client.get(f"/compare/{new_parent},{new_branch}.json").json()
    for before, after, new_id in zip(exported["runs"], again["runs"], (new_parent, new_branch)):
        expected = before | {"id": new_id, "source": "imported", "imported_from": before["id"]}
        if before["parent_run"] == parent_id:
            expected["parent_run"] = new_parent
        assert after == expected
    assert again["comparison"]["positions"] == exported["comparison"]["positions"]


def test_a_version_1_file_still_imports(client, runs_of_every_kind):
    """Version 1 as this server wrote it (the same fields), and as it wrote runs saved before
    tokens had ``removed_by`` and ``forced`` (without them)."""
    for kind in ("branch", "samples"):
        original_id = runs_of_every_kind[kind]
        current = client.get(f"/r/{original_id}.json").json()
        as_written = as_version(current, 1)
        older = copy.deepcopy(as_written)
        for token in older["run"]["tokens"]:
            del token["removed_by"], token["forced"]
        for file, forced in ((as_written, True), (older, False)):
            answer = client.post("/api/runs/import", data=json.dumps(file), content_type="application/json")
            assert answer.status_code == 201, answer.content
            copy_id = answer.json()["runs"][0]["id"]
            again = client.get(f"/r/{copy_id}.json").json()
            assert again["version"] == schema.VERSION
            expected = copy.deepcopy(current["run"]) | {"id": copy_id, "source": "imported", "imported_from": original_id}
            if not forced:
                for token in expected["tokens"]:
                    token.update(removed_by=None, forced=False)
            assert again["run"] == expected


def as_version(exported: dict[str, Any], version: int) -> dict[str, Any]:
    """A version 3 export of a one-turn run as the older version wrote it (without the conversation)."""
    older = copy.deepcopy(exported) | {"version": version}
    for key in schema.CONVERSATION_KEYS:
        del older["run"]["request"][key]
    return older


@pytest.mark.parametrize("kind", ("chat", "samples"))
def test_a_version_2_file_still_imports(client, runs_of_every_kind, kind):
    original_id = runs_of_every_kind[kind]
    current = client.get(f"/r/{original_id}.json").json()
    answer = client.post("/api/runs/import", data=json.dumps(as_version(current, 2)), content_type="application/json")
    assert answer.status_code == 201, answer.content
    copy_id = answer.json()["runs"][0]["id"]
    again = client.get(f"/r/{copy_id}.json").json()
    assert again == current | {"run": current["run"] | {"id": copy_id, "source": "imported", "imported_from": original_id}}


def test_a_version_2_file_cannot_hold_a_conversation(client, runs_of_every_kind):
    current = client.get(f"/r/{runs_of_every_kind['conversation']}.json").json() | {"version": 2}
    answer = client.post("/api/runs/import", data=json.dumps(current), content_type="application/json")
    assert answer.status_code == 400
    assert answer.json()["error"]["param"] == "run.request.messages"


BROKEN_REQUESTS = [
    ({"system": "S"}, "run.request.system"),
    ({"prompt": "Capital of France?"}, "run.request.prompt"),
    ({"prompt": None}, "run.request.prompt"),
    ({"messages": []}, "run.request.messages"),
    ({"messages": "hi"}, "run.request.messages"),
    ({"messages": [*CONVERSATION[:4], {"role": "tool", "content": "x"}]}, "run.request.messages[4].role"),
    ({"messages": [*CONVERSATION[:4], {"role": "user", "content": 5}]}, "run.request.messages[4].content"),
    ({"messages": [{"role": "user", "content": "x", "name": "n"}]}, "run.request.messages[0].name"),
    ({"messages": CONVERSATION[:4]}, "run.request.continue_final_message"),  # the last is the user's
    ({"continue_final_message": "yes"}, "run.request.continue_final_message"),
    ({"mode": "completion"}, "run.request.mode"),
    ({"messages": None, "prompt": "Hi", "continue_final_message": True}, "run.request.continue_final_message"),
    ({"typed_tokens": 1}, "run.request.typed_tokens"),  # more than the (empty) forced prefix
    ({"typed_tokens": "2"}, "run.request.typed_tokens"),
]


@pytest.mark.parametrize(("change", "param"), BROKEN_REQUESTS)
def test_the_prompt_and_messages_rules_are_enforced_by_name(client, runs_of_every_kind, change, param):
    exported = client.get(f"/r/{runs_of_every_kind['conversation']}.json").json()
    exported["run"]["request"].update(change)
    answer = client.post("/api/runs/import", data=json.dumps(exported), content_type="application/json")
    assert answer.status_code == 400, answer.content
    error = answer.json()["error"]
    assert (error["code"], error["param"]) == ("invalid_export", param), error


def test_a_file_without_typed_tokens_imports_with_none_typed(client, runs_of_every_kind):
    exported = client.get(f"/r/{runs_of_every_kind['edit']}.json").json()
    del exported["run"]["request"]["typed_tokens"]
    answer = client.post("/api/runs/import", data=json.dumps(exported), content_type="application/json")
    assert answer.status_code == 201, answer.content
    assert Run.objects.get(pk=answer.json()["runs"][0]["id"]).typed_tokens == 0


def test_a_version_3_file_must_have_every_field(client, runs_of_every_kind):
    current = client.get(f"/r/{runs_of_every_kind['plain']}.json").json()
    del current["run"]["tokens"][1]["forced"]
    answer = client.post("/api/runs/import", data=json.dumps(current), content_type="application/json")
    assert answer.status_code == 400
    assert answer.json()["error"] == {"code": "invalid_export", "param": "run.tokens[1].forced", "message": "is required"}
    current = client.get(f"/r/{runs_of_every_kind['conversation']}.json").json()
    del current["run"]["request"]["continue_final_message"]
    answer = client.post("/api/runs/import", data=json.dumps(current), content_type="application/json")
    assert answer.json()["error"]["param"] == "run.request.continue_final_message"
