"""LangChain's ChatOpenAI, pointed at our server, chats and streams."""

from __future__ import annotations

import pytest
from langchain_openai import ChatOpenAI

pytestmark = pytest.mark.real_model


def test_chatopenai_invokes_and_streams(api_server, model_id):
    chat = ChatOpenAI(
        model=model_id, base_url=api_server.url + "/v1", api_key="unused", temperature=0, max_tokens=8, max_retries=0
    )
    question = [("system", "You are terse."), ("human", "What is the capital of France?")]
    answer = chat.invoke(question)
    assert answer.content and answer.usage_metadata["output_tokens"] >= 1
    assert answer.response_metadata["system_fingerprint"]
    streamed = "".join(chunk.content for chunk in chat.stream(question))
    assert streamed == answer.content
