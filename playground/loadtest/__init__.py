"""Load tools for any deployment, run by ``python manage.py loadtest`` (docs/loadtest.md):
``burst`` (N websocket clients generating at once, every stream checked) and ``soak`` (mixed
traffic for minutes while the server's resources are watched). Clients of a server, they import
nothing of this project's server side."""
