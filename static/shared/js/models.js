// The served models as the server lists them (`GET /api/models`, docs/websocket-api.md "Models"):
// id, display name, kind (base / instruct), license, build variant, vocabulary, chat availability.
// Pure helpers over that list, and one fetch; every fact is the server's, none is kept here.

/** What each kind means to a person choosing. */
export const KIND_TEXT = {
  base: "base model: pre-trained only, it continues text",
  instruct: "instruct model: tuned to answer messages",
};

/** The list from the server: {default, models}. Rejects when the server answers no list. */
export async function fetchModels(url = "/api/models") {
  const response = await fetch(url, { headers: { Accept: "application/json" } });
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  const body = await response.json();
  if (!Array.isArray(body?.models) || !body.models.length) throw new Error(`${url} listed no models`);
  return body;
}

/** The model `key` names: its id, or its manifest's `model_name` (case ignored, as the server
 *  accepts it); null when none does. */
export function findModel(models, key) {
  if (key === null || key === undefined || key === "") return null;
  const wanted = String(key).toLowerCase();
  return models.find((m) => m.id.toLowerCase() === wanted || (m.model_name ?? "").toLowerCase() === wanted) ?? null;
}

/** A model's short name for labels: its display name, else its id. */
export function modelLabel(model) {
  return model?.display_name || model?.id || "";
}

/** The option text for a picker: "Gemma 3 270M (base) · base". */
export function optionText(model) {
  return `${modelLabel(model)} · ${model.kind}`;
}

/** The build variant in words: "exact: every weight as the GGUF stores it: …" (the server's note). */
export function variantText(model) {
  if (!model.built) return "not built yet: its requests fail until it is built";
  return model.variant_note ? `${model.variant}: ${model.variant_note}` : model.variant ?? "";
}

/** Why chat mode is off for this model, or null when it works. */
export function chatUnavailable(model) {
  if (!model || model.chat?.available) return null;
  return model.chat?.reason || `${model.id} has no chat template; use completion`;
}
