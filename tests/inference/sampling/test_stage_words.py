"""The pages' words for the stages (inference/sampling/stage_words.py): every stage has a title and
every field a label and an explanation, and static/playground/js/stage-words.js is what the
declarations make (``python -m inference.sampling.stages --write docs/sampling.md`` rewrites it)."""

from inference.sampling.stage_words import MODULE_PATH, stage_words, words_module
from inference.sampling.stages import STAGES, stage_fields


def test_the_generated_module_is_what_the_declarations_make():
    assert MODULE_PATH.read_text() == words_module(), (
        "static/playground/js/stage-words.js is stale: run python -m inference.sampling.stages --write docs/sampling.md"
    )


def test_every_stage_has_a_title_and_every_field_its_words():
    words = stage_words()
    assert list(words["titles"]) == [stage.name for stage in STAGES]
    assert all(title for title in words["titles"].values())
    assert list(words["fields"]) == list(stage_fields())
    for name, field in words["fields"].items():
        assert field["label"] and field["about"].endswith("."), name


def test_a_shared_field_takes_the_group_of_the_first_stage_that_declares_it():
    # temperature is read by the temperature and the dynamic temperature stages, both "randomness".
    assert stage_words()["fields"]["temperature"]["group"] == "randomness"
    assert stage_words()["fields"]["logit_bias"]["group"] is None
