"""A `Session` of the OpenAI Agents SDK (``openai-agents``) kept in a recall conversation.

>>> from agents import Agent, Runner
>>> from recall_client import AsyncRecall
>>> from recall_client.integrations.openai_agents import RecallSession
>>> session = RecallSession(client=AsyncRecall())            # a new conversation on first use
>>> await Runner.run(agent, "My sister's dog is Biscuit.", session=session)

Every item the SDK stores (messages, function calls and their outputs, reasoning, any other
item) is one recall message: the item itself, unchanged, in the message's ``metadata``
(``openai_item``), and its content in recall's message model (text, ``tool_use``,
``tool_result``, ``thinking``), so that recall's context, search and recall read it like any
other message. ``get_items`` gives the items back exactly as they were added.

With ``context={...}`` (the policy fields of ``POST …/context``: ``max_tokens``,
``recall_tokens``, ``summarize``…) ``get_items`` returns what recall selects instead of
everything: the conversation's summary (a user message, first), the window's items, and
the recalled earlier messages (a user message just before the newest user message). Both are
text derived from stored messages, so they are never system or developer items; they come
from the context answer's ``sections``, never from reading the prompt, so a user message that
holds their tags stays the user message it is.
What recall looks for is the newest stored user message, or :attr:`RecallSession.query` when
set (set it to the new input before a run: the SDK asks for history before it stores the
input).

``pop_item`` redacts the newest message (recall never deletes one: its place stays, its content
is erased); redacted messages are not items. ``pop_item`` and ``get_items(limit)`` read back
from the end of the conversation, not the whole of it. ``clear_session`` clears the conversation.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from agents.memory.session import SessionABC

from .._async_client import AsyncRecall
from .. import models as m

ITEM_KEY = "openai_item"


def item_to_message(item: dict[str, Any]) -> dict[str, Any]:
    """The recall message that stores a Responses input item: the item in ``metadata``, its
    content in recall's model."""
    kind = item.get("type")
    role = item.get("role")
    content: list[dict[str, Any]]
    if role is not None and kind in (None, "message"):
        out_role = {"developer": "system"}.get(role, role)
        content = _parts(item.get("content"))
    elif kind == "function_call":
        out_role = "assistant"
        content = [{"type": "tool_use", "id": item["call_id"], "name": item["name"], "input": _arguments(item.get("arguments"))}]
    elif kind == "function_call_output":
        out_role = "user"
        output = item.get("output")
        text = output if isinstance(output, str) else json.dumps(output)
        content = [{"type": "tool_result", "tool_use_id": item["call_id"], "content": text}]
    elif kind == "reasoning":
        out_role = "assistant"
        summary = "\n".join(s.get("text", "") for s in item.get("summary") or [] if isinstance(s, dict))
        content = [{"type": "thinking", "thinking": summary}] if summary.strip() else []
    else:
        out_role = "assistant"
        content = []
    # recall refuses a message with nothing but thinking in it; any other item keeps its place
    # with a block of its own type, which the text formats leave out.
    if not any(b.get("type") not in ("thinking",) for b in content):
        content.append({"type": "openai_item", "item_type": kind or "message"})
    return {"role": out_role, "content": content, "metadata": {ITEM_KEY: item}}


