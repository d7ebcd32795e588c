// This browser's own list of runs, in localStorage: ids it made or opened, and the delete tokens
// the server gave once (in `done`, or in an import's answer). The server never lists runs.

import { parseJson } from "./seeds.js";

const KEY = "playground.runs.v1";
const PICKED = "playground.runs.picked.v1";
const LIMIT = 500;

function read(key, fallback) {
  try {
    const value = JSON.parse(localStorage.getItem(key));
    return value ?? fallback;
  } catch {
    return fallback;
  }
}

/** [{id, delete_token?, seen}] newest first. */
export function listRuns() {
  const runs = read(KEY, []);
  return Array.isArray(runs) ? runs.filter((r) => r && typeof r.id === "string") : [];
}

/** Adds (or refreshes) a run; keeps a delete token once known. */
export function rememberRun(id, deleteToken = null) {
  const runs = listRuns();
  const old = runs.find((r) => r.id === id);
  const entry = { id, delete_token: deleteToken ?? old?.delete_token ?? null, seen: Date.now() };
  const rest = runs.filter((r) => r.id !== id);
  localStorage.setItem(KEY, JSON.stringify([entry, ...rest].slice(0, LIMIT)));
}

export function forgetRun(id) {
  localStorage.setItem(KEY, JSON.stringify(listRuns().filter((r) => r.id !== id)));
  setPicked(picked().filter((p) => p !== id));
}

export function deleteToken(id) {
  return listRuns().find((r) => r.id === id)?.delete_token ?? null;
}

/** Runs picked for a comparison (at most 4, in picking order). */
export function picked() {
  const ids = read(PICKED, []);
  return Array.isArray(ids) ? ids.filter((i) => typeof i === "string").slice(0, 4) : [];
}

export function setPicked(ids) {
  localStorage.setItem(PICKED, JSON.stringify(ids.slice(0, 4)));
}

/** POSTs JSON; resolves to {status, body}, any `seed` in the body exact (a decimal string). */
export async function postJson(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed = null;
  try {
    parsed = text ? parseJson(text) : null;
  } catch {
    parsed = null;
  }
  return { status: response.status, body: parsed };
}

/** An error object from the server as one readable line, naming the field. */
export function describeError(body, fallback) {
  const error = body?.error;
  if (!error) return fallback;
  return error.param ? `${error.param}: ${error.message}` : error.message;
}
