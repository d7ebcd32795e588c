"""A token's origin (``inference.decoding.origin``), decided from one step's trace: worked out by hand
on the hand-made vocabulary of the sampler tests (id 0 the end of sequence) with scripted draws."""

from __future__ import annotations

import numpy as np
import pytest

from inference.decoding.generation import GenerationRequest, TokenStep, Verification, run
from inference.decoding.loop_params import LoopParams
from inference.decoding.origin import TOKEN_ORIGINS, Origin, PrefixPlan, grammar_left_one, picked_origin
from inference.sampling import SamplerChain, SamplingParams
from tests.inference.helpers import collect, single_token
from tests.inference.sampling.helpers import HAND_TOKENS, HandVocab, ScriptedRng
from tests.inference.speculative.conftest import COLOURS
from tests.inference.speculative.test_loop_tiny import request as speculative_request

CHOICE = {"type": "choice", "options": ["yes", "no"]}


@pytest.fixture(scope="module")
def vocab() -> HandVocab:
    return HandVocab()


def logits(favourite: int, others: float = 0.0) -> np.ndarray:
    x = np.full(len(HAND_TOKENS), others)
    x[favourite] = 3.0
    return x


def test_the_names_are_decided_once():
    assert [o.value for o in Origin] == [
        "sampled", "greedy", "forced_by_grammar", "draft", "corrected", "typed", "branch", "kept", "prompt",
    ]  # fmt: skip
    assert Origin.PROMPT not in TOKEN_ORIGINS and len(TOKEN_ORIGINS) == 8
    assert [o for o in Origin if o.drawn] == [Origin.SAMPLED]
    assert {o for o in Origin if o.chosen_by_person} == {Origin.TYPED, Origin.BRANCH}


def test_a_pick_is_sampled_or_greedy_and_an_accepted_draft_a_draft():
    sampled = SamplerChain(SamplingParams(temperature=1.0)).step(logits(3), [], ScriptedRng(0.1))
    greedy = SamplerChain(SamplingParams(temperature=0.0)).step(logits(3), [], ScriptedRng())
    assert picked_origin(sampled) is Origin.SAMPLED and sampled.own_pick == sampled.token == 3
    assert picked_origin(greedy) is Origin.GREEDY and greedy.draw is None
    assert picked_origin(sampled, drafted=True) is Origin.DRAFT


def test_the_grammar_leaving_one_token_forces_it(vocab):
    chain = SamplerChain(SamplingParams(grammar=CHOICE, temperature=1.0), token_texts=vocab)
    first = chain.step(logits(vocab.id("y")), [], ScriptedRng(0.3))  # "yes", "no", "y", "n" allowed
    assert first.token == vocab.id("y") and picked_origin(first) is Origin.SAMPLED
    second = chain.step(logits(vocab.id("x")), [vocab.id("y")], ScriptedRng(0.9))  # after "y": only "e"
    assert vocab[second.token] == "e" and grammar_left_one(second)
    assert picked_origin(second) is Origin.FORCED_BY_GRAMMAR


def test_the_grammar_keeping_one_after_a_stage_that_already_left_one_forces_nothing(vocab):
    # top_k 1 before the grammar: the one token was top_k's doing, and greedy-like
    params = SamplingParams(grammar=CHOICE, temperature=1.0, top_k=1, sampler_order=("top_k", "grammar", "temperature"))
    trace = SamplerChain(params, token_texts=vocab).step(logits(vocab.id("yes")), [], ScriptedRng(0.5))
    assert [(s.name, s.kept) for s in trace.stages][:2] == [("top_k", 1), ("grammar", 1)]
    assert not grammar_left_one(trace) and picked_origin(trace) is Origin.SAMPLED


def test_a_forced_token_the_pick_would_take_anyway_keeps_the_picks_origin():
    chain = SamplerChain(SamplingParams(temperature=1.0))
    agrees = chain.step(logits(3), [], ScriptedRng(0.1), force=3)  # u = 0.1 falls in token 3's segment
    differs = chain.step(logits(3), [], ScriptedRng(0.1), force=5)
    plan = PrefixPlan(length=2)
    assert agrees.own_pick == 3 and plan.origin(0, agrees) is Origin.SAMPLED
    assert differs.own_pick == 3 and differs.token == 5 and plan.origin(1, differs) is Origin.KEPT
    greedy = SamplerChain(SamplingParams(temperature=0.0))
    assert plan.origin(0, greedy.step(logits(3), [], ScriptedRng(), force=3)) is Origin.GREEDY
    assert plan.origin(0, greedy.step(logits(3), [], ScriptedRng(), force=4)) is Origin.KEPT


def test_typed_and_branched_prefix_tokens_are_the_persons_whatever_the_pick():
    chain = SamplerChain(SamplingParams(temperature=1.0))
    trace = chain.step(logits(3), [], ScriptedRng(0.1), force=3)  # the pick agrees: still the person's
    edit = PrefixPlan(length=5, typed=2)
    assert [edit.origin(i, trace) for i in range(5)] == [Origin.SAMPLED] * 3 + [Origin.TYPED] * 2
    branch = PrefixPlan(length=4, branched=True)
    assert branch.branch_index == 3 and branch.origin(3, trace) is Origin.BRANCH and branch.origin(2, trace) is Origin.SAMPLED
    both = PrefixPlan(length=4, typed=1, branched=True)
    assert [both.origin(i, trace) for i in (2, 3)] == [Origin.BRANCH, Origin.TYPED]


