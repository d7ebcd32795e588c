"""The web edge: what faces clients and hands their requests to the workers.

- ``consumers`` (the ``/ws/generate/`` websocket) and ``routing``; ``frames`` (client frames parsed
  once into typed jobs) over ``strict_json`` (client text read as JSON, no NaN, no deep nesting:
  the HTTP API reads its bodies with it too); ``param_facts`` (every parameter's facts as the JSON
  Schema the pages and the HTTP API's parameter table read); ``origin`` and ``security`` (which pages and sockets may talk to us);
- ``submission`` (one front door's requests to the workers: admission, lease, send, replies,
  cancels), used by the websocket and by the HTTP API (``playground.openai_api``) alike; with
  ``client_limits``, ``waiting_line`` (a connection's view of the line) and ``watchdog`` (the front
  door's half of liveness);
- ``health`` (``/health``, ``/ready``, ``/metrics``), ``load`` (``/api/load``) and ``metrics``.

It never imports ``playground.worker``: the two meet only in ``playground.wire`` (checked by
``lint-imports``).
"""
