"""LangChain: a chat message history kept in a recall conversation, and a retriever over
recall's search and recall.

>>> from langchain_core.runnables.history import RunnableWithMessageHistory
>>> from recall_client import Recall
>>> from recall_client.integrations.langchain import RecallChatMessageHistory
>>> client = Recall()
>>> chain = RunnableWithMessageHistory(
...     prompt | model,
...     lambda session_id: RecallChatMessageHistory(session_id, client=client),
...     input_messages_key="question", history_messages_key="history")

Each LangChain message is one recall message: the message as LangChain serialises it
(``messages_to_dict``) in ``metadata`` (``langchain_message``), its content in recall's model
(text; an AI message's tool calls as ``tool_use`` blocks, a tool message as a
``tool_result``), so recall's context, search and recall read it and ``messages`` gives back
exactly what was added.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.documents import Document
from langchain_core.messages import BaseMessage, messages_from_dict, messages_to_dict
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from .._async_client import AsyncRecall
from .._sync_client import Recall

MESSAGE_KEY = "langchain_message"
_ROLES = {"human": "user", "ai": "assistant", "system": "system", "tool": "user"}


def to_recall(message: BaseMessage) -> dict[str, Any]:
    """The recall message storing a LangChain message."""
    stored = messages_to_dict([message])[0]
    content: list[dict[str, Any]] = []
    text = message.text if isinstance(message.text, str) else str(message.text)
    if message.type == "tool":
        tool_call_id = getattr(message, "tool_call_id", "") or "tool"
        content.append({"type": "tool_result", "tool_use_id": tool_call_id, "content": text})
    else:
        if text.strip():
            content.append({"type": "text", "text": text})
        for call in getattr(message, "tool_calls", None) or []:
            content.append({"type": "tool_use", "id": call.get("id") or call["name"], "name": call["name"], "input": call.get("args", {})})
    if not content:
        content.append({"type": "langchain_message", "message_type": message.type})
    return {"role": _ROLES.get(message.type, "user"), "content": content, "metadata": {MESSAGE_KEY: stored}}


def from_recall(message: dict[str, Any]) -> BaseMessage:
    """The LangChain message a stored message holds (one another interface wrote becomes a
    human, AI or system message of its text)."""
    meta = message.get("metadata") or {}
    if MESSAGE_KEY in meta:
        return messages_from_dict([meta[MESSAGE_KEY]])[0]
    role = message.get("role", "user")
    content = message.get("content")
    text = content if isinstance(content, str) else "\n".join(b.get("text", "") for b in content or [] if b.get("type") == "text")
    kind = {"user": "human", "assistant": "ai", "system": "system"}.get(role, "human")
    return messages_from_dict([{"type": kind, "data": {"content": text}}])[0]


class RecallChatMessageHistory(BaseChatMessageHistory):
    """A LangChain chat history stored in the recall conversation named ``conversation_id``
    (or ``session_id``, as LangChain's own histories call it): any name of yours, or a
    conversation's id. The conversation of that name is created on first use and found again
    by every later history of that name, in any process (two processes racing on a new name
    get one conversation). ``None``: a new conversation, made on first write.

    ``client`` serves the sync methods, ``async_client`` the async ones (each defaults to one
    from ``RECALL_URL`` and ``RECALL_API_KEY`` when first needed). ``add_messages`` stores a
    list in one batch: all or none.
    """

    def __init__(self, conversation_id: str | None = None, *, session_id: str | None = None, client: Recall | None = None, async_client: AsyncRecall | None = None, title: str | None = None) -> None:
        if conversation_id is not None and session_id is not None and conversation_id != session_id:
            raise ValueError("give conversation_id or session_id, not both")
        self.conversation_id = conversation_id if conversation_id is not None else session_id
        self._resolved: str | None = None
        self._client = client
        self._async = async_client
        self._title = title

    @property
    def client(self) -> Recall:
        if self._client is None:
            self._client = Recall()
        return self._client

    @property
    def async_client(self) -> AsyncRecall:
        if self._async is None:
            self._async = AsyncRecall()
        return self._async

    def _id(self) -> str:
        """The conversation's id: the one named ``conversation_id`` (created on first use),
        else a new one."""
        if self._resolved is None:
            title = self._title or "langchain history"
            if self.conversation_id is None:
                self.conversation_id = self._resolved = self.client.create_conversation(title=title).id
            else:
                self._resolved = self.client.create_conversation(key=self.conversation_id, title=title).id
        return self._resolved

    async def _aid(self) -> str:
        """:meth:`_id` on the async client."""
        if self._resolved is None:
            title = self._title or "langchain history"
            if self.conversation_id is None:
                self.conversation_id = self._resolved = (await self.async_client.create_conversation(title=title)).id
            else:
                self._resolved = (await self.async_client.create_conversation(key=self.conversation_id, title=title)).id
        return self._resolved

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        if self.conversation_id is None:
            return []
        return [from_recall(m.message) for m in self.client.iter_messages(self._id()) if m.status != "redacted"]

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        if not messages:
            return
        self.client.append_messages(self._id(), [to_recall(m) for m in messages])

    def clear(self) -> None:
        if self.conversation_id is not None:
            self.client.clear_conversation(self._id())

    async def aget_messages(self) -> list[BaseMessage]:
        if self.conversation_id is None:
            return []
        return [from_recall(m.message) async for m in self.async_client.iter_messages(await self._aid()) if m.status != "redacted"]

    async def aadd_messages(self, messages: Sequence[BaseMessage]) -> None:
        if not messages:
            return
        await self.async_client.append_messages(await self._aid(), [to_recall(m) for m in messages])

    async def aclear(self) -> None:
        if self.conversation_id is not None:
            await self.async_client.clear_conversation(await self._aid())


class RecallRetriever(BaseRetriever):
    """Documents from recall for a query.

    - ``mode="search"``: full-text search over every conversation of the key's tenant
      (``GET /v1/search``): one document per hit, its snippet as the content.
    - ``mode="recall"``: what recall would bring into a context of ``conversation_id`` for
      the query as its next message (``POST …/context`` with ``current`` and
      ``recall_tokens``): the best ``k`` recalled messages of the whole conversation, whole,
      ranked as recall ranks (lexical, or semantic when the server has its embedder).

    Each document's metadata holds ``conversation_id``, ``seq`` and ``role`` (and, for recall,
    ``score`` and ``created_at``).
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    client: Recall
    mode: Literal["search", "recall"] = "search"
    conversation_id: str | None = None
    k: int = 8
    recall_tokens: int = 1000

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        if self.mode == "search":
            hits = self.client.search(query, limit=self.k)
            return [Document(page_content=h.snippet, metadata={"conversation_id": h.conversation_id, "seq": h.seq, "role": h.role}) for h in hits.data]
        if not self.conversation_id:
            raise ValueError("mode='recall' needs a conversation_id")
        ctx = self.client.context(self.conversation_id, format="transcript", current=query, max_turns=1, max_tokens=self.recall_tokens + 1000, recall_tokens=self.recall_tokens)
        recalled = ctx.stats.recalled
        if recalled is None:
            return []
        chosen = sorted((r for r in recalled.messages if r.hit), key=lambda r: -r.score)[: self.k]
        by_seq = {r.seq: r for r in chosen}
        docs: dict[int, Document] = {}
        if chosen:
            lo = min(by_seq)
            for msg in self.client.iter_messages(self.conversation_id, after=lo - 1):
                if msg.seq > max(by_seq):
                    break
                if msg.seq in by_seq:
                    text = _text(msg.message)
                    docs[msg.seq] = Document(page_content=text, metadata={"conversation_id": self.conversation_id, "seq": msg.seq, "role": msg.message.get("role"), "score": by_seq[msg.seq].score, "created_at": msg.created_at})
        return [docs[r.seq] for r in chosen if r.seq in docs]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    parts = []
    for b in content or []:
        if b.get("type") == "text":
            parts.append(b.get("text", ""))
        elif b.get("type") == "tool_use":
            parts.append(f"[tool call {b.get('name')}: {json.dumps(b.get('input'))}]")
        elif b.get("type") == "tool_result":
            c = b.get("content")
            parts.append(c if isinstance(c, str) else json.dumps(c))
    return "\n".join(parts)
