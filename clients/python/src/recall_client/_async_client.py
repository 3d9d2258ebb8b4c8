"""The asynchronous client: one method per route of recall's HTTP API.

This file is the source of the synchronous client too: ``scripts/generate-clients.sh``
rewrites it into ``_sync_client.py`` (``async def`` → ``def``, ``await`` removed, httpx's
``AsyncClient`` → ``Client``…), and a test fails when the two disagree. Edit this file only.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import quote

import httpx
import pydantic

from . import models as m
from ._retry import RetryPolicy
from ._routes import route
from ._sse import ChatEvent, SSEDecoder
from .errors import ConnectionError, InvalidRequestError, error_for

_T = TypeVar("_T", bound=pydantic.BaseModel)

DEFAULT_URL = "http://127.0.0.1:8080"


def _seg(value: str | int) -> str:
    """One path segment, escaped (ids may hold any character). ``""``, ``"."`` and ``".."``
    are refused: a URL resolves them to another route (``redact(id, "..")`` would be
    ``DELETE /v1/conversations/{id}``)."""
    s = str(value)
    if s in ("", ".", ".."):
        raise InvalidRequestError(422, "invalid_request", f"{s!r} is not a valid path segment (an id or a seq)")
    return quote(s, safe="")


def _body(model: type[_T], given: _T | Mapping[str, Any] | None, fields: Mapping[str, Any], *, keep_none: bool = False) -> dict[str, Any]:
    """A request body checked against its model before it is sent: an unknown field or a
    value of the wrong type raises :class:`InvalidRequestError` here, without a request.
    Fields left unset are not sent; ``None`` is sent only with ``keep_none`` (where it
    clears a setting)."""
    if given is not None and fields:
        raise TypeError("pass a body model or keyword fields, not both")
    try:
        if isinstance(given, pydantic.BaseModel):
            obj = given
        else:
            obj = model.model_validate(dict(given or fields))
    except pydantic.ValidationError as e:
        raise InvalidRequestError(422, "invalid_request", str(e)) from None
    return obj.model_dump(mode="json", exclude_unset=True, exclude_none=not keep_none)


def _query(**params: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in params.items():
        if v is None:
            continue
        out[k] = ("true" if v else "false") if isinstance(v, bool) else v
    return out


class AsyncRecall:
    """A client of a recall server (``recall serve``).

    Args:
        base_url: the server, e.g. ``http://127.0.0.1:8080`` (default: ``$RECALL_URL``, else
            that address).
        api_key: a key from ``recall keys create`` (default: ``$RECALL_API_KEY``; none for a
            ``--no-auth`` server).
        timeout: seconds for each request, its whole answer read (a streamed chat: between two
            events).
        max_retries: how many times a request answered 429 or 503 (or, for a request that
            changes nothing, one that could not connect) is sent again, waiting as the
            server's ``Retry-After`` says, else with exponential backoff.
        http_client: an ``httpx.AsyncClient`` to use instead of the client's own.

    Use it as a context manager, or call :meth:`close`.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        http_client: httpx.AsyncClient | None = None,
    ) -> None:
        self.base_url = (base_url or os.environ.get("RECALL_URL") or DEFAULT_URL).rstrip("/")
        key = api_key if api_key is not None else os.environ.get("RECALL_API_KEY")
        self._headers = {"accept": "application/json"}
        if key:
            self._headers["authorization"] = f"Bearer {key}"
        self._retry = RetryPolicy(max_retries)
        self._own = http_client is None
        self._http = http_client or httpx.AsyncClient(timeout=timeout)
        self._timeout = timeout

    async def close(self) -> None:
        """Closes the connections (not a client passed in as ``http_client``)."""
        if self._own:
            await self._http.aclose()

    async def __aenter__(self) -> AsyncRecall:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        # Never the key.
        return f"{type(self).__name__}(base_url={self.base_url!r})"

    # -- transport ---------------------------------------------------------------------------

    def _request(self, method: str, path: str, params: Mapping[str, Any] | None, body: Any) -> httpx.Request:
        headers = dict(self._headers)
        content = None
        if body is not None:
            headers["content-type"] = "application/json"
            content = json.dumps(body).encode()
        return self._http.build_request(
            method, self.base_url + path, params=params, headers=headers, content=content
        )

    async def _send(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None, stream: bool = False) -> httpx.Response:
        """Sends a request, retrying 429 and 503 (and, for a GET, a failed connection). Without
        ``stream`` the whole answer is read within ``timeout`` (httpx's timeouts are per read:
        a body trickling in byte by byte would never end); a stream's timeout is httpx's,
        between two reads."""
        attempt = 0
        while True:
            request = self._request(method, path, params, body)
            deadline = time.monotonic() + self._timeout
            try:
                response = await self._http.send(request, stream=True)
            except httpx.TransportError as e:
                # A request that changes nothing may be sent again; a POST that may have been
                # received is not (an append with client ids is safe to repeat by the caller).
                if method in ("GET", "HEAD") and attempt < self._retry.max_retries:
                    await asyncio.sleep(self._retry.backoff(attempt))
                    attempt += 1
                    continue
                raise ConnectionError(f"{method} {path}: {e}") from e
            if response.status_code in (429, 503) and attempt < self._retry.max_retries:
                wait = self._retry.wait(attempt, response.headers.get("retry-after"))
                await response.aclose()
                await asyncio.sleep(wait)
                attempt += 1
                continue
            if response.status_code >= 400 or not stream:
                response = await self._read_within(response, deadline, method, path)
            if response.status_code >= 400:
                raise _error(response)
            return response

    async def _read_within(self, response: httpx.Response, deadline: float, method: str, path: str) -> httpx.Response:
        """``response`` read whole, or :class:`ConnectionError` once ``deadline`` has passed."""
        raw = bytearray()
        try:
            async for chunk in response.aiter_raw():
                raw += chunk
                if time.monotonic() > deadline:
                    raise ConnectionError(f"{method} {path}: no whole answer within {self._timeout} s")
        except httpx.TransportError as e:
            raise ConnectionError(f"{method} {path}: {e}") from e
        finally:
            await response.aclose()
        # A response built of bytes is read (and decoded, as its headers say) at once.
        return httpx.Response(response.status_code, headers=response.headers, content=bytes(raw), request=response.request)

    async def _json(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None) -> Any:
        response = await self._send(method, path, params=params, body=body)
        if response.status_code == 204 or not response.content:
            return None
        return response.json()

    async def _events(self, path: str, body: dict[str, Any]) -> AsyncIterator[ChatEvent]:
        response = await self._send("POST", path, body=body, stream=True)
        decoder = SSEDecoder()
        try:
            async for chunk in response.aiter_text():
                for event in decoder.feed(chunk):
                    yield event
            for event in decoder.end():
                yield event
        finally:
            await response.aclose()

    # -- conversations -----------------------------------------------------------------------

    @route("POST", "/v1/conversations")
    async def create_conversation(self, body: m.CreateConversation | Mapping[str, Any] | None = None, /, **fields: Any) -> m.ConversationView:
        """``POST /v1/conversations``: a new conversation (``title``, ``system_prompt``,
        ``metadata``, ``policy``: all optional)."""
        data = await self._json("POST", "/v1/conversations", body=_body(m.CreateConversation, body, fields))
        return m.ConversationView.model_validate(data)

    @route("GET", "/v1/conversations")
    async def list_conversations(self, *, after: str | None = None, limit: int | None = None) -> m.ConversationPage:
        """``GET /v1/conversations``: one page, newest first; pass its ``next_after`` as
        ``after`` for the next (or use :meth:`iter_conversations`)."""
        data = await self._json("GET", "/v1/conversations", params=_query(after=after, limit=limit))
        return m.ConversationPage.model_validate(data)

    async def iter_conversations(self, *, limit: int | None = None) -> AsyncIterator[m.ConversationView]:
        """Every conversation of the key's tenant, page after page."""
        after: str | None = None
        while True:
            page = await self.list_conversations(after=after, limit=limit)
            for c in page.data:
                yield c
            if not page.next_after:
                return
            after = page.next_after

    @route("GET", "/v1/conversations/{id}")
    async def get_conversation(self, id: str) -> m.ConversationView:
        """``GET /v1/conversations/{id}``: the conversation, with its newest summary."""
        data = await self._json("GET", f"/v1/conversations/{_seg(id)}")
        return m.ConversationView.model_validate(data)

    @route("PATCH", "/v1/conversations/{id}")
    async def update_conversation(self, id: str, body: m.UpdateConversation | Mapping[str, Any] | None = None, /, **fields: Any) -> m.ConversationView:
        """``PATCH /v1/conversations/{id}``: the title, system prompt, metadata or default
        policy (``None`` for ``title``, ``system_prompt`` or ``policy`` clears it)."""
        payload = _body(m.UpdateConversation, body, fields, keep_none=True)
        data = await self._json("PATCH", f"/v1/conversations/{_seg(id)}", body=payload)
        return m.ConversationView.model_validate(data)

    @route("DELETE", "/v1/conversations/{id}")
    async def delete_conversation(self, id: str, *, cascade: bool | None = None) -> None:
        """``DELETE /v1/conversations/{id}`` (``cascade=True``: with its forks)."""
        await self._json("DELETE", f"/v1/conversations/{_seg(id)}", params=_query(cascade=cascade))

    @route("POST", "/v1/conversations/{id}/clear")
    async def clear_conversation(self, id: str) -> m.Cleared:
        """``POST /v1/conversations/{id}/clear``: removes every message (seqs go on from
        where they were)."""
        data = await self._json("POST", f"/v1/conversations/{_seg(id)}/clear")
        return m.Cleared.model_validate(data)

    @route("POST", "/v1/conversations/{id}/fork")
    async def fork(self, id: str, at: int, *, title: str | None = None) -> m.ConversationView:
        """``POST /v1/conversations/{id}/fork``: a new conversation whose history is this
        one's up to seq ``at``."""
        data = await self._json("POST", f"/v1/conversations/{_seg(id)}/fork", body=_body(m.ForkBody, None, {"at": at, "title": title}))
        return m.ConversationView.model_validate(data)

    @route("GET", "/v1/conversations/{id}/forks")
    async def forks(self, id: str) -> m.ForkList:
        """``GET /v1/conversations/{id}/forks``: the conversations forked from this one."""
        data = await self._json("GET", f"/v1/conversations/{_seg(id)}/forks")
        return m.ForkList.model_validate(data)

    @route("POST", "/v1/conversations/{id}/compact")
    async def compact(self, id: str, body: m.CompactBody | Mapping[str, Any] | None = None, /, **fields: Any) -> m.CompactView:
        """``POST /v1/conversations/{id}/compact``: summarise what the window leaves behind
        (``backend``, ``model``, ``format`` and the policy fields: all optional)."""
        data = await self._json("POST", f"/v1/conversations/{_seg(id)}/compact", body=_body(m.CompactBody, body, fields))
        return m.CompactView.model_validate(data)

    # -- messages ----------------------------------------------------------------------------

    async def append_message(self, id: str, message: Mapping[str, Any]) -> m.AppendResponse:
        """``POST /v1/conversations/{id}/messages`` with one message (Anthropic- or
        OpenAI-shaped; optional client ``id``, ``metadata`` and ``created_at``)."""
        data = await self._json("POST", f"/v1/conversations/{_seg(id)}/messages", body=dict(message))
        return m.AppendResponse.model_validate(data)

    @route("POST", "/v1/conversations/{id}/messages")
    async def append_messages(self, id: str, messages: Sequence[Mapping[str, Any]]) -> m.AppendResponse:
        """``POST /v1/conversations/{id}/messages`` with a batch: all stored, in order, or
        none."""
        data = await self._json("POST", f"/v1/conversations/{_seg(id)}/messages", body={"messages": [dict(x) for x in messages]})
        return m.AppendResponse.model_validate(data)

    @route("GET", "/v1/conversations/{id}/messages")
    async def list_messages(self, id: str, *, after: int | None = None, limit: int | None = None) -> m.MessagePage:
        """``GET /v1/conversations/{id}/messages``: one page in seq order after seq ``after``
        (or use :meth:`iter_messages`)."""
        data = await self._json("GET", f"/v1/conversations/{_seg(id)}/messages", params=_query(after=after, limit=limit))
        return m.MessagePage.model_validate(data)

    async def iter_messages(self, id: str, *, after: int = 0, limit: int | None = None) -> AsyncIterator[m.MessageView]:
        """Every message after seq ``after``, page after page."""
        cursor: int | None = after
        while cursor is not None:
            page = await self.list_messages(id, after=cursor, limit=limit)
            for msg in page.data:
                yield msg
            cursor = page.next_after

    @route("DELETE", "/v1/conversations/{id}/messages/{seq}")
    async def redact(self, id: str, seq: int, *, compact: bool | None = None) -> None:
        """``DELETE /v1/conversations/{id}/messages/{seq}``: the message's content is erased
        for good (its place and seq stay, marked ``redacted``)."""
        await self._json("DELETE", f"/v1/conversations/{_seg(id)}/messages/{_seg(seq)}", params=_query(compact=compact))

    @route("GET", "/v1/conversations/{id}/messages/{seq}/alternatives")
    async def alternatives(self, id: str, seq: int) -> m.AlternativeList:
        """``GET /v1/conversations/{id}/messages/{seq}/alternatives``: the message at ``seq``
        on every path through the forks."""
        data = await self._json("GET", f"/v1/conversations/{_seg(id)}/messages/{_seg(seq)}/alternatives")
        return m.AlternativeList.model_validate(data)

    # -- context and search ------------------------------------------------------------------

    @route("POST", "/v1/conversations/{id}/context")
    async def context(self, id: str, body: m.ContextBody | Mapping[str, Any] | None = None, /, **fields: Any) -> m.ContextResponse:
        """``POST /v1/conversations/{id}/context``: the prompt the next request would carry
        (``format``, ``query``, ``current``, ``escape`` and every policy field:
        ``max_tokens``, ``recall_tokens``, ``summarize``…)."""
        data = await self._json("POST", f"/v1/conversations/{_seg(id)}/context", body=_body(m.ContextBody, body, fields))
        return m.ContextResponse.model_validate(data)

    @route("GET", "/v1/search")
    async def search(self, q: str, *, limit: int | None = None) -> m.SearchResults:
        """``GET /v1/search``: full-text search over the tenant's messages."""
        data = await self._json("GET", "/v1/search", params=_query(q=q, limit=limit))
        return m.SearchResults.model_validate(data)

    # -- chat --------------------------------------------------------------------------------

    @route("POST", "/v1/conversations/{id}/chat")
    def chat(self, id: str, content: str | Sequence[Mapping[str, Any]], *, message_id: str | None = None, **options: Any) -> AsyncIterator[ChatEvent]:
        """``POST /v1/conversations/{id}/chat``: sends a user message and streams the turn's
        events (``user_stored``, ``assistant_chunk``, ``tool_use``, ``tool_result``, then
        ``done`` or ``error``). ``options``: ``backend``, ``model``, ``max_output_tokens``
        (the reply limit) and the policy fields (``max_tokens`` is the history budget)."""
        fields = {"content": content, "id": message_id, **options}
        return self._events(f"/v1/conversations/{_seg(id)}/chat", _body(m.ChatBody, None, fields))

    @route("POST", "/v1/conversations/{id}/retry")
    def retry(self, id: str, seq: int, **options: Any) -> AsyncIterator[ChatEvent]:
        """``POST /v1/conversations/{id}/retry``: a new reply for the message at ``seq``, on a
        fork (its ``forked`` event names it)."""
        return self._events(f"/v1/conversations/{_seg(id)}/retry", _body(m.RetryBody, None, {"seq": seq, **options}))

    @route("POST", "/v1/conversations/{id}/edit")
    def edit(self, id: str, seq: int, content: str | Sequence[Mapping[str, Any]], *, message_id: str | None = None, **options: Any) -> AsyncIterator[ChatEvent]:
        """``POST /v1/conversations/{id}/edit``: replaces the user message at ``seq`` on a
        fork and runs a turn there."""
        fields = {"seq": seq, "content": content, "id": message_id, **options}
        return self._events(f"/v1/conversations/{_seg(id)}/edit", _body(m.EditBody, None, fields))

    @route("GET", "/v1/conversations/{id}/ws")
    def chat_ws(self, id: str) -> ChatSocket:
        """``GET /v1/conversations/{id}/ws``: a WebSocket for several turns; use it as an
        ``async with`` block and call :meth:`ChatSocket.turn`."""
        return ChatSocket(self, id)

    # -- tasks -------------------------------------------------------------------------------

    @route("POST", "/v1/tasks")
    async def create_task(self, body: m.CreateTaskArgs | Mapping[str, Any] | None = None, /, **fields: Any) -> m.TaskCreated:
        """``POST /v1/tasks``: a task for a sub-agent (``description``, ``priority``,
        ``conversation_history``…) and its brief."""
        data = await self._json("POST", "/v1/tasks", body=_body(m.CreateTaskArgs, body, fields))
        return m.TaskCreated.model_validate(data)

    @route("GET", "/v1/tasks/{id}")
    async def get_task(self, id: str) -> m.TaskView:
        """``GET /v1/tasks/{id}``."""
        data = await self._json("GET", f"/v1/tasks/{_seg(id)}")
        return m.TaskView.model_validate(data)

    # -- operations --------------------------------------------------------------------------

    @route("GET", "/healthz")
    async def healthz(self) -> str:
        """``GET /healthz``: the process answers."""
        response = await self._send("GET", "/healthz")
        return response.text

    @route("GET", "/readyz")
    async def readyz(self) -> str:
        """``GET /readyz``: the database answers."""
        response = await self._send("GET", "/readyz")
        return response.text

    @route("GET", "/metrics")
    async def metrics(self) -> str:
        """``GET /metrics``: Prometheus text."""
        response = await self._send("GET", "/metrics")
        return response.text


