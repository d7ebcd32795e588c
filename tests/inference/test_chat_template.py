"""The model's own chat template, rendered in the sandbox, as chat mode feeds it."""

from __future__ import annotations

import pytest

from inference.chat_template import ChatMessage, ChatPrompt, ChatTemplate, ChatTemplateError
from inference.errors import ParamError
from inference.model_dir import CHAT_TEMPLATE_FILE, default_model_dir
from inference.runtime import load_runtime

SMOLLM_SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def hand_written_chatml(user: str, system: str | None = None) -> str:
    """What chat mode fed before the template was rendered (kept here as the reference)."""
    system_text = SMOLLM_SYSTEM if system is None else system
    return f"<|im_start|>system\n{system_text}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def template() -> ChatTemplate:
    return ChatTemplate.from_file(default_model_dir() / CHAT_TEMPLATE_FILE)


@pytest.mark.parametrize("system", [None, "Answer in French.", ""])
def test_one_turn_renders_exactly_the_chatml_chat_mode_always_fed(template, system):
    assert template.render(ChatPrompt.single_turn("What is 2+2?", system)) == hand_written_chatml("What is 2+2?", system)


def test_single_turn_tokens_are_unchanged_on_the_real_model():
    runtime = load_runtime(default_model_dir())
    codec = runtime.codec
    for system in (None, "Be brief."):
        reference = codec.encode(hand_written_chatml("Hi there", system), "plain")
        assert codec.encode("Hi there", "chat", system) == reference


def test_several_turns_and_a_continued_assistant_message(template):
    turns = (
        ChatMessage("system", "S"),
        ChatMessage("user", "Q1"),
        ChatMessage("assistant", "A1"),
        ChatMessage("user", "Q2"),
        ChatMessage("assistant", "The answer is"),
    )
    opened = template.render(ChatPrompt(turns[:4]))
    assert opened == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nQ1<|im_end|>\n"
        "<|im_start|>assistant\nA1<|im_end|>\n<|im_start|>user\nQ2<|im_end|>\n<|im_start|>assistant\n"
    )
    continued = template.render(ChatPrompt(turns, continue_final_message=True))
    assert continued == opened + "The answer is"


def test_continuing_needs_an_assistant_message_last():
    with pytest.raises(ParamError) as caught:
        ChatPrompt((ChatMessage("user", "x"),), continue_final_message=True)
    assert caught.value.param == "continue_final_message"


def test_raise_exception_becomes_a_param_error_naming_messages():
    refusing = ChatTemplate("{% if messages[0]['role'] != 'user' %}{{ raise_exception('user first') }}{% endif %}ok")
    with pytest.raises(ChatTemplateError) as caught:
        refusing.render(ChatPrompt((ChatMessage("system", "s"),)))
    assert caught.value.param == "messages" and "user first" in caught.value.message


def test_the_sandbox_keeps_templates_from_changing_or_reaching_past_their_values():
    for source in ("{{ messages.append({'role': 'user'}) }}", "{{ messages.__class__.__mro__ }}"):
        with pytest.raises(ChatTemplateError) as caught:
            ChatTemplate(source).render(ChatPrompt((ChatMessage("user", "x"),)))
        assert "unsafe" in caught.value.message
