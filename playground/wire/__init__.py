"""What crosses between the web edge (``playground.edge``) and the workers (``playground.worker``),
the only modules both sides import:

- ``channel_messages``: every channel and group name, every channel-layer message and its
  constructor, and a typed job's encoding as plain data;
- ``jobs``: the typed jobs (and the one rule that splits ``params``); ``events``: the websocket
  events a worker makes and a front door passes on;
- ``liveness``: the timing both halves of liveness keep; ``channel_layer``: the Redis channel layer
  both processes configure; ``embedded``: the hook by which the web side starts the in-process
  worker that the app config provides.
"""
