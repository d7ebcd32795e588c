"""Saved runs, a Django app (label ``runs``): recording a run as it streams, storing it, the export
schema, comparison and pages.

- ``models``: ``Run``, one row per saved run (table ``playground_run``, kept from before the app).
- ``ids``: run ids and delete tokens (made, recognised, hashed); no Django.
- ``fields``: the one table of a run's fields (export key, ``Run`` column, import check,
  conversions) that recording, export, import, the pages and the summaries all use.
- ``checks``: the import's value checks, raising ``SchemaError`` with the value's path.
- ``recording``: the worker's recorder; turns a request's events into a saved ``Run``.
- ``conversation``: a chat run's messages, stored compactly, and their page fields.
- ``token_rows``: a saved token (the ``token`` event's ``TokenEvent``) ↔ its compact stored row.
- ``schema``: the versioned JSON export of a run or a comparison, and its validating import.
- ``errors``: ``NotFound``, ``BadRequest``, ``SchemaError``, ``UnencodableText``: one shape.
- ``text_check``: finds and repairs text that cannot be stored or shown (lone surrogates, U+0000).
- ``compare``: aligns 2–4 runs token by token and measures how their distributions differ.
- ``views`` / ``urls``: the permalink, comparison and history pages and their JSON endpoints.
- ``management/commands/repair_run_text``: repairs runs saved before unencodable text was refused.
"""
