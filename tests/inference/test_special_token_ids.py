"""Which ids a served model's special tokens are (``model_catalog.special_token_ids``, what
``GET /api/models`` gives the page as ``special_tokens.ids``), read off the real builds: the
tokenizer's control tokens and the catalogue's markup (Gemma's image markers, which its GGUF types
user-defined), as ranges; ordinary text (Gemma's newline runs, also user-defined) is not among them."""

from __future__ import annotations

import pytest

from inference import model_dir as md
from inference.model_catalog import describe, model_dir_for, special_token_ids
from inference.models import GEMMA


def within(ranges: list[list[int]], token_id: int) -> bool:
    return any(first <= token_id <= last for first, last in ranges)


@pytest.mark.real_model
def test_smollm2s_special_tokens_are_its_first_seventeen_ids() -> None:
    model_id = "smollm2-135m-instruct"
    model_dir = model_dir_for(model_id, [model_id])
    assert special_token_ids(model_id, model_dir) == [[0, 16]]  # <|endoftext|>, <|im_start|>, <|im_end|>, <repo_name>, …
    assert describe(model_id, model_dir)["special_tokens"]["ids"] == [[0, 16]]


@pytest.mark.gemma_model
def test_gemmas_control_tokens_and_image_markers_are_special_and_its_text_is_not() -> None:
    model_dir = md.MODELS_ROOT / GEMMA.dir_name
    if not (model_dir / md.MANIFEST_FILE).is_file():
        pytest.skip("Gemma is not built: python -m inference.modelbuild --model gemma-3-270m")
    ranges = special_token_ids("gemma-3-270m", model_dir)
    assert ranges == [[0, 106], [255999, 262143]]
    for token_id in (
        0,
        1,
        2,
        5,
        6,
        105,
        106,
        255999,
        256000,
        256001,
        262143,
    ):  # pad eos bos [multimodal] <unused0> turns, image, <unused99>
        assert within(ranges, token_id), token_id
    for token_id in (107, 108, 818, 255998):  # "\n", "\n\n" (user-defined text), "The", an ordinary piece
        assert not within(ranges, token_id), token_id
