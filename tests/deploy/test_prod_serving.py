"""The production settings serving HTTP: static files from `collectstatic` through WhiteNoise, the
HTTPS redirect and HSTS behind the proxy, and probes that answer any address over plain HTTP."""

from __future__ import annotations

import json

import pytest

from tests.deploy.helpers import manage, prod_env, run_python

# Runs in a child process under the prod settings; prints what the test checks.
REQUESTS = r"""
import json, re
from django.test import Client

proxied = Client(headers={"host": "play.example", "x-forwarded-proto": "https"})
out = {}
page = proxied.get("/")
out["page"] = page.status_code
out["hsts"] = page.get("Strict-Transport-Security")
main_js = re.search(r'src="(/static/playground/js/main\.[0-9a-f]{12}\.js)"', page.content.decode()).group(1)
script = proxied.get(main_js, headers={"accept-encoding": "gzip"})
out["script"] = [script.status_code, script.get("Cache-Control"), script.get("Content-Encoding")]
body = b"".join(script.streaming_content)
import gzip
out["imports_hashed"] = bool(re.search(rb'from "\./[a-z-]+\.[0-9a-f]{12}\.js"', gzip.decompress(body)))
out["plain_http"] = [Client(headers={"host": "play.example"}).get("/").status_code,
                     Client(headers={"host": "play.example"}).get("/").get("Location")]
out["unknown_host"] = Client(headers={"host": "10.1.2.3:8000"}).get("/").status_code
out["probe_by_address"] = Client(headers={"host": "10.1.2.3:8000"}).get("/health").status_code
out["metrics_by_address"] = Client(headers={"host": "10.1.2.3:8000"}).get("/metrics").status_code
out["climb"] = proxied.get("/static/../manage.py").status_code
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def served(tmp_path_factory) -> dict:
    state = tmp_path_factory.mktemp("prod-state")
    env = prod_env(state)
    collected = manage("collectstatic", "--noinput", "-v", "0", env=env)
    assert collected.returncode == 0, collected.stderr
    result = run_python(REQUESTS, env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_page_behind_the_proxy_with_hsts(served):
    assert served["page"] == 200
    assert served["hsts"] == "max-age=31536000; includeSubDomains; preload"


def test_static_files_are_hashed_compressed_and_cached_for_good(served):
    status, cache_control, encoding = served["script"]
    assert status == 200 and encoding == "gzip"
    assert "immutable" in cache_control and "max-age=315360000" in cache_control
    assert served["imports_hashed"]  # module imports point at hashed neighbours too


def test_plain_http_is_redirected_and_unknown_hosts_refused(served):
    assert served["plain_http"] == [301, "https://play.example/"]
    assert served["unknown_host"] == 400


def test_probes_answer_by_address_over_plain_http(served):
    assert served["probe_by_address"] == 200 and served["metrics_by_address"] == 200


def test_static_paths_that_climb_are_not_found(served):
    assert served["climb"] == 404
