"""The production settings: refuse to start unsafe, pass `check --deploy`, log JSON lines."""

from __future__ import annotations

import json
import secrets

import pytest

from tests.deploy.helpers import manage, prod_env, run_python


def test_check_deploy_is_clean_behind_the_documented_proxy(tmp_path):
    result = manage("check", "--deploy", "--fail-level", "WARNING", env=prod_env(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


@pytest.mark.parametrize(
    "missing, words",
    [
        ("DJANGO_SECRET_KEY", "DJANGO_SECRET_KEY must be set"),
        ("DJANGO_ALLOWED_HOSTS", "DJANGO_ALLOWED_HOSTS must be set"),
    ],
)
def test_refuses_to_start_without(tmp_path, missing, words):
    result = manage("check", env=prod_env(tmp_path, **{missing: None}))
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and words in result.stderr


@pytest.mark.parametrize("key", ["dev-only-not-secret", "a" * 60])
def test_refuses_a_weak_secret_key(tmp_path, key):
    result = manage("check", env=prod_env(tmp_path, DJANGO_SECRET_KEY=key))
    assert result.returncode != 0 and "at least 50 random characters" in result.stderr


def test_secret_key_from_a_file(tmp_path):
    key = secrets.token_hex(32)
    key_file = tmp_path / "key"
    key_file.write_text(key + "\n")
    result = run_python(
        "from django.conf import settings; print(settings.SECRET_KEY)",
        prod_env(tmp_path, DJANGO_SECRET_KEY=None, DJANGO_SECRET_KEY_FILE=str(key_file)),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == key


def test_debug_cannot_be_switched_on_from_the_environment(tmp_path):
    env = prod_env(tmp_path, DEBUG="1", DJANGO_DEBUG="1", PLAYGROUND_DEBUG="1")
    result = run_python("from django.conf import settings; print(settings.DEBUG)", env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_proxy_and_cookie_settings(tmp_path):
    code = (
        "from django.conf import settings as s; import json; print(json.dumps({k: getattr(s, k) for k in ("
        "'SECURE_PROXY_SSL_HEADER', 'SECURE_SSL_REDIRECT', 'SECURE_HSTS_SECONDS', 'CSRF_COOKIE_SECURE',"
        "'SESSION_COOKIE_SECURE', 'ALLOWED_HOSTS', 'CSRF_TRUSTED_ORIGINS')}))"
    )
    env = prod_env(
        tmp_path,
        DJANGO_ALLOWED_HOSTS=" play.example, , class.example ",
        DJANGO_CSRF_TRUSTED_ORIGINS="https://play.example",
        DJANGO_HSTS_SECONDS="3600",
    )
    result = run_python(code, env)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {
        "SECURE_PROXY_SSL_HEADER": ["HTTP_X_FORWARDED_PROTO", "https"],
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 3600,
        "CSRF_COOKIE_SECURE": True,
        "SESSION_COOKIE_SECURE": True,
        "ALLOWED_HOSTS": ["play.example", "class.example"],
        "CSRF_TRUSTED_ORIGINS": ["https://play.example"],
    }


def test_a_bad_flag_is_named(tmp_path):
    result = manage("check", env=prod_env(tmp_path, DJANGO_SECURE_SSL_REDIRECT="maybe"))
    assert result.returncode != 0 and "DJANGO_SECURE_SSL_REDIRECT must be 1 or 0" in result.stderr


def test_log_lines_are_json_objects(tmp_path):
    code = "import logging; logging.getLogger('playground.test').warning('hello %s', 'there')"
    result = run_python(code, prod_env(tmp_path))
    assert result.returncode == 0, result.stderr
    line = json.loads(result.stderr.strip().splitlines()[-1])
    assert line["message"] == "hello there"
    assert (line["level"], line["logger"]) == ("WARNING", "playground.test")
    assert line["time"] and line["pid"] > 0 and line["host"]


def test_plain_http_trial_switches_the_tls_settings_off_and_check_deploy_says_so(tmp_path):
    env = prod_env(tmp_path, PLAYGROUND_HTTPS="0")
    result = manage("check", "--deploy", env=env)
    assert result.returncode == 0  # warnings only
    for check in ("security.W004", "security.W008", "security.W016"):  # HSTS, redirect, CSRF cookie
        assert check in result.stderr + result.stdout, check
