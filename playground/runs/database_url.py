"""``DATABASE_URL`` → a Django ``DATABASES`` entry. Imported by the settings: no Django imports.

Accepted: ``postgres://`` or ``postgresql://`` URLs,
``postgresql://user:password@host:port/name?sslmode=require&...``. Percent-escapes in the user,
password and name are decoded; query parameters become the driver's ``OPTIONS``. A host that is
a path (``postgresql://user@%2Fvar%2Frun%2Fpostgresql/name``) is a Unix-socket directory.
"""

from __future__ import annotations

from typing import Any, Mapping
from urllib.parse import parse_qsl, unquote, urlsplit

SCHEMES = ("postgres", "postgresql")


class DatabaseUrlError(ValueError):
    """A DATABASE_URL that cannot be used; the message says which part is wrong."""


def database_from_env(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The entry for ``DATABASE_URL``, or None when it is unset or empty."""
    url = environ.get("DATABASE_URL", "").strip()
    return parse_database_url(url) if url else None


def parse_database_url(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    if parts.scheme not in SCHEMES:
        raise DatabaseUrlError(
            f"DATABASE_URL must start with postgresql:// or postgres://, got scheme {parts.scheme!r}"
        )
    name = unquote(parts.path.lstrip("/"))
    if not name or "/" in name:
        raise DatabaseUrlError("DATABASE_URL must name one database after the host, e.g. postgresql://host/playground")
    try:
        port = parts.port
    except ValueError:
        raise DatabaseUrlError("DATABASE_URL's port must be a number from 1 to 65535") from None
    host_and_port = parts.netloc.rpartition("@")[2]
    # A percent-escaped host is a socket directory: keep its case (hostname lower-cases it).
    host = unquote(host_and_port.split(":")[0]) if "%" in host_and_port else parts.hostname or ""
    options = dict(parse_qsl(parts.query, keep_blank_values=True))
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": name,
        "USER": unquote(parts.username or ""),
        "PASSWORD": unquote(parts.password or ""),
        "HOST": host,
        "PORT": str(port) if port else "",
        "OPTIONS": options,
        "CONN_HEALTH_CHECKS": True,
    }
