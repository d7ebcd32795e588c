"""DATABASE_URL → DATABASES, including the errors that name the bad part."""

import pytest

from playground.runs.database_url import DatabaseUrlError, database_from_env, parse_database_url


def test_unset_means_sqlite():
    assert database_from_env({}) is None and database_from_env({"DATABASE_URL": "  "}) is None


def test_full_url():
    db = parse_database_url("postgresql://play%40er:p%3Ass@db.example:5433/runs?sslmode=require")
    assert db["ENGINE"] == "django.db.backends.postgresql"
    assert (db["USER"], db["PASSWORD"], db["HOST"], db["PORT"], db["NAME"]) == ("play@er", "p:ss", "db.example", "5433", "runs")
    assert db["OPTIONS"] == {"sslmode": "require"}


def test_socket_directory_host_keeps_its_case():
    db = parse_database_url("postgres://me@%2FRun%2Fpg/runs")
    assert db["HOST"] == "/Run/pg" and db["PORT"] == ""


@pytest.mark.parametrize("url, words", [
    ("mysql://x/y", "scheme 'mysql'"),
    ("postgresql://host", "name one database"),
    ("postgresql://host:99999/db", "port"),
])
def test_bad_urls_say_what_is_wrong(url, words):
    with pytest.raises(DatabaseUrlError, match=words):
        parse_database_url(url)
