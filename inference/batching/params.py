"""Continuous batching's defaults, in a module light enough for the settings to import."""

DEFAULT_MAX_BATCH = 8  # rows per step; chosen from `python -m inference.bench --concurrency` (docs/model.md)
PREFILL_CHUNK_BESIDE_DECODE = 128  # prompt tokens a joining run prefills per step while others decode
# With no run in the batch, a woken decode loop waits this long (seconds) for the next ticket while
# tickets keep arriving, at most ADMISSION_WINDOWS_AT_MOST times, so a burst of requests (a class
# pressing Generate together, a load test) starts in one shared prefill instead of its first prompt
# alone and the rest a whole prefill later (as vLLM's scheduler delay); 0 turns it off.
ADMISSION_WINDOW_S = 0.015
ADMISSION_WINDOWS_AT_MOST = 6
# Whether a served decoder's ONNX Runtime threads spin between calls (``PLAYGROUND_INTRA_OP_SPINNING``).
# On (ONNX Runtime's own default): on the quiet 2-core machine, one process serving the websocket,
# spinning gave more tokens/s in every case (8 streams: exact 184 against 154, fast 273 against
# 221; one stream of fast 76 against 66; docs/loadtest.md, "On a quiet machine"). Off is for a
# machine whose cores other work shares: there a spinning pool thread holds a core the others need
# (8 streams cost 15.5-17.4 CPU ms a token spinning against 9.4-11.2 not, at load 7-10).
DEFAULT_SPINNING = True
