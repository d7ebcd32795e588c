"""A tiny randomly initialised Gemma 3 decoder, built through Gemma's recipe, for fast build tests.

Gemma-shaped where it matters: one KV head shared by four query heads, QK-norm, norms stored as
1 + w, GELU-tanh, embedding scale √hidden, tied embeddings, and sliding-window layers (window 8)
around one global layer with two rotary bases; its tokenizer is a small SentencePiece-BPE
vocabulary built by ``gguf_tokenizer`` exactly as the real one is built from the GGUF (so no
package is needed). Having no GGUF blocks, its weights stay fp32 (Gemma's recipe requantizes
nothing). Its text is gibberish.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .. import model_dir as md
from ..models import GEMMA, ModelEntry, register
from . import gguf_tokenizer as gt
from . import steps
from .pipeline import ensure_model
from .progress import Progress
from .source import random_weights, source_for

TINY_GEMMA_NAME = "tiny-random-gemma3"
SLIDING_WINDOW = 8


def tiny_vocab() -> gt.GgufVocab:
    """Specials, a few user-defined tokens, the 256 byte tokens, ASCII characters and some merges."""
    tokens = ["<pad>", "<eos>", "<bos>", "<unk>", "<start_of_turn>", "<end_of_turn>", "\n", "\n\n", "  ", "   "]
    types = [gt.CONTROL] * 6 + [gt.USER_DEFINED] * 4
    tokens += [f"<0x{b:02X}>" for b in range(256)]
    types += [gt.BYTE] * 256
    chars = [gt.SPACE] + [chr(c) for c in range(33, 127)]
    merged = ["▁t", "he", "▁the", "in", "▁a", "er", "on", "▁c", "ap", "it", "al", "▁of", "▁is", "▁cap", "ital", "▁capital"]
    normal = chars + merged
    tokens += normal
    types += [gt.NORMAL] * len(normal)
    scores = [-1000.0] * 10 + [0.0] * 256 + [-float(i) for i in range(len(normal))]
    # Merges rank by score: the merged tokens come after the characters, best first.
    for i, token in enumerate(merged):
        scores[tokens.index(token)] = -1.0e-3 * (i + 1)
    return gt.GgufVocab(
        model="llama",
        tokens=tokens,
        scores=scores,
        types=types,
        bos_id=2,
        eos_id=1,
        pad_id=0,
        unk_id=3,
        add_bos=True,
        add_space_prefix=False,
    )


def tiny_config(vocab_size: int) -> dict[str, Any]:
    """Gemma 3's configuration, shrunk: 3 layers (sliding, global, sliding), head dim 16, window 8."""
    return {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 3,
        "num_attention_heads": 4,
        "num_key_value_heads": 1,
        "head_dim": 16,
        "query_pre_attn_scalar": 16,
        "layer_types": ["sliding_attention", "full_attention", "sliding_attention"],
        "sliding_window": SLIDING_WINDOW,
        "max_position_embeddings": 256,
        "rope_theta": 1_000_000.0,
        "rope_local_base_freq": 10_000.0,
        "rms_norm_eps": 1e-6,
        "hidden_activation": "gelu_pytorch_tanh",
        "vocab_size": vocab_size,
        "tie_word_embeddings": True,
        "bos_token_id": 2,
        "eos_token_id": 1,
        "pad_token_id": 0,
    }


class TinyGemmaSource:
    """Random weights from ``torch.manual_seed(seed)`` with :func:`tiny_config`, the tiny vocabulary."""

    gguf_weights = None

    def __init__(self, seed: int = 0, entry: ModelEntry | None = None) -> None:
        self.entry = entry or TINY_GEMMA  # another entry: a model with this source and its own recipe
        self.seed = seed
        self.vocab = tiny_vocab()
        self.config = tiny_config(len(self.vocab.tokens))

    def describe(self) -> dict[str, Any]:
        fingerprint = {"seed": self.seed, "config": self.config, "tokens": self.vocab.tokens}
        return random_weights("random", self.seed, self.config, fingerprint, None)

    def write_checkpoint(self, dest: Path, verbosity: int = 1) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        gt.build_tokenizer(self.vocab).save(str(dest / md.TOKENIZER_FILE))
        model = random_model(self.config, self.seed)
        model.save_pretrained(dest)


# Registered as every model is: Gemma's recipe, random weights, no license (nothing borrowed); a
# build-only model (no catalogue words: never served).
TINY_GEMMA = register(
    ModelEntry(
        id=TINY_GEMMA_NAME,
        license="none: random weights",
        source=TinyGemmaSource,
        recipe=GEMMA.recipe,
    )
)


def random_model(config: dict[str, Any], seed: int):
    """The transformers ``Gemma3ForCausalLM`` with ``config`` and weights from ``torch.manual_seed(seed)``.

    The norms' weights are drawn too (transformers initialises them to 0, i.e. a scale of 1), so
    a wrong ``1 + w`` shows.
    """
    steps.go_offline()
    import torch  # heavy, the build extra; after go_offline, which must precede transformers' import
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig  # the build extra

    torch.manual_seed(seed)
    model = Gemma3ForCausalLM(Gemma3TextConfig(**config)).eval()
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if "norm" in name:
                parameter.normal_(0.0, 0.5)
    return model


def build_tiny_gemma(out_dir: Path, seed: int = 0, *, force: bool = False, progress: Progress | None = None) -> Path:
    """Build (or find up to date) the tiny Gemma model in ``out_dir``; returns ``out_dir``."""
    return ensure_model(Path(out_dir), progress, force=force, source=source_for(TINY_GEMMA, seed=seed))
