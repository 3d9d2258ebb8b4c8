"""LangGraph: `RecallStore` as a compiled graph's store (the graph's own runner), with the
local model; the BaseStore operations against a real server, across store objects."""

from __future__ import annotations

import json
import uuid

import pytest
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.store.base import BaseStore, InvalidNamespaceError

import recall_client as rc
from recall_client.integrations.langgraph import RecallStore

from .wire import recording_chat_model


def test_put_get_search_delete_and_namespaces(server):
    user = uuid.uuid4().hex[:8]
    with rc.Recall(server.url, server.key) as c:
        s = RecallStore(c)
        ns = ("memories", user)
        s.put(ns, "food", {"text": "likes ramen", "n": 1})
        s.put(ns, "pet", {"text": "has a greyhound called Biscuit", "n": 2})
        s.put(("memories", user, "work"), "job", {"text": "nurse on night shifts", "n": 3})
        got = s.get(ns, "food")
        assert got is not None and got.value == {"text": "likes ramen", "n": 1} and got.key == "food"
        first_created = got.created_at
        s.put(ns, "food", {"text": "likes ramen and pho", "n": 4})

        # Another store object (another process) sees the same items.
        other = RecallStore(rc.Recall(server.url, server.key))
        food = other.get(ns, "food")
        assert food is not None and food.value["text"] == "likes ramen and pho"
        assert food.created_at == first_created and food.updated_at >= food.created_at

        # Ranked as recall ranks (a message's neighbours count a little: the best comes first).
        hits = other.search(("memories", user), query="greyhound")
        assert hits[0].key == "pet" and all(hits[0].score > h.score for h in hits[1:])
        # An older version is not an item any more: one hit for the key, its current value.
        ramen = [h for h in other.search(("memories", user), query="ramen") if h.key == "food"]
        assert len(ramen) == 1 and ramen[0].value["n"] == 4
        assert {h.key for h in other.search(("memories", user))} == {"food", "pet", "job"}
        assert [h.key for h in other.search(("memories",), filter={"n": {"$gte": 3}})] == ["food", "job"]
        assert [h.key for h in other.search(("memories", user), limit=1, offset=1)] != []

        spaces = other.list_namespaces(prefix=("memories", user))
        assert spaces == [("memories", user), ("memories", user, "work")]
        assert other.list_namespaces(prefix=("memories", user), max_depth=2) == [("memories", user)]

        other.delete(ns, "food")
        assert s.get(ns, "food") is None and other.get(ns, "food") is None
        assert "food" not in [h.key for h in other.search(("memories", user), query="ramen")]
        # Deleted means erased: no stored message holds the text any more.
        conv = [x for x in c.iter_conversations() if x.metadata.get("langgraph_namespace") == list(ns)][0]
        assert "ramen" not in json.dumps([m.message for m in c.iter_messages(conv.id) if m.status != "redacted"])
        with pytest.raises(InvalidNamespaceError):
            s.put(("bad.name",), "k", {"v": 1})


async def test_the_async_operations(server):
    with rc.Recall(server.url, server.key) as c:
        s = RecallStore(c)
        ns = ("async", uuid.uuid4().hex[:8])
        await s.aput(ns, "k", {"text": "value one"})
        assert (await s.aget(ns, "k")).value == {"text": "value one"}
        assert [i.key for i in await s.asearch(ns, query="value")] == ["k"]
        await s.adelete(ns, "k")
        assert await s.aget(ns, "k") is None


def test_a_fact_from_turn_1_reaches_the_models_request_in_turn_3(server, local_model):
    seen: list[dict] = []
    model = recording_chat_model(local_model.base_url, local_model.model, seen, max_tokens=32)
    user = uuid.uuid4().hex[:8]

    def remember(state: MessagesState, *, store: BaseStore) -> dict:
        last = state["messages"][-1].content
        if "remember" in last.lower():
            store.put(("memories", user), uuid.uuid4().hex, {"text": last})
        return {}

    def answer(state: MessagesState, *, store: BaseStore) -> dict:
        question = state["messages"][-1].content
        found = store.search(("memories", user), query=question, limit=3)
        notes = "\n".join(f"- {i.value['text']}" for i in found)
        system = {"role": "system", "content": f"Answer in one short sentence. What you know about the user:\n{notes}"}
        return {"messages": [model.invoke([system, *state["messages"][-1:]])]}

    graph = StateGraph(MessagesState)
    graph.add_node("remember", remember)
    graph.add_node("answer", answer)
    graph.add_edge(START, "remember")
    graph.add_edge("remember", "answer")
    graph.add_edge("answer", END)
    with rc.Recall(server.url, server.key) as c:
        app = graph.compile(store=RecallStore(c))
        # Three turns in three threads: the memory crosses them through the store.
        app.invoke({"messages": [{"role": "user", "content": "Please remember: my sister's dog is a greyhound called Biscuit."}]}, {"configurable": {"thread_id": "t1"}})
        app.invoke({"messages": [{"role": "user", "content": "How do I keep basil alive?"}]}, {"configurable": {"thread_id": "t2"}})
        app.invoke({"messages": [{"role": "user", "content": "What is my sister's dog called?"}]}, {"configurable": {"thread_id": "t3"}})
    assert "Biscuit" in json.dumps(seen[-1]["messages"])
    assert "basil" not in json.dumps(seen[-1]["messages"]).lower()
