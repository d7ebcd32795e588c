"""A run's whole tree of branches as one permalink (``/tree/<id>``) and one export
(``token-playground.tree``): runs made by the worker's own generation path on the tiny model, a
root with an alternative picked, an edit typed under that branch and a branch with other settings."""

from __future__ import annotations

import json

import pytest

from playground.runs.models import Run
from playground.runs.token_rows import sample_rows
from tests.playground.runs.test_round_trip import IDENTITY, PARAMS, generate, run_id_of

pytestmark = pytest.mark.django_db(databases=["default", "postgres"])


@pytest.fixture
def tree(tiny_runtime, db_alias) -> dict[str, str]:
    """name → run id: root; picked (an alternative at token 2); edit (under picked, typed text at
    token 3); hotter (root's first token, then temperature 1.3)."""
    root = run_id_of(generate(tiny_runtime, "root"))
    ids = [row.id for row in sample_rows(Run.objects.get(pk=root).tokens)]
    other = ids[1] + 1  # any token but the one the root chose
    picked = run_id_of(generate(tiny_runtime, "picked", prefix_tokens=[ids[0], other], parent_run=root, branch_index=1))
    picked_ids = [row.id for row in sample_rows(Run.objects.get(pk=picked).tokens)]
    edit = run_id_of(
        generate(tiny_runtime, "edit", prefix_tokens=[*picked_ids[:2], 7, 8], typed_tokens=2, parent_run=picked, branch_index=2)
    )
    hotter = run_id_of(
        generate(
            tiny_runtime, "hotter", prefix_tokens=ids[:1], parent_run=root, branch_index=1, params=PARAMS | {"temperature": 1.3}
        )
    )
    return {"root": root, "picked": picked, "edit": edit, "hotter": hotter, "other": str(other)}


def test_the_tree_json_holds_every_branch_with_where_it_left_and_what_it_changed(client, tree):
    answer = client.get(f"/tree/{tree['root']}.json")
    assert answer.status_code == 200
    data = answer.json()
    assert (data["schema"], data["version"]) == ("token-playground.tree", 3)
    nodes = data["tree"]["nodes"]
    assert [n["id"] for n in nodes] == [tree["root"], tree["picked"], tree["edit"], tree["hotter"]]  # depth first
    assert [n["depth"] for n in nodes] == [0, 1, 2, 1]
    assert [(n["parent_run"], n["branch_index"]) for n in nodes] == [
        (None, None),
        (tree["root"], 1),
        (tree["picked"], 2),
        (tree["root"], 1),
    ]
    assert nodes[0]["changes"] == []
    assert nodes[1]["changes"] == [{"kind": "alternative", "token": nodes[1]["changes"][0]["token"], "id": int(tree["other"])}]
    edit = Run.objects.get(pk=tree["edit"])
    typed = "".join(row.text for row in sample_rows(edit.tokens)[2:4])
    assert nodes[2]["changes"] == [{"kind": "edit", "text": typed, "tokens": 2}]
    assert nodes[3]["changes"] == [{"kind": "settings", "params": {"temperature": [0.9, 1.3]}}]
    assert [r["id"] for r in data["runs"]] == [n["id"] for n in nodes]
    # A branch's tree is its own subtree.
    assert [n["id"] for n in client.get(f"/tree/{tree['picked']}.json").json()["tree"]["nodes"]] == [
        tree["picked"],
        tree["edit"],
    ]


def test_the_tree_page_draws_each_node_opening_its_run_with_its_changes(client, tree):
    page = client.get(f"/tree/{tree['root']}").content.decode()
    for name in ("root", "picked", "edit", "hotter"):
        assert f'href="/r/{tree[name]}"' in page
    assert "alternative picked:" in page and "text edited: typed" in page and "settings changed: temperature 0.9 → 1.3" in page
    assert page.index(tree["edit"]) < page.index(tree["hotter"])  # the edit is drawn under its parent, picked
    # Each run's page links the whole tree, from its root.
    assert f'href="/tree/{tree["root"]}"' in client.get(f"/r/{tree['edit']}").content.decode()


def test_a_missing_or_malformed_tree_is_a_404_naming_the_id(client, db_alias):
    assert client.get("/tree/" + "x" * 22).status_code == 404
    answer = client.get("/tree/bad id.json")
    assert answer.status_code == 404 and answer.json()["error"]["param"] == "id"


def _without_identity(data: dict) -> dict:
    runs = [{k: v for k, v in run.items() if k not in (*IDENTITY, "parent_run")} for run in data["runs"]]
    nodes = [{k: v for k, v in n.items() if k not in ("id", "parent_run", "url")} for n in data["tree"]["nodes"]]
    return {"runs": runs, "nodes": nodes}


