"""Streamed chat through the clients, with the local model as the server's backend: SSE as an
iterator, the WebSocket, retry and edit on forks, and a compaction that runs."""

from __future__ import annotations

import pytest

import recall_client as rc

OPTS = {"max_output_tokens": 24}


def _turn(events) -> tuple[str, dict]:
    kinds, text, done = [], "", {}
    for e in events:
        kinds.append(e.type)
        text += e.delta
        if e.type == "done":
            done = e.data
        assert e.type != "error", e.data
    assert kinds[0] in ("user_stored", "forked") and kinds[-1] == "done", kinds
    return text, done


def test_chat_streams_and_stores_both_messages(chat_server):
    with rc.Recall(chat_server.url, chat_server.key) as r:
        c = r.create_conversation()
        text, done = _turn(r.chat(c.id, "Say hello in three words.", message_id="u1", **OPTS))
        assert text.strip()
        assert (done["user_message_id"], done["message_id"]) == (1, 2)
        msgs = [x.message for x in r.iter_messages(c.id)]
        assert [x["role"] for x in msgs] == ["user", "assistant"]
        # The same client id again: the turn ran already.
        with pytest.raises(rc.ConflictError):
            list(r.chat(c.id, "Say hello in three words.", message_id="u1", **OPTS))
        # A policy field in a chat body is the history budget, checked by the server.
        with pytest.raises(rc.InvalidRequestError) as e:
            list(r.chat(c.id, "x", max_tokens=10, recall_tokens=20))
        assert "recall_tokens" in e.value.message
        assert r.get_conversation(c.id).message_count == 2
        # The sync WebSocket (websockets' sync client).
        with r.chat_ws(c.id) as ws:
            _turn(ws.turn("Name a colour.", **OPTS))
        assert r.get_conversation(c.id).message_count == 4
        with pytest.raises(rc.NotFoundError):
            with r.chat_ws("no-such-conversation"):
                pass


async def test_async_chat_websocket_retry_and_edit(chat_server):
    async with rc.AsyncRecall(chat_server.url, chat_server.key) as a:
        c = await a.create_conversation()
        seen = []
        async with a.chat_ws(c.id) as ws:
            for prompt in ["Name a colour.", "Name a fruit."]:
                kinds = [e.type async for e in ws.turn(prompt, **OPTS)]
                assert kinds[0] == "user_stored" and kinds[-1] == "done", kinds
                seen.append(kinds)
        assert (await a.get_conversation(c.id)).message_count == 4

        # Retry the last reply: a fork with the first three messages and a new reply.
        events = [e async for e in a.retry(c.id, 4, **OPTS)]
        forked = [e.data["conversation_id"] for e in events if e.type == "forked"]
        assert len(forked) == 1 and events[-1].type == "done"
        f = await a.get_conversation(forked[0])
        assert f.forked_from is not None and f.forked_from.seq == 3 and f.message_count == 4

        # Edit the first user message: another fork, from before it.
        events = [e async for e in a.edit(c.id, 1, "Name an animal.", **OPTS)]
        assert events[-1].type == "done"
        alts = await a.alternatives(c.id, 1)
        assert len(alts.data) == 2

    # A socket for an unknown conversation is refused with the API's error.
    async with rc.AsyncRecall(chat_server.url, chat_server.key) as a:
        with pytest.raises(rc.NotFoundError):
            async with a.chat_ws("no-such-conversation"):
                pass


def test_compaction_runs_with_the_local_model(chat_server):
    with rc.Recall(chat_server.url, chat_server.key) as r:
        c = r.create_conversation()
        r.append_messages(c.id, [
            {"role": "user", "content": "My sister Ingrid adopted a greyhound called Biscuit."},
            {"role": "assistant", "content": "Lovely."},
            {"role": "user", "content": "Basil needs light."},
            {"role": "assistant", "content": "Yes, a sunny windowsill."},
            {"role": "user", "content": "Thanks."},
        ])
        report = r.compact(c.id, max_turns=1, summary_tokens=200)
        assert report.status == "compacted" and report.calls >= 1
        assert report.summary is not None and report.summary.to_seq >= 1
        assert r.get_conversation(c.id).summary == report.summary
