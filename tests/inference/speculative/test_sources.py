"""Draft sources by name: prompt lookup always; a draft model only where it is built beside the
served model and speaks its vocabulary, else refused on ``speculative.draft`` before the run starts."""

from __future__ import annotations

import pytest

from inference.decoding.generation import GenerationRequest, run
from inference.decoding.loop_params import DRAFT_MODELS, SpeculativeParams
from inference.errors import ParamError
from inference.model_dir import default_model_dir
from inference.runtime import load_runtime
from inference.sampling import SamplingParams
from inference.speculative import DraftSources, ModelDraft, PromptLookup

FAST = SpeculativeParams("fast", 2)


def refusal(sources: DraftSources) -> ParamError:
    with pytest.raises(ParamError) as caught:
        sources.new(FAST, SamplingParams(), 0)
    assert caught.value.param == "speculative.draft"
    return caught.value


def test_prompt_lookup_needs_no_model():
    assert isinstance(DraftSources().new(SpeculativeParams(), SamplingParams(), 0), PromptLookup)


def test_a_draft_model_that_is_not_built_is_refused_by_field(tiny_runtime, tmp_path):
    assert "no draft model" in refusal(DraftSources()).message
    assert "could not be loaded" in refusal(DraftSources(tiny_runtime, tmp_path, load_runtime)).message


def test_a_run_naming_it_is_refused_before_it_starts(tiny_runtime, tmp_path):
    request = GenerationRequest("x", speculative=FAST)
    with pytest.raises(ParamError) as caught:
        next(run(tiny_runtime, request, drafts=DraftSources(tiny_runtime, tmp_path, load_runtime)))
    assert caught.value.param == "speculative.draft"


FAST_DIR = default_model_dir().parent / DRAFT_MODELS["fast"]


@pytest.mark.real_model
@pytest.mark.skipif(not (FAST_DIR / "manifest.json").is_file(), reason=f"the fast draft model is not built in {FAST_DIR}")
def test_the_fast_build_drafts_for_the_real_model_only(tiny_runtime, real_runtime):
    root = default_model_dir().parent
    assert isinstance(DraftSources(real_runtime, root, load_runtime).new(FAST, SamplingParams(), 0), ModelDraft)
    assert "not a draft for" in refusal(DraftSources(tiny_runtime, root, load_runtime)).message