def test_export_import_export_gives_the_same_tree(client, tree):
    exported = client.get(f"/tree/{tree['root']}.json").json()
    answer = client.post("/api/runs/import", data=json.dumps(exported), content_type="application/json")
    assert answer.status_code == 201, answer.content
    made = answer.json()
    copies = [r["id"] for r in made["runs"]]
    assert made["tree_url"] == f"/tree/{copies[0]}"
    again = client.get(f"{made['tree_url']}.json").json()
    assert _without_identity(again) == _without_identity(exported)
    assert [n["id"] for n in again["tree"]["nodes"]] == copies
    assert [n["parent_run"] for n in again["tree"]["nodes"]] == [None, copies[0], copies[1], copies[0]]


@pytest.mark.parametrize(
    ("change", "param"),
    [
        (lambda d: d["runs"][2].update(parent_run="z" * 22), "runs[2].parent_run"),
        (lambda d: d["runs"][1].update(parent_run=None), "runs[1].parent_run"),
        (lambda d: d["runs"].reverse(), "runs[1].parent_run"),  # a branch before its parent
        (lambda d: d.update(runs=[]), "runs"),
        (lambda d: d["runs"][2]["request"].update(typed_tokens=9), "runs[2].request.typed_tokens"),
        (lambda d: d.pop("tree"), "tree"),
    ],
)
def test_a_bad_tree_file_is_refused_by_field_and_nothing_is_made(client, tree, change, param):
    exported = client.get(f"/tree/{tree['root']}.json").json()
    change(exported)
    before = Run.objects.count()
    answer = client.post("/api/runs/import", data=json.dumps(exported), content_type="application/json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"]["param"] == param
    assert Run.objects.count() == before


def test_deleting_a_branch_with_its_token_takes_it_out_of_the_tree(client, tree):
    exported = client.get(f"/tree/{tree['root']}.json").json()
    made = client.post("/api/runs/import", data=json.dumps(exported), content_type="application/json").json()
    picked = made["runs"][1]
    answer = client.post(
        f"/api/runs/{picked['id']}/delete",
        data=json.dumps({"delete_token": picked["delete_token"]}),
        content_type="application/json",
    )
    assert answer.status_code == 204
    nodes = client.get(f"{made['tree_url']}.json").json()["tree"]["nodes"]
    assert [n["id"] for n in nodes] == [made["runs"][0]["id"], made["runs"][3]["id"]]
    # the deleted run's branch now heads a tree of its own
    assert [n["id"] for n in client.get(f"/tree/{made['runs'][2]['id']}.json").json()["tree"]["nodes"]] == [made["runs"][2]["id"]]


def test_a_tree_of_more_runs_than_a_comparison_takes_imports_with_its_tree_url_only(client, tree, tiny_runtime):
    generate(tiny_runtime, "cooler", prefix_tokens=[], parent_run=tree["root"], branch_index=0, params=PARAMS | {"top_k": 3})
    exported = client.get(f"/tree/{tree['root']}.json").json()
    assert len(exported["runs"]) == 5
    # stored params are normalized: top_k off is 0
    assert exported["tree"]["nodes"][-1]["changes"] == [{"kind": "settings", "params": {"top_k": [0, 3]}}]
    made = client.post("/api/runs/import", data=json.dumps(exported), content_type="application/json").json()
    assert "compare_url" not in made  # a comparison takes 2 to 4 runs
    assert client.get(made["tree_url"]).status_code == 200


def test_two_runs_imported_as_each_others_parent_draw_a_finite_tree(client, tree):
    # A comparison file may name each run as the other's parent; its copies then form a cycle.
    runs = [client.get(f"/r/{tree[name]}.json").json()["run"] for name in ("root", "hotter")]
    runs[0]["parent_run"], runs[0]["branch_index"] = runs[1]["id"], 1
    comparison = {"schema": "token-playground.comparison", "version": 3, "runs": runs, "comparison": {}}
    made = client.post("/api/runs/import", data=json.dumps(comparison), content_type="application/json").json()
    first, second = (r["id"] for r in made["runs"])
    assert Run.objects.get(pk=first).parent_id == second and Run.objects.get(pk=second).parent_id == first
    assert [n["id"] for n in client.get(f"/tree/{first}.json").json()["tree"]["nodes"]] == [first, second]
    assert client.get(f"/r/{second}").status_code == 200  # its page finds the tree's head without looping
    assert client.get(f"/tree/{second}").status_code == 200
