"""The sync and async clients against a real `recall serve`: every route, its models, and
the errors a refused request raises (with nothing stored)."""

from __future__ import annotations

import asyncio
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

import recall_client as rc
from recall_client import models as m


@pytest.fixture
def client(server):
    with rc.Recall(server.url, server.key) as c:
        yield c


def test_conversation_round_trip_with_every_field(client):
    c = client.create_conversation(title="Support", system_prompt="Be brief.", metadata={"team": "web"}, policy={"max_tokens": 4000})
    assert isinstance(c, m.ConversationView)
    assert (c.title, c.system_prompt, c.metadata, c.message_count) == ("Support", "Be brief.", {"team": "web"}, 0)
    assert c.policy is not None and c.policy.max_tokens == 4000
    got = client.get_conversation(c.id)
    assert got.id == c.id and got.created_at == c.created_at

    updated = client.update_conversation(c.id, title="Renamed", policy=None)
    assert updated.title == "Renamed" and updated.policy is None
    # Only what was passed changed.
    assert updated.system_prompt == "Be brief."

    ids = [x.id for x in client.iter_conversations(limit=1)]
    assert c.id in ids
    client.delete_conversation(c.id)
    with pytest.raises(rc.NotFoundError) as e:
        client.get_conversation(c.id)
    assert e.value.status == 404 and e.value.type == "not_found"
    assert c.id in e.value.message


def test_messages_batches_client_ids_and_times(client):
    c = client.create_conversation()
    r = client.append_messages(
        c.id,
        [
            {"role": "user", "content": "We use FastAPI.", "id": "u1", "created_at": "2023-05-08T13:56:00Z"},
            {"role": "assistant", "content": "FastAPI it is.", "id": "a1", "created_at": "2023-05-08T13:56:04.250+00:00", "metadata": {"k": 1}},
        ],
    )
    assert [x.seq for x in r.messages] == [1, 2]
    # A retry under the same client id stores nothing.
    again = client.append_message(c.id, {"role": "user", "content": "We use FastAPI.", "id": "u1"})
    assert again.messages[0].seq == 1 and again.messages[0].duplicate
    page = client.list_messages(c.id, limit=1)
    assert [x.seq for x in page.data] == [1] and page.next_after == 1
    every = list(client.iter_messages(c.id, limit=1))
    assert [x.seq for x in every] == [1, 2]
    assert every[0].created_at == "2023-05-08T13:56:00Z"
    assert every[1].created_at == "2023-05-08T13:56:04.250Z"
    assert every[1].message["metadata"] == {"k": 1}


def test_refused_requests_raise_the_documented_errors_and_store_nothing(server, client):
    c = client.create_conversation()
    client.append_message(c.id, {"role": "user", "content": "first", "id": "x", "created_at": "2024-01-02T00:00:00Z"})

    # 409: the same client id with another message.
    with pytest.raises(rc.ConflictError) as e:
        client.append_message(c.id, {"role": "user", "content": "something else", "id": "x"})
    assert e.value.status == 409 and e.value.type == "conflict" and "x" in e.value.message

    # 422: a batch whose second message goes back in time; nothing of it is stored.
    with pytest.raises(rc.InvalidRequestError) as e:
        client.append_messages(
            c.id,
            [
                {"role": "assistant", "content": "ok", "created_at": "2024-01-03T00:00:00Z"},
                {"role": "user", "content": "older", "created_at": "2023-01-01T00:00:00Z"},
            ],
        )
    assert e.value.status == 422 and "messages[1]" in e.value.message
    assert client.get_conversation(c.id).message_count == 1

    # 422 from the server for a policy value out of range (the client's model lets it by).
    with pytest.raises(rc.InvalidRequestError) as e:
        client.context(c.id, {"max_tokens": 100, "recall_tokens": 200})
    assert "recall_tokens" in e.value.message

    # An unknown field is refused before any request is sent.
    with pytest.raises(rc.InvalidRequestError) as e:
        client.context(c.id, max_tokenz=5)
    assert "max_tokenz" in str(e.value)

    # 401: a wrong key, whatever the route.
    with rc.Recall(server.url, "not-a-key") as bad:
        with pytest.raises(rc.AuthenticationError) as e:
            bad.create_conversation(title="never")
        assert e.value.status == 401 and e.value.message
    titles = [x.title for x in client.iter_conversations()]
    assert "never" not in titles

    # Another tenant's conversation is not found.
    with rc.Recall(server.url, server.other_key) as other:
        with pytest.raises(rc.NotFoundError):
            other.get_conversation(c.id)
    assert server.rows(f"select count(*) from messages where conversation_id = '{c.id}'") == [(1,)]


