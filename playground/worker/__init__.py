"""The inference worker: takes requests off the ``inference`` channel, serves them and relays their events.

The front doors (the websocket consumer, the HTTP API) and the worker speak only through the channel
layer, in the messages documented and made in ``playground.wire.channel_messages``. Its modules, one job
each: ``consumer`` (``InferenceWorker``: takes requests and cancels, answers pings, passes events
on; ``ensure_embedded_worker``); ``intake`` (``IntakeWorker``: reads the shared channel only while
this worker has room); ``serving`` (runs each job: generations on the process's decode loop, quick
jobs on a thread of their own; ``prompt_scores`` answers a ``score``); ``heartbeat`` (the worker's
half of liveness). It never imports ``playground.edge``: the two meet only in ``playground.wire``
(checked by ``lint-imports``).

Liveness (``playground.wire.liveness``): each request carries its front door's ``lease`` token, which
the worker repeats on every message about it, and a worker holding requests sends their reply
channels an ``inference.heartbeat``, so a front door notices a worker that died.

Embedded default: the worker runs inside the server process on the in-memory channel layer, started
on the first request (``ensure_embedded_worker``, which the app config provides to the web side
through ``playground.wire.embedded``). Scale-out: point ``CHANNEL_LAYERS`` at Redis and run
``python manage.py runworker inference`` on other machines; the front doors do not change.

Continuous batching (``inference.batching.scheduler``): each worker process runs one decode loop, the
``Scheduler``, on a thread of its own, so the event loop never blocks. Up to ``MAX_BATCH`` rows
(``PLAYGROUND_MAX_BATCH``) decode as one batch per step; generations join between steps, leave
when they end, and a long prompt is prefilled in chunks between the others' steps. The loop checks
each request's cancel flag before every token and between prefill chunks; a request still waiting
for rows leaves unrun when cancelled (or when its front door goes away). Tokenizing and inspecting
have a thread of their own and never wait behind generations.
"""
