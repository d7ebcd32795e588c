"""The page's reading of the served models (static/shared/js/models.js), run in Node on the list
the server itself answers (``GET /api/models``, built here by the view's own code): a model is
found by its id or its manifest name in any case, its variant and chat availability in words."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.js import module_url, run_js

SCRIPT = f"""
const m = await import("{module_url("shared/js/models.js")}");
const {{ models }} = INPUT;
console.log(JSON.stringify({{
  found: ["gemma-3-270m", "GEMMA-3-270M", "SmolLM2-135M-Instruct", "smollm2-135m-instruct", "gpt-4", "", null]
    .map((key) => m.findModel(models, key)?.id ?? null),
  options: models.map(m.optionText),
  variants: models.map(m.variantText),
  chat: models.map(m.chatUnavailable),
}}));
"""


@pytest.fixture(scope="module")
def served(django_db_blocker) -> dict:
    with django_db_blocker.unblock():
        response = Client().get("/api/models")
    assert response.status_code == 200
    return json.loads(response.content)


def test_models_are_found_by_id_or_manifest_name_and_described(served):
    ids = [m["id"] for m in served["models"]]
    if "gemma-3-270m" not in ids:
        pytest.fail(f"the test settings serve {ids}: both models are needed here")
    result = run_js(SCRIPT, served)
    assert result["found"] == ["gemma-3-270m", "gemma-3-270m", "smollm2-135m-instruct", "smollm2-135m-instruct", None, None, None]
    by_id = dict(zip(ids, range(len(ids)), strict=True))
    gemma, smollm = by_id["gemma-3-270m"], by_id["smollm2-135m-instruct"]
    assert result["options"][gemma] == "Gemma 3 270M (base) · base"
    assert result["chat"][smollm] is None
    assert result["chat"][gemma] == served["models"][gemma]["chat"]["reason"]
    model = served["models"][gemma]
    expected = (
        f"{model['variant']}: {model['variant_note']}" if model["built"] else "not built yet: its requests fail until it is built"
    )
    assert result["variants"][gemma] == expected
