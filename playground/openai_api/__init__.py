"""The OpenAI-compatible HTTP API (``/v1/``) over the same channel layer and workers as the websocket.

- ``errors``: OpenAI's error shape and statuses;
- ``translate``: an OpenAI request body → our ``generate`` frame → the same ``frames`` parser;
- ``worker_call``: one request's round trip to a worker over the channel layer, watched for liveness;
- ``shapes``: our events → OpenAI's response objects and stream chunks;
- ``views``: the endpoints; ``auth``: optional API keys and CORS;
- ``models``: ``ApiKey`` (this is a Django app, label ``openai_api``), made with ``manage.py apikey``.

docs/openai-api.md describes the API.
"""
