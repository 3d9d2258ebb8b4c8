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

How it is kept: a namespace is a *named* recall conversation (its key is
:func:`namespace_key`, its ``metadata`` holds ``langgraph_namespace``), so processes writing
a new namespace at once all open the same one; every ``put`` appends a message holding the
item (its value in the message's ``metadata``, its text as the content, so recall's search
finds it); the newest message of a key is its value. So an update keeps the earlier versions
in the conversation's history, and two processes writing the same namespace lose nothing:
each append is durable and ordered by recall.

A ``delete`` appends a tombstone, then redacts every stored message holding a version of the
key (and no other): recall removes their content and metadata, so no ``get`` or ``search``
returns the value and no context carries it. The database's files may keep the removed bytes
until it is compacted (the ``recall redact`` command does it, and so does a redaction with
``compact``): ``RecallStore(compact=True)`` has each delete compact at once, which rewrites
the whole database file (slow on a large one).

Namespaces written by older versions of this store are conversations found by their
metadata alone, sometimes several for one namespace (concurrent first writes made one each):
all of them are read, a key's newest version across them is its value, and new writes go to
the named conversation.

``search`` with a ``query`` ranks the current items of each namespace under the prefix with
recall's own ranking (the one that brings earlier messages into a context: lexical, or
semantic when the server has its embedder); without one it lists them, newest first. ``filter`` matches value fields (equality,
or ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``). TTLs are not supported.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import unicodedata
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
KEY_PREFIX = "langgraph:"
MAX_KEY_BYTES = 256  # the server's limit on a conversation key


def namespace_key(namespace: tuple[str, ...]) -> str:
    """The key of the named conversation that holds ``namespace``: ``langgraph:`` and the
    namespace as a compact JSON array (``langgraph:["memories","u1"]``), or ``langgraph:sha256:``
    and that array's SHA-256 when it is too long for a key (256 bytes) or holds a control
    character. Stored data depends on it: it must never change."""
    encoded = json.dumps(list(namespace), ensure_ascii=False, separators=(",", ":"))
    key = KEY_PREFIX + encoded
    if len(key.encode()) > MAX_KEY_BYTES or any(unicodedata.category(ch) == "Cc" for ch in key):
        # A JSON array starts with "[": a hashed key is never another namespace's plain one.
        key = KEY_PREFIX + "sha256:" + hashlib.sha256(encoded.encode()).hexdigest()
    return key


@dataclass(frozen=True)
class _At:
    """Where a message is stored, and when it was appended."""

    conversation_id: str
    seq: int
    when: datetime


@dataclass
class _Version:
    value: dict[str, Any] | None  # None: deleted
    created_at: datetime
    updated_at: datetime
    at: _At  # the message holding this version (or the tombstone)


@dataclass
class _Namespace:
    conversations: list[tuple[datetime, str]]  # (created, id), oldest first
    target: str | None = None  # the named conversation, once this store has opened it
    synced: dict[str, int] = field(default_factory=dict)  # conversation id -> last seq read
    items: dict[str, _Version] = field(default_factory=dict)
    tombstones: dict[str, _At] = field(default_factory=dict)  # key -> its newest delete
    # Every message read holding a value of the key, not redacted when read: what a delete
    # redacts. Positions, not bare seqs: an older version's namespace spans conversations.
    stored: dict[str, list[_At]] = field(default_factory=dict)

    def add(self, created: datetime, cid: str) -> None:
        if all(have != cid for _, have in self.conversations):
            self.conversations = sorted([*self.conversations, (created, cid)])

    def before(self, a: _At, b: _At) -> bool:
        """Whether ``a`` was appended before ``b``: by seq in one conversation; across the
        conversations of an older version's namespace, by time (then by conversation age)."""
        if a.conversation_id == b.conversation_id:
            return a.seq < b.seq
        rank = {cid: i for i, (_, cid) in enumerate(self.conversations)}
        return (a.when, rank.get(a.conversation_id, -1)) < (b.when, rank.get(b.conversation_id, -1))


