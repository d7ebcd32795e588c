"""A run's tree: the run and every saved branch under it (its ``branches``, theirs, and so on),
each with where it left its parent (``branch_index``) and what it changed there: an alternative
picked, text edited (``typed_tokens``), settings changed (docs/runs.md). ``/tree/<id>`` draws it,
``/tree/<id>.json`` exports it (``schema.tree_export``)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.urls import reverse

from playground.runs.models import Run
from playground.runs.token_rows import sample_rows
from playground.wire.token_event import TokenEvent

MAX_TREE_RUNS = 256  # a tree's runs, root included: what one page draws and one file holds
# What every branch sets from its parent by design: the seed, the lengths (counted after its own
# prefix) and one text (no samples, no beams). Not "changes".
FOLLOWS_PARENT = frozenset({"seed", "max_tokens", "min_tokens", "n", "num_beams"})


@dataclass(frozen=True)
class Node:
    run: Run
    depth: int
    changes: tuple[dict[str, Any], ...]
    children: tuple[Node, ...]

    @property
    def described(self) -> list[str]:
        """Its changes in words (the tree page's)."""
        return [describe(change) for change in self.changes] or ["continued, nothing changed"]


def tree_runs(root: Run) -> list[Run]:
    """``root`` and every run under it, depth first, siblings oldest first; at most ``MAX_TREE_RUNS``."""
    children: dict[str, list[Run]] = {}
    seen = {root.id}  # an imported comparison can link two runs as each other's parent: a cycle
    frontier = [root.id]
    while frontier and len(seen) < MAX_TREE_RUNS:
        found = Run.objects.filter(parent_id__in=frontier).exclude(pk__in=seen).order_by("created_at", "id")
        level = list(found[: MAX_TREE_RUNS - len(seen)])
        for run in level:
            children.setdefault(run.parent_id, []).append(run)
            seen.add(run.id)
        frontier = [run.id for run in level]
    ordered: list[Run] = []

    def walk(run: Run) -> None:
        ordered.append(run)
        for child in children.get(run.id, []):
            walk(child)

    walk(root)
    return ordered


def root_of(run: Run) -> Run:
    """The run at the top of ``run``'s tree (its parent's parent, and so on), at most
    ``MAX_TREE_RUNS`` steps up."""
    start = run
    for _ in range(MAX_TREE_RUNS):
        if run.parent_id is None:
            break
        if run.parent_id == start.id:  # a cycle (see tree_runs): the run itself heads its tree
            return start
        parent = Run.objects.filter(pk=run.parent_id).first()
        if parent is None:
            break
        run = parent
    return run


def tree_of(root: Run) -> Node:
    """The tree as nested nodes, each with its changes from its parent."""
    runs = tree_runs(root)
    below: dict[str, list[Run]] = {}
    for run in runs[1:]:
        below.setdefault(run.parent_id, []).append(run)

    def node(run: Run, parent: Run | None, depth: int) -> Node:
        kids = tuple(node(child, run, depth + 1) for child in below.get(run.id, []))
        return Node(run, depth, () if parent is None else changes(parent, run), kids)

    return node(root, None, 0)


def changes(parent: Run, child: Run) -> tuple[dict[str, Any], ...]:
    """What ``child`` changed where it left ``parent``: ``edit`` (the text typed), ``alternative``
    (the token forced in place of the parent's), ``settings`` (each changed parameter, parent's
    value then child's); none when it only continued the same text."""
    found: list[dict[str, Any]] = []
    rows = sample_rows(child.tokens)
    prefix = len(child.prefix_tokens)
    if child.typed_tokens:
        typed = [row for row in rows if prefix - child.typed_tokens <= row.index < prefix]
        found.append({"kind": "edit", "text": "".join(row.text for row in typed), "tokens": child.typed_tokens})
    elif child.branch_index is not None and prefix == child.branch_index + 1:
        picked = _at(rows, child.branch_index)
        before = _at(sample_rows(parent.tokens), child.branch_index)
        if picked is not None and (before is None or before.id != picked.id):
            found.append({"kind": "alternative", "token": picked.token, "id": picked.id})
    before, after = parent.parameters(), child.parameters()
    params = {
        key: [before.get(key), after.get(key)]
        for key in sorted(set(before) | set(after))
        if key not in FOLLOWS_PARENT and before.get(key) != after.get(key)
    }
    if params:
        found.append({"kind": "settings", "params": params})
    return tuple(found)


def describe(change: dict[str, Any]) -> str:
    if change["kind"] == "edit":
        count = change["tokens"]
        return f"text edited: typed {json.dumps(change['text'], ensure_ascii=False)} ({count} token{'s' * (count != 1)})"
    if change["kind"] == "alternative":
        return f"alternative picked: {json.dumps(change['token'], ensure_ascii=False)} (id {change['id']})"
    shown = (f"{key} {_value(old)} → {_value(new)}" for key, (old, new) in change["params"].items())
    return "settings changed: " + ", ".join(shown)


def _value(value: Any) -> str:
    return "off" if value is None else json.dumps(value, ensure_ascii=False)


def _at(rows: list[TokenEvent], index: int) -> TokenEvent | None:
    return next((row for row in rows if row.index == index), None)


def flattened(tree: Node) -> list[Node]:
    """Every node, depth first."""
    return [tree, *(node for child in tree.children for node in flattened(child))]


def tree_dict(tree: Node) -> dict[str, Any]:
    """The tree as data: its root's id and every node, depth first, each with its parent, where it
    left it, its changes, status, seed (exact, as a string) and a short text."""
    return {"root": tree.run.id, "nodes": [_node_dict(node) for node in flattened(tree)]}


def _node_dict(node: Node) -> dict[str, Any]:
    run = node.run
    return {
        "id": run.id,
        "parent_run": run.parent_id if node.depth else None,
        "branch_index": run.branch_index if node.depth else None,
        "depth": node.depth,
        "changes": list(node.changes),
        "status": run.status,
        "reason": run.reason or None,
        "seed": str(int(run.seed)),
        "tokens": len(sample_rows(run.tokens)),
        "text": run.text[:300],
        "url": reverse("runs:run", args=[run.id]),
    }
