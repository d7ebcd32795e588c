"""param-labels.js puts each stage field's words (from its declaration) into the page's layout,
and a stage field the layout does not list after the last parameter of its group."""

from tests.js import module_url, run_js


def test_stage_words_fill_the_layout_and_an_unlisted_field_joins_its_group():
    out = run_js(
        f"""
        const {{ withStageFields }} = await import("{module_url("playground/js/param-labels.js")}");
        const layout = [
          {{ key: "a", always: true }},
          {{ key: "seed", group: "g1", label: "Seed", about: "s." }},
          {{ key: "b" }},
          {{ key: "max_tokens", group: "g3", label: "Max", about: "m." }},
        ];
        const words = {{
          a: {{ label: "A", about: "a.", group: "g1" }},
          b: {{ label: "B", about: "b.", group: "g2" }},
          c: {{ label: "C", about: "c.", group: "g1" }},
          d: {{ label: "D", about: "d.", group: "g9" }},
        }};
        console.log(JSON.stringify(withStageFields(layout, words)));
        """
    )
    assert [e["key"] for e in out] == ["a", "seed", "c", "b", "max_tokens", "d"]
    assert out[0] == {"key": "a", "label": "A", "about": "a.", "group": "g1", "always": True}
