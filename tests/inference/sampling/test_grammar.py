"""The grammar stage on a hand-made vocabulary (``HAND_TOKENS``, id 0 the end of sequence): what it
removes at each point of the text, the end of sequence only where the constraint is complete, its
place among the other stages, and bad constraints refused by the field at fault."""

from __future__ import annotations

import numpy as np
import pytest

from inference.decoding.generation import GenerationRequest
from inference.decoding.loop_params import LoopParams
from inference.errors import ParamError
from inference.sampling import SamplerChain, SamplingParams
from inference.sampling.stages.grammar import Grammar, GrammarSpec

from .helpers import HAND_TOKENS, HandVocab, ScriptedRng

CHOICE = {"type": "choice", "options": ["yes", "no"]}
REGEX = {"type": "regex", "pattern": "ab?"}
SCHEMA = {
    "type": "json_schema",
    "schema": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": False},
}


@pytest.fixture(scope="module")
def vocab() -> HandVocab:
    return HandVocab()


def allowed(stage: Grammar, vocab: HandVocab) -> list[str]:
    return [vocab[i] for i in np.flatnonzero(stage.allowed())]


def walk(vocab: HandVocab, grammar: dict, texts: list[str]) -> list[tuple[list[str], bool]]:
    """The allowed tokens and ``complete`` before the first token and after each of ``texts``."""
    stage = Grammar(grammar, vocab.grammar_vocabulary)
    seen = [(allowed(stage, vocab), stage.complete)]
    for text in texts:
        stage.accept(vocab.id(text), None)  # type: ignore[arg-type]
        seen.append((allowed(stage, vocab), stage.complete))
    return seen


# -- what is removed, step by step (worked out by hand from HAND_TOKENS) ------------------------


def test_choice_allows_the_options_prefixes_and_the_end_only_after_a_whole_option(vocab):
    assert walk(vocab, CHOICE, ["y", "e", "s"]) == [
        (["yes", "no", "y", "n"], False),
        (["e"], False),
        (["s"], False),
        (["<eos>"], True),
    ]


def test_regex_allows_the_end_where_the_text_already_matches(vocab):
    assert walk(vocab, REGEX, ["a", "b"]) == [
        (["a", "ab"], False),
        (["<eos>", "b"], True),
        (["<eos>"], True),
    ]


def test_json_schema_walks_an_object_with_one_space_after_the_colon(vocab):
    seen = walk(vocab, SCHEMA, ["{", '"', "a", '"', ":", " ", "1", "2", "}"])
    assert seen == [
        (["{"], False),
        (['"'], False),
        (["a"], False),
        (['"'], False),
        ([":"], False),
        ([" "], False),
        (["1", "2"], False),
        (["}", "1", "2"], False),
        (["}", "1", "2"], False),
        (["<eos>"], True),
    ]
    assert all("<eos>" not in kept for kept, complete in seen if not complete)


def test_reset_starts_the_constraint_over(vocab):
    stage = Grammar(CHOICE, vocab.grammar_vocabulary)
    stage.accept(vocab.id("n"), None)  # type: ignore[arg-type]
    assert allowed(stage, vocab) == ["o"]
    stage.reset()
    assert allowed(stage, vocab) == ["yes", "no", "y", "n"]


# -- in the chain: candidates, trace, order -------------------------------------------------------


def uniform() -> np.ndarray:
    return np.zeros(len(HAND_TOKENS))


def test_the_chain_keeps_only_allowed_tokens_and_the_trace_names_the_grammar(vocab):
    logits = uniform()
    logits[vocab.id("x")] = 5.0  # the model's favourite is forbidden
    chain = SamplerChain(SamplingParams(grammar=CHOICE, temperature=1.0), token_texts=vocab)
    trace = chain.step(logits, [], ScriptedRng(0.0), top_n=3)
    assert [(s.name, s.kept) for s in trace.stages] == [("grammar", 4)]
    assert trace.removed_by(vocab.id("x")) == "grammar"
    assert trace.removed_by(vocab.id("yes")) is None
    assert vocab[trace.token] in ("yes", "no", "y", "n")
    final = chain.distribution(logits)  # (pure: the chain has moved on to after the token)
    assert {vocab[i] for i in np.flatnonzero(final)} <= {"e", "s", "o", "<eos>"}


def test_greedy_with_a_grammar_takes_the_best_allowed_token_each_step(vocab):
    logits = uniform()
    logits[vocab.id("no")] = 1.0
    logits[vocab.id("yes")] = 2.0
    logits[0] = 9.0  # the end of sequence is most likely, but not allowed until complete
    chain = SamplerChain(SamplingParams(grammar=CHOICE, temperature=0.0), token_texts=vocab)
    picked = [chain.step(logits, [], ScriptedRng()).token for _ in range(2)]
    assert [vocab[t] for t in picked] == ["yes", "<eos>"]


def test_stages_after_the_grammar_choose_among_allowed_tokens(vocab):
    logits = uniform()
    logits[vocab.id("x")] = 5.0
    logits[vocab.id("n")] = 1.0
    chain = SamplerChain(SamplingParams(grammar=CHOICE, top_k=1, temperature=1.0), token_texts=vocab)
    trace = chain.step(logits, [], ScriptedRng(0.5))
    assert [(s.name, s.kept) for s in trace.stages] == [("grammar", 4), ("top_k", 1)]
    assert vocab[trace.token] == "n"


