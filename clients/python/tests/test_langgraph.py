"""LangGraph: `RecallStore` as a compiled graph's store (the graph's own runner), with the
local model; the BaseStore operations against a real server, across store objects; first
writes at once, deletes across versions and namespaces older versions of the store left."""

from __future__ import annotations

import json
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

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


def _namespace_conversations(c: rc.Recall, ns: tuple[str, ...]) -> list[rc.models.ConversationView]:
    return [x for x in c.iter_conversations() if x.metadata.get("langgraph_namespace") == list(ns)]


def _positions(c: rc.Recall, ns: tuple[str, ...]) -> dict[tuple[str, int], str]:
    """Where each stored item message of a namespace is: (conversation, seq) -> its key."""
    out = {}
    for conv in _namespace_conversations(c, ns):
        for m in c.iter_messages(conv.id):
            item = (m.message.get("metadata") or {}).get("langgraph_item")
            if isinstance(item, dict) and not item.get("deleted"):
                out[(conv.id, m.seq)] = item["key"]
    return out


def _statuses(c: rc.Recall, positions: dict[tuple[str, int], str]) -> dict[tuple[str, int], str]:
    by_conv: dict[str, dict[int, str]] = {}
    for cid in {cid for cid, _ in positions}:
        by_conv[cid] = {m.seq: m.status for m in c.iter_messages(cid)}
    return {(cid, seq): by_conv[cid][seq] for cid, seq in positions}


def test_simultaneous_first_writes_to_a_namespace_open_one_conversation(server):
    ns = ("race", uuid.uuid4().hex[:8])
    n = 12
    start = threading.Barrier(n)

    def first_write(i: int) -> None:
        # Its own client and store, as another process: no cache of the others' namespaces.
        with rc.Recall(server.url, server.key) as c:
            store = RecallStore(c)
            start.wait(timeout=30)
            store.put(ns, f"k{i}", {"text": f"value {i}"})

    with ThreadPoolExecutor(n) as pool:
        list(pool.map(first_write, range(n)))
    with rc.Recall(server.url, server.key) as c:
        convs = _namespace_conversations(c, ns)
        assert len(convs) == 1, [x.id for x in convs]
        # It is the named conversation of the namespace (a storage format: must not change).
        key = "langgraph:" + json.dumps(list(ns), separators=(",", ":"))
        assert c.create_conversation(key=key).id == convs[0].id
        assert len(_positions(c, ns)) == n
        fresh = RecallStore(c)
        for i in range(n):
            got = fresh.get(ns, f"k{i}")
            assert got is not None and got.value == {"text": f"value {i}"}
        assert sorted(h.key for h in fresh.search(ns, limit=2 * n)) == sorted(f"k{i}" for i in range(n))


