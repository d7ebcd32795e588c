"""API keys of the OpenAI-compatible API: bearer tokens of which only the sha256 is kept.

Made, listed and revoked with ``manage.py apikey``; checked by ``auth.check_api_key`` when
``PLAYGROUND_API_KEYS_REQUIRED=1`` (docs/openai-api.md).
"""

from __future__ import annotations

import hashlib
import secrets

from django.db import models
from django.utils import timezone

API_KEY_PREFIX = "pg-"  # every key starts so; the next 8 characters name it in listings


def hash_api_key(key: str) -> str:
    """An API key as stored: its sha256 (a key has 256 random bits, so no salt or stretching is needed)."""
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


class ApiKey(models.Model):
    """A bearer token for the OpenAI-compatible API; only its hash is kept (``manage.py apikey``)."""

    name = models.CharField(max_length=100, help_text="what the key is for (shown in listings)")
    key_hash = models.CharField(max_length=64, unique=True, help_text="sha256 of the key, hex")
    prefix = models.CharField(max_length=16, help_text="the key's first characters, to recognise it")
    created_at = models.DateTimeField(default=timezone.now)
    revoked_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # The table keeps the name it had when ``ApiKey`` lived in the ``playground`` app (migration
        # openai_api 0001): moving the model moved no data.
        db_table = "playground_apikey"

    @classmethod
    def create(cls, name: str) -> tuple[ApiKey, str]:
        """A new key and its secret, which is shown once and never stored."""
        secret = API_KEY_PREFIX + secrets.token_urlsafe(32)
        key = cls.objects.create(name=name, key_hash=hash_api_key(secret), prefix=secret[: len(API_KEY_PREFIX) + 8])
        return key, secret

    @classmethod
    def valid(cls, secret: str) -> bool:
        return cls.objects.filter(key_hash=hash_api_key(secret), revoked_at__isnull=True).exists()