class RecallStore(BaseStore):
    """A LangGraph ``BaseStore`` over a recall server (see the module's documentation).

    Args:
        client: the sync :class:`~recall_client.Recall` to use (``abatch`` runs the same
            operations in a worker thread).
        recall_tokens: how much text one ``search`` with a query may rank and return per
            namespace (recall's recall budget, in tokens).
        compact: whether each ``delete`` also has the server compact its database at once,
            so that its files' bytes no longer hold the deleted value (a rewrite of the whole
            file: slow on a large database). Without it the value is gone from every read,
            search and context at once, and from the files at the server's next compaction.
    """

    supports_ttl = False

    def __init__(self, client: Recall | None = None, *, recall_tokens: int = 4000, compact: bool = False) -> None:
        self.client = client or Recall()
        self.recall_tokens = recall_tokens
        self.compact = compact
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
            ns = self._namespace(tuple(op.namespace))
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
        path = tuple(op.namespace)
        if op.value is not None:
            ns, target = self._writable(path)
            value = dict(op.value)
            message = {"role": "user", "content": _text(value, op.index), "metadata": {ITEM_KEY: {"key": op.key, "value": value}}}
            self.client.append_message(target, message)
            self._sync(ns)
            return
        ns = self._namespace(path)
        if ns is None:
            return  # deleting from a namespace that does not exist
        self._sync(ns)
        current = ns.items.get(op.key)
        if current is not None and current.value is not None:
            message = {"role": "user", "content": [{"type": "langgraph_delete", "key": op.key}], "metadata": {ITEM_KEY: {"key": op.key, "deleted": True}}}
            self.client.append_message(self._open(path, ns), message)
            # Read past the tombstone: a version another process appended just before it is
            # deleted too.
            self._sync(ns)
        # Already deleted, this still redacts what an interrupted delete may have left.
        self._redact(ns, op.key)

    def _redact(self, ns: _Namespace, key: str) -> None:
        """Redacts every stored version of ``key`` older than its newest tombstone: each is
        where it was read (conversation and seq), so no other key's message is touched."""
        tomb = ns.tombstones.get(key)
        if tomb is None:
            return
        doomed = [at for at in ns.stored.get(key, []) if ns.before(at, tomb)]
        for i, at in enumerate(doomed):
            # One compaction, after the last: it rewrites the whole database file.
            self.client.redact(at.conversation_id, at.seq, compact=True if self.compact and i == len(doomed) - 1 else None)
        ns.stored[key] = [at for at in ns.stored.get(key, []) if at not in doomed]

    def _search(self, op: SearchOp) -> list[SearchItem]:
        spaces = [(p, self._sync(ns)) for p, ns in self._all_namespaces().items() if p[: len(op.namespace_prefix)] == tuple(op.namespace_prefix)]
        found: list[SearchItem] = []
        if op.query:
            # recall's own ranking (lexical, or semantic when the server has its embedder), over
            # every stored message: the query as the context's current message, so that no
            # stored message is in the window.
            for path, ns in spaces:
                current = {(v.at.conversation_id, v.at.seq): (k, v) for k, v in ns.items.items() if v.value is not None}
                for _, cid in ns.conversations:
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
        found: dict[tuple[str, ...], list[tuple[datetime, str]]] = {}
        for c in self.client.iter_conversations():
            ns = (c.metadata or {}).get(NAMESPACE_KEY)
            if isinstance(ns, list):
                found.setdefault(tuple(ns), []).append((_time(c.created_at), c.id))
        for path, convs in found.items():
            have = self._namespaces.get(path)
            if have is None:
                self._namespaces[path] = _Namespace(sorted(convs))
            else:
                have.conversations = sorted(convs)
                if all(cid != have.target for _, cid in convs):
                    have.target = None  # deleted: opened again at the next write
        self._listed = True

    def _namespace(self, path: tuple[str, ...]) -> _Namespace | None:
        """The namespace at ``path``, looked for on the server when this store does not know
        it (None: it does not exist)."""
        if path not in self._namespaces:
            self._refresh()
        return self._namespaces.get(path)

    def _writable(self, path: tuple[str, ...]) -> tuple[_Namespace, str]:
        """The namespace at ``path`` and the conversation its writes go to (made if new)."""
        ns = self._namespace(path) or _Namespace([])
        target = self._open(path, ns)
        return self._namespaces.setdefault(path, ns), target

    def _open(self, path: tuple[str, ...], ns: _Namespace) -> str:
        """The conversation ``ns`` is written to: the one named :func:`namespace_key`, made by
        the first writer; the server answers every other, at once or later, with the same
        (an older version's namespace gets it too, next to the conversations it had)."""
        if ns.target is None:
            c = self.client.create_conversation(key=namespace_key(path), title="langgraph: " + "/".join(path), metadata={NAMESPACE_KEY: list(path)})
            ns.add(_time(c.created_at), c.id)
            ns.target = c.id
        return ns.target

    def _sync(self, ns: _Namespace) -> _Namespace:
        """Reads the namespace's messages it has not read yet."""
        for _, cid in ns.conversations:
            after = ns.synced.get(cid, 0)
            for msg in self.client.iter_messages(cid, after=after):
                after = msg.seq
                meta = (msg.message.get("metadata") or {}).get(ITEM_KEY)
                if msg.status == "redacted" or not isinstance(meta, dict) or not isinstance(meta.get("key"), str):
                    continue
                key = meta["key"]
                at = _At(cid, msg.seq, _time(msg.created_at))
                cur = ns.items.get(key)
                newest = cur is None or ns.before(cur.at, at)
                if meta.get("deleted"):
                    if key not in ns.tombstones or ns.before(ns.tombstones[key], at):
                        ns.tombstones[key] = at
                    if newest:
                        ns.items[key] = _Version(None, at.when, at.when, at)
                    continue
                ns.stored.setdefault(key, []).append(at)
                if newest:
                    created = cur.created_at if cur is not None and cur.value is not None else at.when
                    ns.items[key] = _Version(meta.get("value", {}), created, at.when, at)
            ns.synced[cid] = after
        return ns


def _time(rfc3339: str) -> datetime:
    return datetime.fromisoformat(rfc3339.replace("Z", "+00:00"))


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
