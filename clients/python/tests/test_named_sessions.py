"""Sessions named by the user (issue 53): `RecallSession("user_123")` and
`RecallChatMessageHistory("user_123")` work on first use, as the SDKs' own `SQLiteSession`
and `SQLChatMessageHistory` do, find the same conversation again from another object or
process, stay within the key's tenant, and two processes racing on one new name share one
conversation."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import uuid

from langchain_core.messages import AIMessage, HumanMessage

import recall_client as rc
from recall_client.integrations.langchain import RecallChatMessageHistory
from recall_client.integrations.openai_agents import RecallSession


def _name() -> str:
    return f"user_{uuid.uuid4().hex[:8]}"


async def test_a_named_agents_session_is_created_on_first_use_and_found_again(server):
    name = _name()
    async with rc.AsyncRecall(server.url, server.key) as client:
        first = RecallSession(name, client=client)
        assert await first.get_items() == []
        await first.add_items([{"role": "user", "content": "My cat is called Miso."}])
        again = RecallSession(name, client=client)
        assert await again.get_items() == [{"role": "user", "content": "My cat is called Miso."}]
        assert again.session_id == name
        assert await again.conversation_id() == await first.conversation_id()
        # An id of the tenant's conversation names itself.
        by_id = RecallSession(await first.conversation_id(), client=client)
        assert await by_id.get_items() == await first.get_items()
    # Another tenant's session of the same name is another conversation.
    async with rc.AsyncRecall(server.url, server.other_key) as other:
        theirs = RecallSession(name, client=other)
        assert await theirs.get_items() == []
        assert await theirs.conversation_id() != await first.conversation_id()


def test_a_named_langchain_history_is_created_on_first_use(server):
    name = _name()
    with rc.Recall(server.url, server.key) as client:
        h = RecallChatMessageHistory(name, client=client)
        assert h.messages == []
        h.add_messages([HumanMessage("hi"), AIMessage("hello")])
        # LangChain's own keyword, as SQLChatMessageHistory(session_id=...) takes it.
        again = RecallChatMessageHistory(session_id=name, client=client)
        assert [m.content for m in again.messages] == ["hi", "hello"]
        again.clear()
        assert RecallChatMessageHistory(name, client=client).messages == []


async def test_a_named_langchain_history_async(server):
    name = _name()
    async with rc.AsyncRecall(server.url, server.key) as client:
        h = RecallChatMessageHistory(name, async_client=client)
        await h.aadd_messages([HumanMessage("one")])
        again = RecallChatMessageHistory(session_id=name, async_client=client)
        assert [m.content for m in await again.aget_messages()] == ["one"]


RACER = textwrap.dedent(
    """
    import asyncio, sys
    from recall_client.integrations.openai_agents import RecallSession

    async def main():
        s = RecallSession(sys.argv[1])
        await s.add_items([{"role": "user", "content": "from " + sys.argv[2]}])
        print(await s.conversation_id())

    asyncio.run(main())
    """
)


def test_two_processes_racing_on_a_new_name_share_one_conversation(server):
    name = _name()
    env = dict(os.environ, RECALL_URL=server.url, RECALL_API_KEY=server.key)
    procs = [
        subprocess.Popen([sys.executable, "-c", RACER, name, who], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        for who in ("p1", "p2")
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err.decode()
    ids = {out.decode().strip() for out, _ in outs}
    assert len(ids) == 1, ids
    (cid,) = ids
    with rc.Recall(server.url, server.key) as client:
        def text(content):
            return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)

        texts = sorted(text(m.message["content"]) for m in client.iter_messages(cid))
        assert texts == ["from p1", "from p2"]
        named = [c for c in client.iter_conversations() if c.id == cid]
        assert len(named) == 1
    rows = server.rows("SELECT conversation_id FROM conversation_keys WHERE conv_key = '%s'" % name)
    assert rows == [(cid,)]
