"""``manage.py apikey create NAME | revoke PREFIX | list``: bearer keys for the OpenAI-compatible API.

A key is shown once, when it is made; only its sha256 is stored. Keys are checked only when
``PLAYGROUND_API_KEYS_REQUIRED=1`` (docs/openai-api.md).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from playground.openai_api.models import ApiKey


class Command(BaseCommand):
    help = "Create, revoke or list API keys for /v1/ (the OpenAI-compatible API)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="make a key; prints it once")
        create.add_argument("name", help="what the key is for")
        revoke = actions.add_parser("revoke", help="revoke the key whose prefix (as listed) is given")
        revoke.add_argument("prefix")
        actions.add_parser("list", help="every key: prefix, name, created, revoked")

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            name = options["name"].strip()
            if not name:
                raise CommandError("a key needs a name")
            key, secret = ApiKey.create(name)
            self.stdout.write(secret)
            self.stderr.write(f"key {key.prefix} ({name}) created; it is not shown again")
        elif action == "revoke":
            prefix = options["prefix"]
            keys = list(ApiKey.objects.filter(prefix=prefix, revoked_at__isnull=True))
            if not keys:
                raise CommandError(f"no active key has the prefix {prefix!r} (see `manage.py apikey list`)")
            for key in keys:
                key.revoked_at = timezone.now()
                key.save(update_fields=["revoked_at"])
            self.stdout.write(f"revoked {len(keys)} key(s) {prefix}")
        else:
            for key in ApiKey.objects.order_by("created_at"):
                state = f"revoked {key.revoked_at:%Y-%m-%d %H:%M}" if key.revoked_at else "active"
                self.stdout.write(f"{key.prefix}\t{key.name}\t{key.created_at:%Y-%m-%d %H:%M}\t{state}")