def test_context_takes_every_policy_field_and_reports_what_it_did(client):
    c = client.create_conversation(system_prompt="Be brief.")
    client.append_messages(c.id, [
        {"role": "user", "content": "My sister's dog is called Biscuit."},
        {"role": "assistant", "content": "Nice name."},
        {"role": "user", "content": "What about basil on a windowsill?"},
        {"role": "assistant", "content": "Water it little and often."},
        {"role": "user", "content": "What is the dog called?"},
    ])
    ctx = client.context(c.id, format="anthropic", max_turns=1, recall_tokens=200, max_tokens=1000, query="dog called")
    assert isinstance(ctx, m.ContextResponse)
    assert ctx.format == "anthropic"
    assert ctx.window is not None and ctx.window.last_seq == 5
    assert "Biscuit" in str(ctx.prompt)
    assert ctx.stats.recalled is not None
    # The same through the model type.
    ctx2 = client.context(c.id, m.ContextBody(format="transcript", max_turns=1))
    assert isinstance(ctx2.prompt, str) and "dog called" in ctx2.prompt


def test_search_forks_alternatives_and_redaction(client):
    c = client.create_conversation()
    client.append_messages(c.id, [
        {"role": "user", "content": "The launch code word is marmalade."},
        {"role": "assistant", "content": "Noted."},
    ])
    word = f"zebra{uuid.uuid4().hex[:8]}"
    client.append_message(c.id, {"role": "user", "content": f"And the {word} plan?"})
    hits = client.search(word)
    assert [(h.conversation_id, h.seq) for h in hits.data] == [(c.id, 3)]

    f = client.fork(c.id, 2, title="branch")
    assert f.forked_from is not None and (f.forked_from.conversation_id, f.forked_from.seq) == (c.id, 2)
    client.append_message(f.id, {"role": "user", "content": "A different third message."})
    assert [x.id for x in client.forks(c.id).data] == [f.id]
    alts = client.alternatives(c.id, 3)
    assert sorted(a.conversation_id for a in alts.data) == sorted([c.id, f.id])
    assert [a.current for a in alts.data if a.conversation_id == c.id] == [True]

    # A conversation with forks cannot be cleared or deleted alone: 409.
    with pytest.raises(rc.ConflictError):
        client.clear_conversation(c.id)
    client.redact(f.id, 3)
    redacted = client.list_messages(f.id, after=2).data[0]
    assert redacted.status == "redacted" and "different" not in str(redacted.message)
    client.delete_conversation(c.id, cascade=True)
    with pytest.raises(rc.NotFoundError):
        client.get_conversation(f.id)


def test_dot_segments_are_refused_before_a_request(client):
    """Issue 49: ``redact(cid, "..")`` resolved to ``DELETE /v1/conversations/{cid}`` and
    deleted the conversation; ``"."`` reached ``…/messages``. Now neither leaves the client."""
    c = client.create_conversation()
    client.append_message(c.id, {"role": "user", "content": "keep me"})
    for bad in ("..", ".", ""):
        with pytest.raises(rc.InvalidRequestError, match="path segment"):
            client.redact(c.id, bad)
        with pytest.raises(rc.InvalidRequestError, match="path segment"):
            client.get_conversation(bad)
        with pytest.raises(rc.InvalidRequestError, match="path segment"):
            client.alternatives(c.id, bad)
    assert client.get_conversation(c.id).message_count == 1
    assert client.list_messages(c.id).data[0].status == "complete"
    # An id with other dots is escaped, not refused: a 404, not another route.
    with pytest.raises(rc.NotFoundError):
        client.get_conversation("../x")


def test_clear_and_compact_without_a_summariser(server, client):
    c = client.create_conversation()
    client.append_message(c.id, {"role": "user", "content": "hello"})
    assert client.clear_conversation(c.id).removed == 1
    assert client.get_conversation(c.id).message_count == 0
    # This server has no backend to summarise with: 503, saying how to give it one (a
    # compaction that runs is in test_chat.py).
    with rc.Recall(server.url, server.key, max_retries=0) as once:
        with pytest.raises(rc.UnavailableError) as e:
            once.compact(c.id, max_turns=4)
    assert e.value.status == 503 and "OPENAI_BASE_URL" in e.value.message


