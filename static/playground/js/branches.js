// The tree of branches: the first run of a prompt is the root; choosing an alternative (or "continue
// from here" in the what-if panel) adds a child run that forks at a token index. The tree keeps
// every run; `BranchTreeView` draws it as nested lists of buttons, each with the branch's
// cumulative log-probability under the model (Σ ln raw_prob of its tokens), and lets the user move
// between branches (mouse or Tab + Enter). An edit's branch is titled by the text typed; once the
// root is saved the whole tree has a permalink, /tree/<root id> (docs/runs.md).

import { quoteToken } from "../../shared/js/format.js";
import { typedRange } from "../../shared/js/typed.js";

export class BranchNode {
  constructor(run, parent = null, forkIndex = null, note = "") {
    this.run = run;
    this.parent = parent;
    this.forkIndex = forkIndex; // the first token index that differs from the parent
    this.note = note;
    this.children = [];
    this.id = BranchNode.next++;
  }

  static next = 1;

  get depth() {
    return this.parent ? this.parent.depth + 1 : 0;
  }
}

export class BranchTree extends EventTarget {
  constructor() {
    super();
    this.root = null;
    this.current = null;
  }

  /** Starts a new tree with `run` as its root. */
  reset(run) {
    this.root = new BranchNode(run);
    this.current = this.root;
    this.#changed();
    return this.root;
  }

  /** Adds `run` as a child of `parent` forking at `forkIndex`, and makes it current. */
  add(run, parent, forkIndex, note = "") {
    const node = new BranchNode(run, parent, forkIndex, note);
    parent.children.push(node);
    this.current = node;
    this.#changed();
    return node;
  }

  /** Takes `node` (not the root) and its subtree out; its parent becomes current. */
  remove(node) {
    if (!node.parent) return;
    node.parent.children = node.parent.children.filter((child) => child !== node);
    if (this.nodes().indexOf(this.current) === -1) this.current = node.parent;
    this.#changed();
  }

  select(node) {
    this.current = node;
    this.#changed();
  }

  /** Every node, depth first. */
  nodes() {
    const out = [];
    const walk = (node) => {
      if (!node) return;
      out.push(node);
      node.children.forEach(walk);
    };
    walk(this.root);
    return out;
  }

  find(id) {
    return this.nodes().find((n) => n.id === id) ?? null;
  }

  /** Redraw after a node's run received events. */
  touch() {
    this.#changed();
  }

  #changed() {
    this.dispatchEvent(new Event("change"));
  }
}

/** Nested lists of buttons, one per branch. */
export class BranchTreeView {
  constructor(root, tree, onSelect) {
    this.root = root;
    this.tree = tree;
    root.addEventListener("click", (e) => {
      const button = e.target.closest("button[data-node]");
      if (button) onSelect(this.tree.find(Number(button.dataset.node)));
    });
    tree.addEventListener("change", () => this.render());
  }

  render() {
    const { root } = this.tree;
    this.root.closest("section")?.toggleAttribute("data-empty", !root || root.children.length === 0);
    if (!root) {
      this.root.replaceChildren();
      return;
    }
    const list = document.createElement("ul");
    list.className = "branch-tree";
    list.append(this.#item(root));
    this.root.replaceChildren(list);
    const saved = root.run.done?.run_id;
    if (saved && root.children.length) {
      // Every branch of a saved root is saved as its branch: the whole tree has one address.
      const link = document.createElement("a");
      link.href = `/tree/${encodeURIComponent(saved)}`;
      link.dataset.action = "tree-permalink";
      link.textContent = "The whole tree (permalink)";
      const line = document.createElement("p");
      line.append(link);
      this.root.append(line);
    }
  }

  #item(node) {
    const item = document.createElement("li");
    const button = document.createElement("button");
    button.type = "button";
    button.className = "branch";
    button.dataset.node = String(node.id);
    const current = node === this.tree.current;
    if (current) button.setAttribute("aria-current", "true");
    const run = node.run;
    const title = document.createElement("span");
    title.className = "branch-title";
    if (!node.parent) {
      title.textContent = "Original run";
    } else {
      const typed = typedRange(run.request);
      const fork = run.token(node.forkIndex);
      const typedText = run.tokens.slice(typed.from, typed.to).map((t) => t.text).join("");
      const text = typed.to > typed.from ? `typed ${quoteToken(typedText)}` : fork ? quoteToken(fork.token) : "…";
      title.textContent = `Token ${node.forkIndex + 1} → ${text}${node.note ? ` (${node.note})` : ""}`;
    }
    const numbers = document.createElement("span");
    numbers.className = "branch-numbers";
    numbers.dataset.logprob = String(run.logprob);
    const state = run.finished ? "" : " · running";
    numbers.textContent = `log p ${run.logprob.toFixed(2)} · ${run.tokens.length} tokens${state}`;
    const preview = document.createElement("span");
    preview.className = "branch-preview";
    const from = node.parent ? node.forkIndex : 0;
    preview.textContent = run.tokens.slice(from, from + 8).map((t) => t.text).join("").replaceAll("\n", "↵");
    button.append(title, numbers, preview);
    item.append(button);
    if (node.children.length) {
      const list = document.createElement("ul");
      for (const child of node.children) list.append(this.#item(child));
      item.append(list);
    }
    return item;
  }
}
