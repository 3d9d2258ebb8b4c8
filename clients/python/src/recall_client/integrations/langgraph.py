"""LangGraph: a long-term memory ``BaseStore`` kept in recall.

>>> from langgraph.graph import StateGraph
>>> from recall_client import Recall
>>> from recall_client.integrations.langgraph import RecallStore
>>> graph = builder.compile(store=RecallStore(Recall()))
>>> # in a node: store.put(("memories", user_id), "food", {"text": "likes ramen"})
>>> #            store.search(("memories", user_id), query="what food?")

Why a store and not a checkpointer: a checkpointer saves one thread's graph state to resume
it exactly, and LangGraph ships SQLite and PostgreSQL ones; what LangGraph's users come to a
memory system for is memory *across* threads, searched by meaning: that is the ``BaseStore``
interface (LangGraph's own docs, LangMem and Mem0's integration all put long-term memory there).

How it is kept: a namespace is a recall conversation (its ``metadata`` holds
``langgraph_namespace``); every ``put`` appends a message holding the item (its value in the
message's ``metadata``, its text as the content, so recall's search finds it); the newest
message of a key is its value. A ``delete`` appends a tombstone and redacts the key's earlier
messages (their content erased for good). So an update keeps the earlier versions in the
conversation's history, and two processes writing the same namespace lose nothing: each
append is durable and ordered by recall.

``search`` with a ``query`` ranks the current items of each namespace under the prefix with
recall's own ranking (the one that brings earlier messages into a context: lexical, or
semantic when the server has its embedder); without one it lists them, newest first. ``filter`` matches value fields (equality,
or ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``). TTLs are not supported.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
)

from .._sync_client import Recall

NAMESPACE_KEY = "langgraph_namespace"
ITEM_KEY = "langgraph_item"


@dataclass
class _Version:
    value: dict[str, Any] | None  # None: deleted
    created_at: datetime
    updated_at: datetime
    conversation_id: str
    seq: int
    seqs: list[int] = field(default_factory=list)  # every stored version of the key


@dataclass
class _Namespace:
    conversations: list[str]
    synced: dict[str, int] = field(default_factory=dict)  # conversation id -> last seq read
    items: dict[str, _Version] = field(default_factory=dict)


class RecallStore(BaseStore):
    """A LangGraph ``BaseStore`` over a recall server (see the module's documentation).

    Args:
        client: the sync :class:`~recall_client.Recall` to use (``abatch`` runs the same
            operations in a worker thread).
        recall_tokens: how much text one ``search`` with a query may rank and return per
            namespace (recall's recall budget, in tokens).
    """

    supports_ttl = False

    def __init__(self, client: Recall | None = None, *, recall_tokens: int = 4000) -> None:
        self.client = client or Recall()
        self.recall_tokens = recall_tokens
        self._lock = threading.RLock()
        self._namespaces: dict[tuple[str, ...], _Namespace] = {}
        self._listed = False

    # -- BaseStore ---------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        with self._lock:
            return [self._run(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        ops = list(ops)
        return await asyncio.to_thread(self.batch, ops)

    # -- operations --------------------------------------------------------------------------

    def _run(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            ns = self._namespace(op.namespace, create=False)
            if ns is None:
                return None
            v = self._sync(ns).items.get(op.key)
            return None if v is None or v.value is None else _item(op.namespace, op.key, v)
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"unknown store operation {op!r}")

    def _put(self, op: PutOp) -> None:
        if not op.namespace or any(not isinstance(p, str) or not p or "." in p for p in op.namespace):
            from langgraph.store.base import InvalidNamespaceError

            raise InvalidNamespaceError(f"invalid namespace {op.namespace!r}: non-empty strings without '.'")
        ns = self._namespace(op.namespace, create=op.value is not None)
        if ns is None:
            return  # deleting from a namespace that does not exist
        self._sync(ns)
        cid = ns.conversations[0]
        if op.value is None:
            old = ns.items.get(op.key)
            if old is None or old.value is None:
                return
            message = {"role": "user", "content": [{"type": "langgraph_delete", "key": op.key}], "metadata": {ITEM_KEY: {"key": op.key, "deleted": True}}}
            self.client.append_message(cid, message)
            # Deleted means gone: every stored version's content is erased.
            for conv, seq in [(old.conversation_id, s) for s in old.seqs]:
                self.client.redact(conv, seq)
        else:
            value = dict(op.value)
            message = {"role": "user", "content": _text(value, op.index), "metadata": {ITEM_KEY: {"key": op.key, "value": value}}}
            self.client.append_message(cid, message)
        self._sync(ns)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        spaces = [(p, self._sync(ns)) for p, ns in self._all_namespaces().items() if p[: len(op.namespace_prefix)] == tuple(op.namespace_prefix)]
        found: list[SearchItem] = []
        if op.query:
            # recall's own ranking (lexical, or semantic when the server has its embedder), over
            # every stored message: the query as the context's current message, so that no
            # stored message is in the window.
            for path, ns in spaces:
                current = {(v.conversation_id, v.seq): (k, v) for k, v in ns.items.items() if v.value is not None}
                for cid in ns.conversations:
                    ctx = self.client.context(cid, format="transcript", current=op.query, max_turns=1, max_tokens=self.recall_tokens + 1000, recall_tokens=self.recall_tokens)
                    for r in ctx.stats.recalled.messages if ctx.stats.recalled else []:
                        hit = current.get((cid, r.seq))
                        # Only a key's current version counts.
                        if r.hit and hit is not None:
                            found.append(_item(path, hit[0], hit[1], score=r.score))
            found.sort(key=lambda i: i.score or 0.0, reverse=True)
        else:
            for path, ns in spaces:
                found.extend(_item(path, k, v) for k, v in ns.items.items() if v.value is not None)
            found.sort(key=lambda i: i.updated_at, reverse=True)
        if op.filter:
            found = [i for i in found if _matches(i.value, op.filter)]
        return found[op.offset : op.offset + op.limit]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        out = set()
        for path in self._all_namespaces():
            if all(_condition(c, path) for c in op.match_conditions or ()):
                out.add(path[: op.max_depth] if op.max_depth is not None else path)
        return sorted(out)[op.offset : op.offset + op.limit]

    # -- namespaces and their items ----------------------------------------------------------

    def _all_namespaces(self) -> dict[tuple[str, ...], _Namespace]:
        self._refresh()
        return self._namespaces

    def _refresh(self) -> None:
        """Reads which conversations hold namespaces (another process may have made one)."""
        found: dict[tuple[str, ...], list[tuple[str, str]]] = {}
        for c in self.client.iter_conversations():
            ns = (c.metadata or {}).get(NAMESPACE_KEY)
            if isinstance(ns, list):
                found.setdefault(tuple(ns), []).append((c.created_at, c.id))
        for path, convs in found.items():
            ids = [cid for _, cid in sorted(convs)]  # the oldest first: the one written to
            have = self._namespaces.get(path)
            if have is None:
                self._namespaces[path] = _Namespace(ids)
            else:
                have.conversations = ids
        self._listed = True

    def _namespace(self, path: tuple[str, ...], *, create: bool) -> _Namespace | None:
        path = tuple(path)
        if path not in self._namespaces:
            self._refresh()
        if path not in self._namespaces and create:
            c = self.client.create_conversation(title="langgraph: " + "/".join(path), metadata={NAMESPACE_KEY: list(path)})
            self._namespaces[path] = _Namespace([c.id])
        return self._namespaces.get(path)

    def _sync(self, ns: _Namespace) -> _Namespace:
        """Reads the namespace's messages it has not read yet."""
        for cid in ns.conversations:
            after = ns.synced.get(cid, 0)
            for msg in self.client.iter_messages(cid, after=after):
                after = msg.seq
                meta = (msg.message.get("metadata") or {}).get(ITEM_KEY)
                if not isinstance(meta, dict) or "key" not in meta:
                    continue
                key = meta["key"]
                when = datetime.fromisoformat(msg.created_at.replace("Z", "+00:00"))
                old = ns.items.get(key)
                seqs = (old.seqs if old else []) + [msg.seq]
                if meta.get("deleted"):
                    ns.items[key] = _Version(None, when, when, cid, msg.seq, [])
                    continue
                if msg.status == "redacted":
                    continue
                created = old.created_at if old is not None and old.value is not None else when
                ns.items[key] = _Version(meta.get("value", {}), created, when, cid, msg.seq, seqs)
            ns.synced[cid] = after
        return ns


def _item(path: tuple[str, ...], key: str, v: _Version, score: float | None = None) -> SearchItem:
    return SearchItem(namespace=path, key=key, value=dict(v.value or {}), created_at=v.created_at, updated_at=v.updated_at, score=score)


def _text(value: dict[str, Any], index: Any) -> str:
    """The text recall's search indexes for an item: the fields ``index`` names, else the
    whole value as JSON."""
    if isinstance(index, list) and index:
        parts = []
        for path in index:
            cur: Any = value
            for part in str(path).split("."):
                cur = cur.get(part) if isinstance(cur, dict) else None
            if cur is not None:
                parts.append(cur if isinstance(cur, str) else json.dumps(cur))
        text = "\n".join(parts)
    else:
        text = json.dumps(value, ensure_ascii=False)
    return text if text.strip() else "{}"


_OPS = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a is not None and a > b,
    "$gte": lambda a, b: a is not None and a >= b,
    "$lt": lambda a, b: a is not None and a < b,
    "$lte": lambda a, b: a is not None and a <= b,
}


def _matches(value: dict[str, Any], filt: dict[str, Any]) -> bool:
    for k, want in filt.items():
        have = value.get(k)
        if isinstance(want, dict) and want and all(op in _OPS for op in want):
            try:
                if not all(_OPS[op](have, arg) for op, arg in want.items()):
                    return False
            except TypeError:
                return False
        elif have != want:
            return False
    return True


def _condition(c: MatchCondition, path: tuple[str, ...]) -> bool:
    want = tuple(c.path)
    part = path[: len(want)] if c.match_type == "prefix" else path[-len(want) :] if want else ()
    if len(part) != len(want):
        return False
    return all(w == "*" or w == p for w, p in zip(want, part))
