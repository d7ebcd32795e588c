"""A saved run's id and its delete token: how they are made, what an id looks like, how a token is kept.

Ids are random and unguessable (``secrets.token_urlsafe``, 128 bits: 22 characters); an id given
to the server (a permalink, an import, a branch's ``parent_run``) is 16 to 43 URL-safe characters.
The delete token is given once (``started`` / ``done``, or an import's answer) and kept only as
its sha256. No Django here: the frame parser may read these facts too.
"""

from __future__ import annotations

import hashlib
import re
import secrets

RUN_ID_BYTES = 16  # 128 random bits → 22 URL-safe characters
RUN_ID_PATTERN = r"[A-Za-z0-9_-]{16,43}"
RUN_ID_RULE = "16 to 43 characters of A–Z a–z 0–9 _ -"  # RUN_ID_PATTERN, as error messages say it
_RUN_ID = re.compile(RUN_ID_PATTERN)


def is_run_id(text: str) -> bool:
    return _RUN_ID.fullmatch(text) is not None


def new_run_id() -> str:
    return secrets.token_urlsafe(RUN_ID_BYTES)


def new_delete_token() -> str:
    return secrets.token_urlsafe(24)


def hash_delete_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def check_delete_token(token: str, token_hash: str) -> bool:
    """Whether ``token`` is the one whose sha256 is ``token_hash`` (compared in constant time)."""
    return secrets.compare_digest(token_hash, hash_delete_token(token))
