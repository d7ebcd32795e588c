"""DATABASE_URL → settings.DATABASES (read by dj-database-url), and the errors that name the bad part."""

from __future__ import annotations

import json

import pytest

from tests.deploy.helpers import prod_env, run_python

PRINT_DATABASE = "from django.conf import settings; import json; print(json.dumps(settings.DATABASES['default'], default=str))"


def database(tmp_path, url: str | None) -> dict:
    result = run_python(PRINT_DATABASE, prod_env(tmp_path, DATABASE_URL=url))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def refusal(tmp_path, url: str) -> str:
    result = run_python(PRINT_DATABASE, prod_env(tmp_path, DATABASE_URL=url))
    assert result.returncode != 0
    return result.stderr


def test_unset_or_blank_means_sqlite_in_the_state_folder(tmp_path):
    for url in (None, "  "):
        db = database(tmp_path, url)
        assert db["ENGINE"] == "django.db.backends.sqlite3"
        assert db["NAME"] == str(tmp_path / "playground.sqlite3")


def test_full_postgres_url(tmp_path):
    db = database(tmp_path, "postgresql://play%40er:p%3Ass@db.example:5433/runs?sslmode=require")
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["USER"], db["PASSWORD"], db["HOST"], str(db["PORT"]), db["NAME"]) == (
        "play@er",
        "p:ss",
        "db.example",
        "5433",
        "runs",
    )
    assert db["OPTIONS"] == {"sslmode": "require"}
    # health-checked connections, none kept across requests (daphne serves each request on its own)
    assert db["CONN_HEALTH_CHECKS"] is True and db["CONN_MAX_AGE"] == 0


def test_socket_directory_host_keeps_its_case(tmp_path):
    db = database(tmp_path, "postgres://me@%2FRun%2Fpg/runs")
    assert db["HOST"] == "/Run/pg" and db["PORT"] == "" and db["NAME"] == "runs"


@pytest.mark.parametrize(
    "url, words",
    [
        ("mysql://x/y", "ships drivers for PostgreSQL"),
        ("postgresql://host", "must name one database"),
        ("postgresql://host:99999/db", "DATABASE_URL cannot be read"),
        ("nonsense", "DATABASE_URL cannot be read"),
    ],
)
def test_bad_urls_say_what_is_wrong(tmp_path, url, words):
    stderr = refusal(tmp_path, url)
    assert "ImproperlyConfigured" in stderr and words in stderr