class ChatSocket:
    """A chat WebSocket (``GET /v1/conversations/{id}/ws``): turns one after another on one
    connection, each turn's events as :class:`ChatEvent`."""

    def __init__(self, client: AsyncRecall, id: str) -> None:
        self._client = client
        self._id = id
        self._ws: Any = None
        self._next = 0

    async def __aenter__(self) -> ChatSocket:
        from websockets.asyncio.client import connect

        url = self._client.base_url.replace("http", "ws", 1) + f"/v1/conversations/{_seg(self._id)}/ws"
        headers = {k: v for k, v in self._client._headers.items() if k == "authorization"}
        try:
            self._ws = await connect(url, additional_headers=headers, open_timeout=self._client._timeout)
        except Exception as e:
            raise _ws_error(e) from None
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._ws.close()

    async def turn(self, content: str | Sequence[Mapping[str, Any]], *, message_id: str | None = None, **options: Any) -> AsyncIterator[ChatEvent]:
        """Sends a user message; yields the turn's events up to ``done`` or ``error``."""
        self._next += 1
        request_id = f"r{self._next}"
        frame = _body(m.ChatBody, None, {"content": content, "id": message_id, **options})
        frame.update({"type": "user_message", "request_id": request_id})
        await self._ws.send(json.dumps(frame))
        while True:
            raw = await self._ws.recv()
            data = json.loads(raw)
            kind = data.pop("type", "")
            data.pop("request_id", None)
            yield ChatEvent(kind, data)
            if kind in ("done", "error"):
                return


def _error(response: httpx.Response) -> Exception:
    try:
        body = response.json()
    except ValueError:
        body = None
    return error_for(response.status_code, body, response.text)


def _ws_error(e: Exception) -> Exception:
    """A refused WebSocket upgrade as the API's error (the server answers it like any
    request: 401, 404…)."""
    resp = getattr(e, "response", None)
    if resp is not None and getattr(resp, "status_code", None):
        try:
            body = json.loads(bytes(resp.body or b""))
        except ValueError:
            body = None
        return error_for(resp.status_code, body, bytes(resp.body or b"").decode(errors="replace"))
    return ConnectionError(str(e))
