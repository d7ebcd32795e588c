"""/r/<id> tells a saved run's special tokens and its model's load as the playground does (issue 30
item 8): the page carries its model's special token ids (read off the build, as ``GET /api/models``
gives them) for the output's labels, and the time to first token says the load the run waited for
(``done.timing.load_ms``), never folding it in."""

from __future__ import annotations

import json
import re

import pytest

from tests.playground.runs.helpers import events, record

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])


def ttft(page: str) -> str:
    found = re.search(r'<dd data-stat="ttft">([^<]*)</dd>', page)
    assert found, "the page has no time to first token"
    return found.group(1)


def test_the_time_to_first_token_says_the_load_beside_it(client) -> None:
    loaded = events()
    loaded[-1] = loaded[-1] | {"timing": loaded[-1]["timing"] | {"load_ms": 2548.0}}
    assert ttft(client.get(f"/r/{record(loaded)['run_id']}").content.decode()) == "41.2 ms (after 2548 ms loading the model)"
    warm = events()
    warm[-1] = warm[-1] | {"timing": warm[-1]["timing"] | {"load_ms": None}}
    assert ttft(client.get(f"/r/{record(warm)['run_id']}").content.decode()) == "41.2 ms"
    assert ttft(client.get(f"/r/{record(events())['run_id']}").content.decode()) == "41.2 ms"  # saved before load_ms


@pytest.mark.real_model
def test_the_page_carries_its_models_special_token_ids(client) -> None:
    page = client.get(f"/r/{record(events())['run_id']}").content.decode()
    found = re.search(r'<script id="special-ids" type="application/json">([^<]*)</script>', page)
    assert found and json.loads(found.group(1)) == [[0, 16]]  # SmolLM2's build: <|endoftext|> … <empty_output>
