// The live comparison's table: one row per position, one column per set of settings, filled as
// `token` events arrive (sample 0 only, as the saved comparison compares). The first position
// where the columns chose different tokens — or where one had stopped and another went on — is
// marked as soon as two columns disagree there; it can only move earlier as lagging columns
// catch up. Rows after it are greyed: their contexts differ.

import { probColors } from "../../shared/js/colors.js";
import { el } from "../../shared/js/dom.js";
import { formatProb, quoteToken, visibleWhitespace } from "../../shared/js/format.js";

class Column {
  constructor(label) {
    this.label = label;
    this.tokens = []; // sample 0's token events by index
    this.active = true; // false once it failed before starting
    this.ended = false;
  }
}

export class LiveTable {
  /** `onDivergence(index, columns)` is called whenever the first divergence moves. */
  constructor(table, onDivergence = () => {}) {
    this.table = table;
    this.head = table.tHead;
    this.body = table.tBodies[0];
    this.foot = table.tFoot;
    this.onDivergence = onDivergence;
    this.columns = [];
    this.rows = [];
    this.firstDivergence = null;
  }

  /** Clears the table for new columns: [{label, summary}]. `byPosition` false: the columns are
   *  different models, whose positions do not line up (token ids of different vocabularies), so
   *  no row is marked; cross-model-view.js aligns them on the text instead. */
  start(columns, { byPosition = true } = {}) {
    this.byPosition = byPosition;
    this.columns = columns.map((c) => new Column(c.label));
    this.rows = [];
    this.firstDivergence = null;
    const tr = el("tr");
    tr.append(el("th", null, "#"));
    tr.firstChild.scope = "col";
    this.statusCells = columns.map(({ label, summary }, i) => {
      const th = el("th");
      th.scope = "col";
      th.dataset.column = String(i + 1);
      const status = el("span", "column-status", "queued");
      th.append(el("span", "column-label", label), " ", el("span", "column-summary", summary), " ", status);
      tr.append(th);
      return status;
    });
    this.head.replaceChildren(tr);
    this.body.replaceChildren();
    this.foot.replaceChildren();
    this.table.setAttribute("aria-busy", "true");
  }

  status(i, text, state = "") {
    this.statusCells[i].textContent = text;
    this.statusCells[i].dataset.state = state;
  }

  /** Adds a `token` event of column i. */
  token(i, event) {
    if ((event.sample ?? 0) !== 0) return;
    const column = this.columns[i];
    column.tokens[event.index] = event;
    const row = this.#row(event.index);
    row.cells[i + 1].replaceChildren(...this.#cell(event));
    this.#check(event.index);
  }

  /** Column i is finished (its `done`): no more tokens will come; shows its whole text below. */
  done(i, event) {
    const column = this.columns[i];
    column.ended = true;
    this.#footCell(i).replaceChildren(el("span", "column-text", event.text ?? ""));
    for (let index = column.tokens.length; index < this.rows.length; index++) {
      if (this.#check(index)) break;
    }
  }

  /** Column i failed: before starting it takes no part in the alignment; mid-run it has ended. */
  failed(i, message) {
    const column = this.columns[i];
    if (column.tokens.length === 0) column.active = false;
    column.ended = true;
    this.#footCell(i).replaceChildren(el("span", "field-error", message));
    for (let index = 0; index < this.rows.length; index++) if (this.#check(index)) break;
  }

  finish() {
    this.table.removeAttribute("aria-busy");
  }

  #row(index) {
    while (this.rows.length <= index) {
      const tr = el("tr");
      tr.dataset.index = String(this.rows.length);
      const th = el("th", null, String(this.rows.length + 1)); // positions count from 1, as in the inspector
      th.scope = "row";
      tr.append(th, ...this.columns.map(() => el("td", "cell")));
      if (this.firstDivergence !== null) tr.classList.add("other-context");
      this.body.append(tr);
      this.rows.push(tr);
    }
    return this.rows[index];
  }

  #cell(event) {
    const token = el("span", "token", event.text === "" ? event.token : visibleWhitespace(event.text));
    if (event.text === "") token.classList.add("partial");
    const { tint, strong } = probColors(event.prob);
    token.style.setProperty("--tint", tint);
    token.style.setProperty("--tint-strong", strong);
    token.dataset.prob = String(event.prob);
    token.title = `id ${event.id}, ${quoteToken(event.token)}; chosen with ${formatProb(event.prob)}, model alone ${formatProb(event.raw_prob)}`;
    return [token, " ", el("span", "value", formatProb(event.prob))];
  }

  #footCell(i) {
    if (!this.foot.rows.length) {
      const tr = el("tr");
      const th = el("th", null, "Text");
      th.scope = "row";
      tr.append(th, ...this.columns.map(() => el("td", "column-text-cell")));
      this.foot.append(tr);
    }
    return this.foot.rows[0].cells[i + 1];
  }

  /** What each column has at index: a token id, null (ended before it), or undefined (not yet). */
  #idsAt(index) {
    return this.columns.filter((c) => c.active).map((c) => {
      if (c.tokens[index]) return c.tokens[index].id;
      return c.ended ? null : undefined;
    });
  }

  /** Marks the row when the columns known so far disagree; returns whether they do. */
  #check(index) {
    if (!this.byPosition) return false;
    const known = this.#idsAt(index).filter((id) => id !== undefined);
    const differs = new Set(known).size > 1;
    const row = this.rows[index];
    if (!row) return differs;
    row.classList.toggle("differs", differs);
    if (differs && (this.firstDivergence === null || index < this.firstDivergence)) this.#mark(index);
    return differs;
  }

  #mark(index) {
    const old = this.rows[this.firstDivergence];
    if (old) {
      old.classList.remove("first-divergence");
      old.querySelector(".divergence-mark")?.remove();
    }
    this.firstDivergence = index;
    const row = this.rows[index];
    row.classList.add("first-divergence");
    row.cells[0].append(el("span", "divergence-mark", "first divergence"));
    this.rows.forEach((r, i) => r.classList.toggle("other-context", i > index));
    this.onDivergence(index, this.columns.map((c) => c.tokens[index] ?? null));
  }
}
