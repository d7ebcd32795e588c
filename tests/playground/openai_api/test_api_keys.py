"""``ApiKey`` (the HTTP API's own model) and ``manage.py apikey``, on the test database."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from playground.openai_api.models import API_KEY_PREFIX, ApiKey, hash_api_key

pytestmark = pytest.mark.django_db


def _apikey(*args: str) -> str:
    out = StringIO()
    call_command("apikey", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_a_key_is_shown_once_and_only_its_hash_is_kept():
    key, secret = ApiKey.create("course")
    assert secret.startswith(API_KEY_PREFIX) and len(secret) > 40
    assert key.key_hash == hash_api_key(secret) and secret not in (key.key_hash, key.prefix)
    assert key.prefix == secret[: len(API_KEY_PREFIX) + 8]
    assert ApiKey.valid(secret) and not ApiKey.valid(secret[:-1])


def test_the_command_creates_lists_and_revokes_by_prefix():
    secret = _apikey("create", "notebook").strip()
    assert ApiKey.valid(secret)
    listing = _apikey("list")
    assert f"{secret[:11]}\tnotebook\t" in listing and "\tactive" in listing and secret not in listing
    assert _apikey("revoke", secret[:11]).strip() == f"revoked 1 key(s) {secret[:11]}"
    assert not ApiKey.valid(secret)
    assert "\trevoked " in _apikey("list")
    with pytest.raises(CommandError, match="no active key has the prefix"):
        _apikey("revoke", secret[:11])
    with pytest.raises(CommandError, match="a key needs a name"):
        _apikey("create", "  ")