class _HeldCreates(rc.Recall):
    """A client whose first conversation creation waits for the other client's: two stores'
    first writes to a namespace both look for it before either makes it (the interleaving
    that made two conversations for one namespace)."""

    def __init__(self, gate: threading.Barrier, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._gate: threading.Barrier | None = gate

    def create_conversation(self, *args, **kwargs):
        gate, self._gate = self._gate, None
        if gate is not None:
            try:
                gate.wait(timeout=10)
            except threading.BrokenBarrierError:
                pass  # the other did not create one: nothing to wait for
        return super().create_conversation(*args, **kwargs)


def test_a_delete_redacts_every_version_of_its_key_and_nothing_else(server):
    ns = ("versions", uuid.uuid4().hex[:8])
    gate = threading.Barrier(2)
    c1, c2 = _HeldCreates(gate, server.url, server.key), _HeldCreates(gate, server.url, server.key)
    with c1, c2, rc.Recall(server.url, server.key) as c:
        # Two processes: the first writes k1, the second k2 (both first writes, at once), then
        # the second updates k1.
        s1, s2 = RecallStore(c1), RecallStore(c2)
        with ThreadPoolExecutor(2) as pool:
            first = [pool.submit(s1.put, ns, "k1", {"text": "k1 was a marmalade cat"}), pool.submit(s2.put, ns, "k2", {"text": "k2 stays a heron"})]
            for f in first:
                f.result()
        s2.put(ns, "k1", {"text": "k1 became a tangerine cat"})
        assert RecallStore(c).get(ns, "k1").value == {"text": "k1 became a tangerine cat"}
        before = _positions(c, ns)
        assert sorted(before.values()) == ["k1", "k1", "k2"]

        # A third process deletes k1.
        RecallStore(rc.Recall(server.url, server.key)).delete(ns, "k1")
        for store in (s1, s2, RecallStore(c)):
            assert store.get(ns, "k1") is None
            k2 = store.get(ns, "k2")
            assert k2 is not None and k2.value == {"text": "k2 stays a heron"}
            for word in ("marmalade", "tangerine"):
                assert [h.key for h in store.search(ns, query=word)] == []
            assert [h.key for h in store.search(ns, query="heron")] == ["k2"]
        # Every stored version of k1 is redacted (content and metadata erased), k2's is not.
        statuses = _statuses(c, before)
        assert {p: s for p, s in statuses.items() if before[p] == "k1"} == {p: "redacted" for p, k in before.items() if k == "k1"}
        assert [s for p, s in statuses.items() if before[p] == "k2"] == ["complete"]
        stored = json.dumps([m.message for x in _namespace_conversations(c, ns) for m in c.iter_messages(x.id)])
        assert "marmalade" not in stored and "tangerine" not in stored and "heron" in stored


def test_a_namespace_older_versions_split_in_two_conversations_reads_and_deletes(server):
    ns = ("legacy", uuid.uuid4().hex[:8])

    def item(key: str, value: dict) -> dict:
        # What older versions of the store appended.
        return {"role": "user", "content": value["text"], "metadata": {"langgraph_item": {"key": key, "value": value}}}

    with rc.Recall(server.url, server.key) as c:
        # Two conversations for one namespace, found by their metadata (no key): the newer one
        # holds k1's first version, the older one its second (later) version and k2.
        a = c.create_conversation(title="langgraph: " + "/".join(ns), metadata={"langgraph_namespace": list(ns)})
        b = c.create_conversation(title="langgraph: " + "/".join(ns), metadata={"langgraph_namespace": list(ns)})
        c.append_message(b.id, item("k1", {"text": "k1 was an ochre kite"}))
        time.sleep(0.01)  # timestamps are in milliseconds
        c.append_message(a.id, item("k1", {"text": "k1 is now a cobalt kite"}))
        c.append_message(a.id, item("k2", {"text": "k2 is a pewter kettle"}))

        s = RecallStore(c)
        assert s.get(ns, "k1").value == {"text": "k1 is now a cobalt kite"}
        assert {h.key: h.value["text"] for h in s.search(ns)} == {"k1": "k1 is now a cobalt kite", "k2": "k2 is a pewter kettle"}
        assert [h.key for h in s.search(ns, query="ochre")] == []
        s.put(ns, "k3", {"text": "k3 is new"})
        assert RecallStore(c).get(ns, "k3").value == {"text": "k3 is new"}

        RecallStore(c).delete(ns, "k1")
        assert s.get(ns, "k1") is None and RecallStore(c).get(ns, "k1") is None
        assert [m.status for m in c.iter_messages(b.id)] == ["redacted"]
        assert [m.status for m in c.iter_messages(a.id)][:2] == ["redacted", "complete"]
        assert RecallStore(c).get(ns, "k2").value == {"text": "k2 is a pewter kettle"}


def test_a_delete_with_compact_leaves_no_copy_in_the_database_files(server):
    ns = ("compact", uuid.uuid4().hex[:8])
    word = "quokka" + uuid.uuid4().hex[:8]

    def copies() -> int:
        return sum(p.read_bytes().count(word.encode()) for p in server.db.parent.glob(server.db.name + "*"))

    with rc.Recall(server.url, server.key) as c:
        s = RecallStore(c, compact=True)
        s.put(ns, "k", {"text": f"first {word}"})
        s.put(ns, "k", {"text": f"second {word}"})
        s.put(ns, "other", {"text": "stays"})
        assert copies() > 0
        s.delete(ns, "k")
        assert copies() == 0
        assert s.get(ns, "other").value == {"text": "stays"}


def test_a_namespace_too_long_or_odd_for_a_plain_key_is_still_named(server):
    from recall_client.integrations.langgraph import namespace_key

    with rc.Recall(server.url, server.key) as c:
        for ns in [("long", uuid.uuid4().hex + "x" * 300), ("odd", uuid.uuid4().hex + "\x7f\x85")]:
            assert namespace_key(ns).startswith("langgraph:sha256:") and len(namespace_key(ns).encode()) <= 256
            RecallStore(c).put(ns, "k", {"text": "one"})
            RecallStore(c).put(ns, "j", {"text": "two"})
            convs = _namespace_conversations(c, ns)
            assert len(convs) == 1 and c.create_conversation(key=namespace_key(ns)).id == convs[0].id
            assert RecallStore(c).get(ns, "k").value == {"text": "one"}
    assert namespace_key(("memories", "u1")) == 'langgraph:["memories","u1"]'
