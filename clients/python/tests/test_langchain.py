"""LangChain: `RecallChatMessageHistory` under `RunnableWithMessageHistory` with the local model
(a fact from turn 1 in turn 3's request), tool calls through the history and a chat model, and
`RecallRetriever` in both modes."""

from __future__ import annotations

import json

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder
from langchain_core.runnables.history import RunnableWithMessageHistory
from langchain_openai import ChatOpenAI

import recall_client as rc
from recall_client.integrations.langchain import RecallChatMessageHistory, RecallRetriever

from .wire import ScriptedChat, recording_chat_model, text

TURNS = [
    "My sister Ingrid adopted a retired greyhound called Biscuit.",
    "Unrelated: how do I keep basil alive on a windowsill?",
    "What is my sister's dog called?",
]


def _chain(model):
    prompt = ChatPromptTemplate.from_messages([
        ("system", "Answer in one short sentence."),
        MessagesPlaceholder("history"),
        ("human", "{question}"),
    ])
    return prompt | model


def test_a_fact_from_turn_1_reaches_the_models_request_in_turn_3(server, local_model):
    seen: list[dict] = []
    model = recording_chat_model(local_model.base_url, local_model.model, seen, max_tokens=48)
    client = rc.Recall(server.url, server.key)
    histories: dict[str, RecallChatMessageHistory] = {}

    def history(session_id: str) -> RecallChatMessageHistory:
        return histories.setdefault(session_id, RecallChatMessageHistory(client=client))

    chain = RunnableWithMessageHistory(_chain(model), history, input_messages_key="question", history_messages_key="history")
    for turn in TURNS:
        chain.invoke({"question": turn}, config={"configurable": {"session_id": "s1"}})
    sent = json.dumps(seen[-1]["messages"])
    assert "Biscuit" in sent and TURNS[2] in sent
    h = histories["s1"]
    stored = [x.message for x in client.iter_messages(h.conversation_id)]
    assert [m["role"] for m in stored] == ["user", "assistant"] * 3
    assert stored[0]["content"][0]["text"] == TURNS[0]
    # A new history object over the same conversation reads the same messages.
    again = RecallChatMessageHistory(h.conversation_id, client=client).messages
    assert [type(m) for m in again] == [HumanMessage, AIMessage] * 3 and again[0].content == TURNS[0]
    client.close()


async def test_tool_calls_survive_the_history_and_reach_the_model(server):
    msgs = [
        SystemMessage("Be brief."),
        HumanMessage("Weather in Oslo?", id="h1"),
        AIMessage("", tool_calls=[{"name": "get_weather", "args": {"city": "Oslo"}, "id": "call_9"}]),
        ToolMessage("light rain, 9 C", tool_call_id="call_9"),
        AIMessage("Light rain, 9 C.", response_metadata={"finish_reason": "stop"}),
    ]
    async with rc.AsyncRecall(server.url, server.key) as a:
        h = RecallChatMessageHistory(async_client=a)
        await h.aadd_messages(msgs)
        back = await h.aget_messages()
        assert back == msgs
        stored = [x.message async for x in a.iter_messages(h.conversation_id)]
        assert stored[2]["content"] == [{"type": "tool_use", "id": "call_9", "name": "get_weather", "input": {"city": "Oslo"}}]
        assert stored[3]["content"][0]["type"] == "tool_result"

    wire = ScriptedChat([text("Oslo, as before.")])
    try:
        model = ChatOpenAI(base_url=wire.base_url, api_key="x", model="scripted")
        model.invoke(back + [HumanMessage("What did I ask about?")])
        sent = wire.requests[-1]["messages"]
        calls = [m for m in sent if m.get("tool_calls")]
        assert calls and calls[0]["tool_calls"][0]["id"] == "call_9"
        assert any(m.get("role") == "tool" and m.get("tool_call_id") == "call_9" for m in sent)
    finally:
        wire.close()
    with rc.Recall(server.url, server.key) as c:
        sync = RecallChatMessageHistory(h.conversation_id, client=c)
        assert sync.messages == msgs
        sync.clear()
        assert sync.messages == []


def test_the_retriever_searches_and_recalls(server):
    with rc.Recall(server.url, server.key) as c:
        conv = c.create_conversation()
        c.append_messages(conv.id, [
            {"role": "user", "content": "Our staging database is called quokkadb and runs on port 6543."},
            {"role": "assistant", "content": "Noted."},
            {"role": "user", "content": "Let's talk about the frontend now."},
            {"role": "assistant", "content": "Sure, React or Vue?"},
            {"role": "user", "content": "React."},
            {"role": "assistant", "content": "Fine."},
        ])
        docs = RecallRetriever(client=c).invoke("quokkadb")
        assert [(d.metadata["conversation_id"], d.metadata["seq"]) for d in docs] == [(conv.id, 1)]
        assert "quokkadb" in docs[0].page_content

        docs = RecallRetriever(client=c, mode="recall", conversation_id=conv.id, k=2).invoke("which port does the staging database use?")
        assert docs and docs[0].metadata["seq"] == 1
        assert docs[0].page_content.startswith("Our staging database")
        assert docs[0].metadata["created_at"].endswith("Z")
