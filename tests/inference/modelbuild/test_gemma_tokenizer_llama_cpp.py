"""Gemma's built tokenizer.json id for id against llama.cpp's own tokenizer of the same GGUF (the
issue's reference), on the unusual texts of ``fixtures/gemma_tokens.json`` (emoji, whitespace runs
up to 40 spaces, several languages and scripts, code, control-token markup) and a long text made of
them. llama.cpp reads the vocabulary alone (``vocab_only``: under a second). Skipped where the
optional ``peers`` extra (llama-cpp-python) is not installed or Gemma is not built."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from inference.model_catalog import DEFAULT_MODELS, model_dir_for
from inference.model_dir import TOKENIZER_FILE

FIXTURE = Path(__file__).parent / "fixtures" / "gemma_tokens.json"
GEMMA = "gemma-3-270m"

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python (the peers extra) is not installed"
)


@pytest.fixture(scope="module")
def ours() -> Tokenizer:
    path = model_dir_for(GEMMA, DEFAULT_MODELS) / TOKENIZER_FILE
    if not path.is_file():
        pytest.skip(f"Gemma is not built ({path})")
    return Tokenizer.from_file(str(path))


@pytest.fixture(scope="module")
def llama():
    import llama_cpp

    from inference.modelbuild.source import SourceNotFoundError, locate_gguf
    from inference.models import GEMMA

    try:
        gguf = locate_gguf(GEMMA.source)  # the GGUF the build read, joined once into .models/sources/
    except SourceNotFoundError as missing:
        pytest.skip(str(missing))
    return llama_cpp.Llama(str(gguf), vocab_only=True, verbose=False)


def texts() -> list[str]:
    cases = [case["text"] for case in json.loads(FIXTURE.read_text())["cases"]]
    return [*cases, "\n\n".join(cases)]


@pytest.mark.parametrize("text", texts(), ids=lambda text: repr(text[:24]))
def test_every_text_tokenizes_as_llama_cpp_does(ours, llama, text):
    # special=True: markup such as "<bos>" in the text is the control token, as our encode reads it
    assert ours.encode(text, add_special_tokens=False).ids == llama.tokenize(text.encode(), add_bos=False, special=True)
