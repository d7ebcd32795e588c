"""A saved run's "Open in playground" restores its prompt and every setting, so generating again
reproduces it token for token."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import Page
from websockets.sync.client import connect

from tests.e2e.playground_page import PlaygroundPage

pytestmark = pytest.mark.e2e

SETTINGS = {
    "temperature": 0.9,
    "top_k": 40,
    "min_p": 0.02,
    "seed": 9007199254740993,  # above 2^53: exact as text
    "max_tokens": 10,
    "stop": ["\n\n", "THE END"],
    "penalize_prompt": True,
    "repetition_penalty": 1.15,
    "logit_bias": {"7042": -3.5},
    "sampler_order": [  # every stage, in an order of its own (the page sends the whole order back)
        "grammar",
        "logit_bias",
        "repetition_penalty",
        "frequency_penalty",
        "presence_penalty",
        "dry",
        "no_repeat_ngram",
        "top_n_sigma",
        "dynamic_temperature",
        "top_k",
        "top_p",
        "min_p",
        "typical_p",
        "epsilon_cutoff",
        "eta_cutoff",
        "xtc",
        "mirostat",
        "temperature",
    ],
}


def saved_run(base_url: str) -> tuple[dict, list[int]]:
    """Generates one run over the websocket (not through the page) and returns its done and token ids."""
    ws_url = base_url.replace("http://", "ws://") + "/ws/generate/"
    with connect(ws_url, origin=base_url) as ws:
        ws.send(
            json.dumps(
                {
                    "type": "generate",
                    "request_id": "saved",
                    "prompt": "The best thing about autumn is",
                    "params": SETTINGS,
                    "top_n": 7,
                }
            )
        )
        tokens = []
        while True:
            event = json.loads(ws.recv(timeout=120))
            if event["type"] == "token":
                tokens.append(event["id"])
            elif event["type"] == "started":
                started = event
            elif event["type"] in ("done", "error"):
                assert event["type"] == "done", event
                return {"done": event, "started": started}, tokens


def test_open_in_playground_reproduces_the_run(page: Page, daphne_server, artifacts):
    run, token_ids = saved_run(daphne_server.url)
    run_id = run["done"]["run_id"]
    assert run_id
    page.goto(f"{daphne_server.url}/r/{run_id}")
    view = PlaygroundPage(page, daphne_server.url, artifacts)
    page.get_by_role("link", name="Open in playground").click()
    page.locator("#connection[data-connected=true]").wait_for()
    assert page.get_by_label("Prompt", exact=True).input_value() == "The best thing about autumn is"
    view.frames.clear()
    page.get_by_role("button", name="Generate").click()
    view.wait_done()
    started = view.event("started")
    assert started["params"] == run["started"]["params"]  # every normalized setting came back
    assert started["top_n"] == 7 and started["seed"] == SETTINGS["seed"]
    assert [t["id"] for t in view.events("token")] == token_ids
    view.shot("30-opened-from-saved-run")
    assert view.errors == []