def test_tasks(client):
    t = client.create_task(description="Fix the login page: it 500s on Safari.", priority="P1", conversation_history=[{"role": "user", "content": "It breaks on Safari."}])
    assert isinstance(t, m.TaskCreated) and t.conversation_messages_count == 1
    got = client.get_task(t.task_id)
    assert got.description == "Fix the login page: it 500s on Safari." and got.priority == "P1"
    assert [h.content for h in got.conversation_history] == ["It breaks on Safari."]
    with pytest.raises(rc.NotFoundError):
        client.get_task("no-such-task")


def test_operational_routes(client):
    assert client.healthz()
    assert client.readyz()
    assert "recall_http_requests_total" in client.metrics()


async def test_the_async_client_reads_what_the_sync_one_wrote(server, client):
    c = client.create_conversation(title="both")
    client.append_message(c.id, {"role": "user", "content": "one"})
    async with rc.AsyncRecall(server.url, server.key) as a:
        got = await a.get_conversation(c.id)
        assert got == client.get_conversation(c.id)
        seqs = [x.seq async for x in a.iter_messages(c.id)]
        assert seqs == [1]
        # Concurrent appends under distinct ids: each stored once, none lost.
        await asyncio.gather(*(a.append_message(c.id, {"role": "user", "content": f"m{i}", "id": f"m{i}"}) for i in range(10)))
        assert (await a.get_conversation(c.id)).message_count == 11
        with pytest.raises(rc.NotFoundError):
            await a.get_conversation("nope")


class _Throttle(BaseHTTPRequestHandler):
    """Answers 429 with `Retry-After: 0` twice, then 200: the client's retry loop."""

    hits: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        type(self).hits.append(self.path)
        if len(type(self).hits) <= 2:
            body = b'{"error":{"type":"rate_limited","message":"slow down"}}'
            self.send_response(429)
            self.send_header("retry-after", "0")
        else:
            body = b"ok"
            self.send_response(200)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_429_is_retried_as_retry_after_says_then_raised():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Throttle)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        _Throttle.hits = []
        with rc.Recall(url, "k", max_retries=2) as c:
            assert c.healthz() == "ok"
        assert len(_Throttle.hits) == 3
        _Throttle.hits = []
        with rc.Recall(url, "k", max_retries=1) as c:
            with pytest.raises(rc.RateLimitedError) as e:
                c.healthz()
        assert e.value.message == "slow down" and len(_Throttle.hits) == 2
    finally:
        httpd.shutdown()


class _Trickle(BaseHTTPRequestHandler):
    """Headers at once, then the body one byte every 0.2 s, for ever."""

    def do_GET(self):  # noqa: N802 (the handler's name)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.end_headers()
        try:
            self.wfile.write(b"{")
            for _ in range(300):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass

    def log_message(self, *args):
        pass


def test_a_body_trickling_in_does_not_outlast_the_timeout():
    """Issue 49: a 2 s timeout waited 40 s for a body sent a byte a second (httpx's timeouts
    are per read). Now the whole answer must come within it, in both clients."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Trickle)
    httpd.daemon_threads = True
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        started = time.monotonic()
        with rc.Recall(url, "k", timeout=1, max_retries=0) as c:
            with pytest.raises(rc.ConnectionError, match="within 1 s"):
                c.get_conversation("c1")
        assert time.monotonic() - started < 5

        async def run():
            async with rc.AsyncRecall(url, "k", timeout=1, max_retries=0) as a:
                with pytest.raises(rc.ConnectionError, match="within 1 s"):
                    await a.get_conversation("c1")

        started = time.monotonic()
        asyncio.run(run())
        assert time.monotonic() - started < 5
    finally:
        httpd.shutdown()


def test_the_key_and_url_come_from_the_environment(server, monkeypatch):
    monkeypatch.setenv("RECALL_URL", server.url)
    monkeypatch.setenv("RECALL_API_KEY", server.key)
    with rc.Recall() as c:
        assert c.create_conversation(title="from env").title == "from env"
        assert server.key not in repr(c)


def test_an_unreachable_server_is_a_connection_error():
    with rc.Recall(f"http://127.0.0.1:{_closed_port()}", "k", max_retries=0) as c:
        with pytest.raises(rc.ConnectionError):
            c.healthz()


def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
