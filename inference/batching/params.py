"""Continuous batching's defaults, in a module light enough for the settings to import."""

DEFAULT_MAX_BATCH = 8  # rows per step; chosen from `python -m inference.bench --concurrency` (docs/model.md)
PREFILL_CHUNK_BESIDE_DECODE = 128  # prompt tokens a joining run prefills per step while others decode