@pytest.mark.parametrize(("length", "typed", "branched"), [(2, 3, False), (2, -1, False), (2, 2, True), (0, 0, True)])
def test_a_plan_the_prefix_cannot_hold_is_refused(length, typed, branched):
    with pytest.raises(ValueError):
        PrefixPlan(length, typed, branched)


# -- the origins the generation loop gives (the tiny random model) -------------------------------


def request(prefix=(), *, temperature=1.0, seed=11, typed=0, branched=False, max_tokens=3, grammar=None):

    return GenerationRequest(
        "Once upon a time",
        sampling=SamplingParams(temperature=temperature, seed=seed, grammar=grammar),
        loop=LoopParams(max_tokens=max_tokens),
        prefix_tokens=tuple(prefix),
        typed_tokens=typed,
        branched=branched,
    )


def origins(runtime, req) -> list[str]:

    return [step.origin.value for step in collect(runtime, req)[1]]


def test_a_plain_run_is_sampled_and_a_greedy_one_greedy(tiny_runtime):
    assert origins(tiny_runtime, request()) == ["sampled"] * 3
    assert origins(tiny_runtime, request(temperature=0.0)) == ["greedy"] * 3


def test_a_branch_keeps_the_parents_picks_then_its_alternative_then_samples(tiny_runtime):

    parent = collect(tiny_runtime, request(max_tokens=4))[1]
    alternative = next(a.id for a in parent[2].trace.alternatives if a.id != parent[2].token_id)
    prefix = [parent[0].token_id, parent[1].token_id, alternative]
    # the same seed and settings: the kept tokens are the ones this run's own draws pick
    assert origins(tiny_runtime, request(prefix, branched=True)) == ["sampled", "sampled", "branch"] + ["sampled"] * 3
    # the same prefix under greedy settings (a what-if): greedy takes the top token, not a sampled one
    top = [int(np.argmax([a.raw_prob for a in s.trace.alternatives])) for s in parent[:2]]
    kept = ["greedy" if s.token_id == s.trace.alternatives[i].id else "kept" for s, i in zip(parent[:2], top)]
    assert origins(tiny_runtime, request(prefix, temperature=0.0, branched=True))[:3] == [*kept, "branch"]


def test_typed_tokens_are_typed_even_where_the_model_would_have_picked_them(tiny_runtime):

    greedy = collect(tiny_runtime, request(temperature=0.0, max_tokens=2))[1]
    typed = [greedy[0].token_id, greedy[1].token_id]  # exactly what greedy picks
    assert origins(tiny_runtime, request(typed, temperature=0.0, typed=2, max_tokens=1)) == ["typed", "typed", "greedy"]
    assert origins(tiny_runtime, request(typed, temperature=0.0, max_tokens=1)) == ["greedy", "greedy", "greedy"]


def test_a_token_the_grammar_leaves_alone_is_forced_by_it(tiny_runtime):

    choice = {"type": "choice", "options": ["unbelievably", "x"]}  # once it starts, one spelling: one token a step
    for seed in (1, 2, 3):
        steps = collect(tiny_runtime, request(grammar=choice, max_tokens=20, seed=seed))[1]
        for step in steps:
            grammar = next(s for s in step.trace.stages if s.name == "grammar")
            assert step.origin.value == ("forced_by_grammar" if grammar.kept == 1 else "sampled")
        if tiny_runtime.codec.decode([s.token_id for s in steps]).startswith("unbeliev"):
            assert "forced_by_grammar" in [step.origin.value for step in steps]
            return
    pytest.fail("no seed started the long option")


def test_a_speculative_steps_tokens_are_draft_corrected_or_the_bonus_pick():
    sampled = SamplerChain(SamplingParams(temperature=1.0)).step(logits(3), [], ScriptedRng(0.1))
    greedy = SamplerChain(SamplingParams(temperature=0.0)).step(logits(3), [], ScriptedRng())
    assert picked_origin(sampled, drafted=True) is picked_origin(greedy, drafted=True) is Origin.DRAFT
    assert picked_origin(sampled, drafted=False) is Origin.CORRECTED  # drawn from what the rejected draft left
    assert picked_origin(greedy, drafted=False) is Origin.GREEDY  # greedy corrects with its own pick
    assert picked_origin(sampled, drafted=None) is Origin.SAMPLED  # the bonus: a plain pick


def test_a_speculative_runs_tokens_are_drafts_corrections_and_plain_picks(tiny_runtime):

    colours = [single_token(tiny_runtime, text) for text in COLOURS]
    items = list(run(tiny_runtime, speculative_request(colours, seed=5, k=3, max_tokens=24)))
    steps = [item for item in items if isinstance(item, TokenStep)]
    expected = ["sampled"] * len(steps)
    for v in (item for item in items if isinstance(item, Verification)):
        for i, check in enumerate(v.checks):
            expected[v.index + i] = "draft" if check.accepted else "corrected"
    assert [s.origin.value for s in steps] == expected
    assert {"draft", "corrected", "sampled"} <= set(expected)  # all three in this run
