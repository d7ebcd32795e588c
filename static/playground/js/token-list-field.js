// A field where tokens are typed as words and listed with a remove button each (the logit-bias
// editor, the watched tokens): its add button and Enter in the field add the words; a list's
// button[data-remove] removes the token whose id it carries, and the field gets the focus back.

/** Wires the field. @param words  the text field; @param addButton  its add button;
 *  @param list  the listed tokens; @param add  () → void; @param remove  token id → void */
export function wireTokenListField(words, addButton, list, { add, remove }) {
  addButton.addEventListener("click", () => add());
  words.addEventListener("keydown", (e) => {
    if (e.key === "Enter") {
      e.preventDefault();
      add();
    }
  });
  list.addEventListener("click", (e) => {
    const button = e.target.closest("button[data-remove]");
    if (!button) return;
    remove(Number(button.dataset.remove));
    words.focus();
  });
}