def test_a_stage_before_the_grammar_that_leaves_nothing_allowed_is_an_error_naming_grammar(vocab):
    logits = uniform()
    logits[vocab.id("x")] = 5.0
    order = ("top_k", "grammar", "temperature")
    chain = SamplerChain(SamplingParams(grammar=CHOICE, top_k=1, temperature=1.0, sampler_order=order), token_texts=vocab)
    with pytest.raises(ParamError) as err:
        chain.step(logits, [], ScriptedRng(0.5))
    assert err.value.param == "grammar" and "sampler_order" in err.value.message


def test_a_forced_token_the_grammar_refuses_is_an_error_naming_the_prefix(vocab):
    chain = SamplerChain(SamplingParams(grammar=CHOICE, temperature=1.0), token_texts=vocab)
    with pytest.raises(ParamError) as err:
        chain.step(uniform(), [], ScriptedRng(0.5), force=vocab.id("x"))
    assert err.value.param == "prefix_tokens"


def test_a_forced_token_the_grammar_allows_advances_it(vocab):
    chain = SamplerChain(SamplingParams(grammar=CHOICE, temperature=1.0), token_texts=vocab)
    chain.step(uniform(), [], ScriptedRng(0.5), force=vocab.id("n"))
    assert [vocab[i] for i in np.flatnonzero(chain.distribution(uniform()))] == ["o"]


def test_a_chain_without_the_vocabulary_refuses_a_grammar():
    with pytest.raises(ParamError) as err:
        SamplerChain(SamplingParams(grammar=CHOICE))
    assert err.value.param == "grammar"


# -- the parameter ------------------------------------------------------------------------------


def test_the_grammar_round_trips_through_plain_data():
    for grammar in (CHOICE, REGEX, SCHEMA):
        params = SamplingParams.from_dict({"grammar": grammar})
        assert isinstance(params.grammar, GrammarSpec)
        assert params.to_dict()["grammar"] == grammar
        assert SamplingParams.from_dict(params.to_dict()) == params
        assert params.enabled_stages() == ("grammar",)
    assert SamplingParams().grammar is None and SamplingParams().to_dict()["grammar"] is None
    assert not SamplingParams().stage_enabled("grammar")


BAD = [
    ("yes", "grammar", "must be an object"),
    ({"type": "lark"}, "grammar.type", "must be one of"),
    ({"type": "regex"}, "grammar.pattern", "needs 'pattern'"),
    ({"type": "regex", "pattern": "[a-"}, "grammar.pattern", "unclosed character class"),
    ({"type": "regex", "pattern": ""}, "grammar.pattern", "non-empty string"),
    ({"type": "regex", "pattern": "a", "schema": {}}, "grammar.schema", "takes only"),
    ({"type": "json_schema", "schema": {"type": "objekt"}}, "grammar.schema", "objekt"),
    ({"type": "json_schema", "schema": {"$ref": "#/nowhere"}}, "grammar.schema", "does not exist"),
    ({"type": "json_schema", "schema": "{}"}, "grammar.schema", "must be a JSON Schema object"),
    ({"type": "choice", "options": []}, "grammar.options", "1 to"),
    ({"type": "choice", "options": ["a", "b", ""]}, "grammar.options[2]", "non-empty string"),
    ({"type": "choice", "options": ["a", 3]}, "grammar.options[1]", "non-empty string"),
]


@pytest.mark.parametrize("grammar, param, words", BAD)
def test_a_bad_grammar_is_refused_naming_the_field_and_what_is_wrong(grammar, param, words):
    with pytest.raises(ParamError) as err:
        SamplingParams.from_dict({"grammar": grammar})
    assert err.value.param == param and words in err.value.message


def test_beam_search_and_ignore_eos_are_refused_with_a_grammar():
    sampling = SamplingParams(grammar=CHOICE)
    with pytest.raises(ParamError) as err:
        GenerationRequest("x", sampling=sampling, loop=LoopParams(num_beams=2))
    assert err.value.param == "num_beams"
    with pytest.raises(ParamError) as err:
        GenerationRequest("x", sampling=sampling, loop=LoopParams(ignore_eos=True))
    assert err.value.param == "ignore_eos"


def test_the_what_if_inspection_starts_the_grammar_after_the_generated_tokens(vocab):
    from inference.decoding.whatif import inspect_position

    params = SamplingParams(grammar=CHOICE, temperature=1.0)
    at_start, after_n = (
        inspect_position(uniform(), [], [params], vocab, top_n=5, generated=generated)[0] for generated in ((), (vocab.id("n"),))
    )
    assert {vocab[i] for i, _ in at_start.top_final} == {"yes", "no", "y", "n"}
    assert [(vocab[i], p) for i, p in after_n.top_final] == [("o", 1.0)]
    assert after_n.trace.removed_by(vocab.id("yes")) == "grammar"
    with pytest.raises(ParamError) as err:
        inspect_position(uniform(), [], [params], vocab, top_n=5, generated=(vocab.id("x"),))
    assert err.value.param == "prefix_tokens"