def message_to_item(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The items of a stored message: the item it was stored from, else (a message another
    interface wrote) its text, tool calls and tool results as items."""
    meta = message.get("metadata") or {}
    if ITEM_KEY in meta:
        return [meta[ITEM_KEY]]
    role = message.get("role", "user")
    content = message.get("content")
    if isinstance(content, str):
        return [{"role": role, "content": content}]
    items: list[dict[str, Any]] = []
    texts = [b.get("text", "") for b in content or [] if b.get("type") == "text"]
    if texts:
        items.append({"role": role, "content": "\n".join(texts)})
    for b in content or []:
        if b.get("type") == "tool_use":
            items.append({"type": "function_call", "call_id": b["id"], "name": b["name"], "arguments": json.dumps(b.get("input", {}))})
        elif b.get("type") == "tool_result":
            c = b.get("content", "")
            text = c if isinstance(c, str) else "\n".join(x.get("text", "") for x in c if isinstance(x, dict))
            items.append({"type": "function_call_output", "call_id": b["tool_use_id"], "output": text})
    return items


class RecallSession(SessionABC):
    """An Agents SDK session stored in a recall conversation.

    Args:
        session_id: any name of yours for the session (``"user_123"``), or a recall
            conversation's id: the conversation of that name is created on first use and
            found again by every later session of that name, in any process (two processes
            racing on a new name get one conversation). ``None`` makes a new conversation on
            first use (then ``session_id`` is its id).
        client: the :class:`~recall_client.AsyncRecall` to use (default: one from
            ``RECALL_URL`` and ``RECALL_API_KEY``).
        context: policy fields for ``POST …/context``; when given, ``get_items`` returns
            recall's selection (summary, window, recalled) instead of every item.
        title: the title of a conversation this session creates.
    """

    def __init__(self, session_id: str | None = None, *, client: AsyncRecall | None = None, context: dict[str, Any] | None = None, title: str | None = None) -> None:
        self.session_id = session_id or ""
        self._conversation = ""
        self.session_settings = None
        self.client = client or AsyncRecall()
        self.context = dict(context) if context is not None else None
        self.query: str | None = None
        self._title = title

    async def conversation_id(self) -> str:
        """The recall conversation's id: the one named ``session_id`` (created on first use),
        or a new one when the session was given none."""
        if not self._conversation:
            title = self._title or "openai-agents session"
            if self.session_id:
                c = await self.client.create_conversation(key=self.session_id, title=title)
            else:
                c = await self.client.create_conversation(title=title)
                self.session_id = c.id
            self._conversation = c.id
        return self._conversation

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """Every stored item in order (the newest ``limit`` when given), or recall's selection
        when the session has a ``context`` policy."""
        cid = await self.conversation_id()
        if self.context is not None:
            items = await self._selected(cid)
        elif limit is not None:
            items = [i for _, its in await self._tail(cid, limit) for i in its]
        else:
            items = []
            async for msg in self.client.iter_messages(cid):
                if msg.status != "redacted":
                    items.extend(message_to_item(msg.message))
        if limit is not None:
            items = items[-limit:] if limit > 0 else []
        return items

    async def _tail(self, cid: str, want: int) -> list[tuple[m.MessageView, list[Any]]]:
        """The newest messages (not redacted) holding at least ``want`` items, or all of them:
        read back from the conversation's last seq in doubling spans, so a long conversation
        is not read whole for its last few items."""
        last = (await self.client.get_conversation(cid)).last_seq
        span = max(want, 1)
        while True:
            after = max(0, last - span)
            got = [(msg, message_to_item(msg.message)) async for msg in self.client.iter_messages(cid, after=after) if msg.status != "redacted"]
            if after == 0 or sum(len(its) for _, its in got) >= want:
                return got
            span *= 2

    async def add_items(self, items: list[Any]) -> None:
        """Stores the items in order, all or none (one batch; a retry after a lost answer
        stores nothing twice: each message carries a client id)."""
        if not items:
            return
        cid = await self.conversation_id()
        batch = []
        for item in items:
            msg = item_to_message(dict(item))
            msg["id"] = f"agents-{uuid.uuid4()}"
            batch.append(msg)
        await self.client.append_messages(cid, batch)

    async def pop_item(self) -> Any | None:
        """Removes the newest item: its message is redacted (its content erased for good)."""
        cid = await self.conversation_id()
        tail = await self._tail(cid, 1)
        if not tail:
            return None
        newest, items = tail[-1]
        await self.client.redact(cid, newest.seq)
        return items[-1] if items else None

    async def clear_session(self) -> None:
        """Removes every item (``POST …/clear``)."""
        if self.session_id:
            await self.client.clear_conversation(await self.conversation_id())

    async def _selected(self, cid: str) -> list[Any]:
        body = dict(self.context or {})
        body["format"] = "openai"
        if self.query:
            body["query"] = self.query
        ctx = await self.client.context(cid, body)
        summary = ctx.sections.summary.text if ctx.sections.summary else ""
        recalled = ctx.sections.recalled.text if ctx.sections.recalled else ""
        window: list[dict[str, Any]] = []
        if ctx.window is not None:
            async for msg in self.client.iter_messages(cid, after=ctx.window.first_seq - 1):
                if msg.seq > ctx.window.last_seq:
                    break
                if msg.status != "redacted":
                    window.extend(message_to_item(msg.message))
        if recalled:
            # Where recall puts it: with the newest user message, after everything before it.
            at = max((i for i, it in enumerate(window) if it.get("role") == "user" and it.get("type") in (None, "message")), default=len(window))
            window.insert(at, {"role": "user", "content": recalled})
        items: list[dict[str, Any]] = []
        if summary:
            items.append({"role": "user", "content": summary})
        items.extend(window)
        return items


def _parts(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content.strip() else []
    out = []
    for p in content or []:
        if not isinstance(p, dict):
            continue
        if p.get("type") in ("input_text", "output_text", "text"):
            if str(p.get("text", "")).strip():
                out.append({"type": "text", "text": p["text"]})
        elif p.get("type") == "refusal":
            out.append({"type": "text", "text": str(p.get("refusal", ""))})
        else:
            out.append(dict(p))
    return out


def _arguments(raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw if raw is not None else {}
    try:
        return json.loads(raw) if raw.strip() else {}
    except ValueError:
        return raw
