"""The draft sources a run's ``speculative.draft`` names: prompt lookup, or a draft model (a model
directory built beside the served one, ``loop_params.DRAFT_MODELS``) loaded on first use.

A draft model must speak the served model's vocabulary: it is refused (``speculative.draft``) when
it is not built, does not load, or is another model or vocabulary than the one it drafts for. Each
run gets a ``ModelDraft`` of its own (its own decoder state and random stream) on the shared
session; its chain is the run's sampler chain without the grammar stage, so q follows p closely
(any q keeps the output exact).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from inference.decoding.loop_params import DRAFT_MODELS, SpeculativeParams
from inference.errors import ParamError
from inference.runtime import Runtime
from inference.sampling import SamplingParams
from inference.speculative.drafts import DraftSource, PromptLookup
from inference.speculative.model_draft import ModelDraft


class DraftSources:
    """Makes each run's draft source; draft models come from ``models_root`` through ``load``
    (a model directory → its runtime, loaded with ``spinning=False``: it takes turns with the
    target on the same cores), for runs of ``target``. Without ``models_root`` only prompt
    lookup is served."""

    def __init__(
        self, target: Runtime | None = None, models_root: Path | None = None, load: Callable[[Path], Runtime] | None = None
    ) -> None:
        self.target = target
        self.models_root = models_root
        self.load = load
        self._models: dict[str, Runtime] = {}
        self._lock = threading.Lock()

    def new(self, params: SpeculativeParams, sampling: SamplingParams, seed: int) -> DraftSource:
        """The draft source for one run (``sampling``: the run's chain; ``seed``: its seed)."""
        if params.draft == PromptLookup.name:
            return PromptLookup()
        model = self.model(params.draft)
        return ModelDraft(model.decoder, replace(sampling, grammar=None), seed)

    def model(self, name: str) -> Runtime:
        """Draft model ``name``, loaded once; a ``ParamError`` on ``speculative.draft`` when it cannot serve."""
        with self._lock:
            if name not in self._models:
                self._models[name] = self._load(name)
            return self._models[name]

    def _load(self, name: str) -> Runtime:
        if name not in DRAFT_MODELS or self.models_root is None or self.load is None or self.target is None:
            raise ParamError("speculative.draft", f"speculative.draft {name!r}: this server has no draft model of that name")
        directory = self.models_root / DRAFT_MODELS[name]
        try:
            model = self.load(directory)
        except Exception as error:  # noqa: BLE001 — not built, or broken: the run is refused by field
            raise ParamError(
                "speculative.draft", f"speculative.draft {name!r}: the draft model could not be loaded ({error})"
            ) from None
        target = self.target
        if model.info.name != target.info.name or model.shape.vocab_size != target.shape.vocab_size:
            raise ParamError(
                "speculative.draft",
                f"speculative.draft {name!r} is {model.info.name} ({model.shape.vocab_size} tokens), "
                f"not a draft for {target.info.name} ({target.shape.vocab_size} tokens)",
            )
        return model
