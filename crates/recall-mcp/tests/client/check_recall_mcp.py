"""Drives recall's MCP server with the official MCP Python SDK and checks every tool.

Usage: check_recall_mcp.py RECALL_BINARY DATABASE
       RECALL_KEY_TEAM_A=... RECALL_KEY_TEAM_B=... check_recall_mcp.py --http URL

The first form runs `recall mcp` over stdio (tenants by RECALL_TENANT); the second talks to
`recall serve`'s `/mcp` endpoint (e.g. http://127.0.0.1:8080/mcp) with the SDK's streamable
HTTP client, one API key per tenant in `Authorization: Bearer KEY` (keys come from the
environment, so that none is in a process listing), and also checks that a missing or wrong
key is refused with HTTP 401. The database must start empty.

Run by crates/recall-cli/tests/mcp_python.rs and mcp_http_python.rs (`cargo test`), with the
interpreter of the project-local venv that scripts/setup.sh creates (.tools/venv). Prints one
line per check and ends with `N passed, M failed`; exits 1 when any check failed.
"""

import json
import os
import sys
import traceback
from contextlib import asynccontextmanager

import anyio
import httpx2
import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

if sys.argv[1] == "--http":
    HTTP = True
    URL = sys.argv[2]
    KEYS = {"team-a": os.environ["RECALL_KEY_TEAM_A"], "team-b": os.environ["RECALL_KEY_TEAM_B"]}
else:
    HTTP = False
    RECALL, DB = sys.argv[1], sys.argv[2]
TOOLS = {
    "create_task",
    "get_task",
    "get_context",
    "append_message",
    "list_conversations",
    "create_conversation",
    "clear_conversation",
    "search_history",
    "fork_conversation",
    "retry_turn",
    "compact_conversation",
}
HEADER = "💬 CONVERSATION HISTORY (Context leading to this task):\n"

passed = 0
failed = 0


def check(name, cond, detail=""):
    global passed, failed
    if cond:
        passed += 1
        print(f"ok   {name}")
    else:
        failed += 1
        print(f"FAIL {name}: {detail}")


def http_client(headers, statuses=None):
    """An HTTP client for the SDK's transport; `statuses` collects every response status."""

    async def record(response):
        if statuses is not None:
            statuses.append(response.status_code)

    return httpx2.AsyncClient(
        headers=headers, timeout=httpx2.Timeout(120.0), event_hooks={"response": [record]}
    )


@asynccontextmanager
async def connect(tenant):
    """An MCP client session (not yet initialised) acting for `tenant`."""
    if HTTP:
        async with http_client({"Authorization": f"Bearer {KEYS[tenant]}"}) as http:
            async with streamable_http_client(URL, http_client=http) as (read, write):
                async with ClientSession(read, write) as s:
                    yield s
    else:
        params = StdioServerParameters(
            command=RECALL, args=["mcp", "--db", DB], env={"RECALL_TENANT": tenant}
        )
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write) as s:
                yield s


async def call(session, tool, args):
    """A tool call: (structured result or None, error text or None)."""
    r = await session.call_tool(tool, args)
    text = r.content[0].text if r.content else ""
    if r.is_error:
        return None, text
    # The text block repeats the structured content as JSON.
    check(f"{tool}: text content is the structured content", json.loads(text) == r.structured_content, text)
    return r.structured_content, None


async def main_tenant():
    async with connect("team-a") as s:
        init = await s.initialize()
        check("initialize: server name", init.server_info.name == "recall", init.server_info)
        check("initialize: tools capability", init.capabilities.tools is not None, init.capabilities)

        listed = await s.list_tools()
        names = {t.name for t in listed.tools}
        check("list_tools: the ten tools", names == TOOLS, names)
        schemas = {}
        for t in listed.tools:
            for kind, schema in (("input", t.input_schema), ("output", t.output_schema)):
                try:
                    cls = jsonschema.validators.validator_for(schema)
                    cls.check_schema(schema)
                    ok = schema.get("type") == "object" and cls in (
                        jsonschema.Draft202012Validator,
                        jsonschema.Draft7Validator,
                    )
                    check(f"{t.name}: {kind} schema is valid JSON Schema ({cls.__name__})", ok, schema)
                except Exception as e:  # noqa: BLE001 - report any schema failure
                    check(f"{t.name}: {kind} schema is valid JSON Schema", False, e)
            schemas[t.name] = t.input_schema
            check(f"{t.name}: has a description", bool(t.description), t)

        ct = schemas["create_task"]
        check("create_task schema: description required", ct.get("required") == ["description"], ct)
        validator = jsonschema.Draft202012Validator(ct)
        good = {
            "description": "d",
            "priority": "P1",
            "conversation_history": [{"role": "user", "content": "hi"}],
        }
        check("create_task schema accepts a valid call", validator.is_valid(good), list(validator.iter_errors(good)))
        check("create_task schema rejects priority P9", not validator.is_valid({"description": "d", "priority": "P9"}))
        check(
            "create_task schema rejects a role outside user/assistant/system",
            not validator.is_valid({"description": "d", "conversation_history": [{"role": "bot", "content": "x"}]}),
        )

        # Conversations.
        conv, err = await call(s, "create_conversation", {"title": "Support", "system_prompt": "Be brief."})
        check("create_conversation", conv is not None and conv["title"] == "Support", err)
        cid = conv["id"]
        a1, err = await call(s, "append_message", {"conversation_id": cid, "role": "user", "content": "We use FastAPI for the billing service."})
        check("append_message user: seq 1", a1 == {"conversation_id": cid, "seq": 1, "duplicate": False}, (a1, err))
        a2, err = await call(
            s,
            "append_message",
            {"conversation_id": cid, "role": "assistant", "content": [{"type": "text", "text": "Noted: FastAPI."}], "id": "c-2"},
        )
        check("append_message assistant blocks: seq 2", a2 is not None and a2["seq"] == 2, (a2, err))
        a2b, err = await call(
            s,
            "append_message",
            {"conversation_id": cid, "role": "assistant", "content": [{"type": "text", "text": "Noted: FastAPI."}], "id": "c-2"},
        )
        check("append_message: a repeated id with the same message is a duplicate", a2b == {"conversation_id": cid, "seq": 2, "duplicate": True}, (a2b, err))
        a2c, err = await call(s, "append_message", {"conversation_id": cid, "role": "assistant", "content": "retry", "id": "c-2"})
        check(
            "append_message: a repeated id with a different message is a tool error naming the id and its seq",
            a2c is None and err is not None and "'c-2'" in err and "seq 2" in err,
            (a2c, err),
        )

        ctx, err = await call(s, "get_context", {"conversation_id": cid})
        check(
            "get_context: transcript by default",
            ctx is not None
            and ctx["format"] == "transcript"
            and ctx["prompt"] == "Human: We use FastAPI for the billing service.\n\n---\n\nAssistant: Noted: FastAPI.",
            (ctx, err),
        )
        check("get_context: stats", ctx is not None and ctx["stats"]["included"] == 2 and ctx["stats"]["trimmed"] is False, ctx)
        ctx, err = await call(s, "get_context", {"conversation_id": cid, "format": "anthropic"})
        check(
            "get_context anthropic: a request body with the system prompt",
            ctx is not None and ctx["prompt"]["system"] == "Be brief." and len(ctx["prompt"]["messages"]) == 2,
            (ctx, err),
        )
        ctx, err = await call(s, "get_context", {"conversation_id": cid, "format": "xml", "current": "And the refund window?"})
        check(
            "get_context xml with current",
            ctx is not None and ctx["prompt"].endswith("Continue the conversation. The human says:\nAnd the refund window?"),
            (ctx, err),
        )
        ctx, err = await call(s, "get_context", {"conversation_id": cid, "max_turns": 0, "format": "bracket"})
        check("get_context: limits apply (max_turns 0 drops the history)", ctx is not None and ctx["stats"]["trimmed"] is True, (ctx, err))

        lst, err = await call(s, "list_conversations", {})
        check("list_conversations: the new conversation", lst is not None and [c["id"] for c in lst["conversations"]] == [cid], (lst, err))
        check("list_conversations: message count", lst is not None and lst["conversations"][0]["message_count"] == 2, lst)
        check("list_conversations: no next page", lst is not None and lst["next_after"] is None, lst)

        found, err = await call(s, "search_history", {"query": "fastapi billing"})
        check(
            "search_history: finds the message with a snippet",
            found is not None
            and len(found["hits"]) == 1
            and found["hits"][0]["conversation_id"] == cid
            and found["hits"][0]["seq"] == 1
            and found["hits"][0]["role"] == "user"
            and "**FastAPI**" in found["hits"][0]["snippet"],
            (found, err),
        )
        found, err = await call(s, "search_history", {"query": "fastapi"})
        check("search_history: every matching message", found is not None and sorted(h["seq"] for h in found["hits"]) == [1, 2], (found, err))
        found, err = await call(s, "search_history", {"query": "kubernetes"})
        check("search_history: no match is an empty list", found == {"hits": []}, (found, err))
        _, err = await call(s, "search_history", {"query": "?!"})
        check("search_history: a query without words is a tool error", err is not None and "no words" in err, err)

        # Tasks (seed 003).
        history = [
            {"role": "user", "content": "Can you help me fix the authentication bug?"},
            {"invalid": "structure"},
            {"role": "user", "content": ""},
            {"role": "invalid_role", "content": "test"},
            None,
            {"role": "assistant", "content": "I'll investigate the auth system."},
            {"role": "user", "content": "x" * 200},
        ]
        task, err = await call(
            s,
            "create_task",
            {
                "description": "Fix the JWT refresh bug",
                "priority": "P1",
                "background_context": "Recent deployment broke token refresh.",
                "expected_deliverables": ["Root cause", "Fix"],
                "conversation_history": history,
            },
        )
        check("create_task", task is not None, err)
        check(
            "create_task: seed warnings, exact",
            task is not None
            and task["validation_warnings"]
            == [
                "conversation_history[1] missing 'role' or 'content', skipping",
                "conversation_history[2] has empty/invalid content, skipping",
                "conversation_history[3] has invalid role 'invalid_role', skipping",
                "conversation_history[4] is not a dict, skipping",
            ],
            task,
        )
        check("create_task: conversation_messages_count", task is not None and task["conversation_messages_count"] == 3, task)
        check("create_task: has_enhanced_context", task is not None and task["has_enhanced_context"] is True, task)
        section = (
            HEADER
            + "1. 👤 USER:\n   Can you help me fix the authentication bug?\n\n"
            + "2. 🤖 ASSISTANT:\n   I'll investigate the auth system.\n\n"
            + "3. 👤 USER [TRUNCATED]:\n   " + "x" * 150 + "... [truncated]\n\n"
        )
        check("create_task: the brief holds the task history section", task is not None and section in task["prompt"], task and task["prompt"])
        check("create_task: the brief starts with the mission", task is not None and task["prompt"].startswith("📝 YOUR MISSION:\nFix the JWT refresh bug\n"), task)

        got, err = await call(s, "get_task", {"task_id": task["task_id"]})
        check("get_task: the same brief", got is not None and got["prompt"] == task["prompt"], (got, err))
        check(
            "get_task: the stored, truncated history",
            got is not None
            and got["conversation_history"][2] == {"role": "user", "content": "x" * 150 + "... [truncated]", "truncated": True}
            and got["priority"] == "P1",
            got,
        )

        t2, err = await call(s, "create_task", {"description": "Plain", "conversation_history": "not a list"})
        check(
            "create_task: non-list history",
            t2 is not None
            and t2["validation_warnings"] == ["conversation_history must be a list, ignoring invalid value"]
            and t2["has_enhanced_context"] is False
            and t2["conversation_messages_count"] == 0
            and t2["priority"] == "P2",
            (t2, err),
        )
        t3, err = await call(s, "create_task", {"description": "Plain", "conversation_history": []})
        check("create_task: empty history", t3 is not None and t3["validation_warnings"] == ["conversation_history is empty, ignoring"], (t3, err))

        # Errors the caller sees as tool results.
        _, err = await call(s, "create_task", {"priority": "P1"})
        check("create_task without description: tool error", err is not None and "description" in err, err)
        _, err = await call(s, "create_task", {"description": "d", "priority": "P9"})
        check("create_task with priority P9: tool error", err is not None and "P9" in err, err)
        _, err = await call(s, "create_task", {"description": "   "})
        check("create_task with a blank description: tool error", err is not None and "description is empty" in err, err)
        _, err = await call(s, "get_task", {"task_id": "nope"})
        check("get_task unknown: tool error", err == "task 'nope' not found", err)
        _, err = await call(s, "append_message", {"conversation_id": cid, "role": "user", "content": "   "})
        check("append_message empty: tool error", err is not None and "empty" in err, err)
        _, err = await call(s, "get_context", {"conversation_id": "missing"})
        check("get_context unknown conversation: tool error", err == "conversation 'missing' not found", err)
        _, err = await call(s, "list_conversations", {"limit": 0})
        check("list_conversations limit 0: tool error", err is not None and "limit" in err, err)
        _, err = await call(s, "get_context", {"conversation_id": cid, "surprise": 1})
        check("unknown argument: tool error naming it", err is not None and "surprise" in err, err)

        # Protocol errors.
        try:
            await s.call_tool("no_such_tool", {})
            check("unknown tool: JSON-RPC error", False, "no error raised")
        except MCPError as e:
            check("unknown tool: JSON-RPC error -32602", e.error.code == -32602 and "no_such_tool" in e.error.message, e.error)

        cleared, err = await call(s, "clear_conversation", {"conversation_id": cid})
        check("clear_conversation", cleared == {"conversation_id": cid, "removed": 2}, (cleared, err))
        found, err = await call(s, "search_history", {"query": "fastapi"})
        check("search_history after clear: nothing", found == {"hits": []}, (found, err))
        lst, _ = await call(s, "list_conversations", {})
        check("clear keeps the conversation", lst is not None and lst["conversations"][0]["message_count"] == 0, lst)
        # Something for the other tenant to look for.
        a3, err = await call(s, "append_message", {"conversation_id": cid, "role": "user", "content": "The secret codename is bluebird."})
        check("append_message after clear: seq 3", a3 is not None and a3["seq"] == 3, (a3, err))
        return cid, task["task_id"]


async def other_tenant(cid, task_id):
    async with connect("team-b") as s:
        await s.initialize()
        lst, err = await call(s, "list_conversations", {})
        check("tenant team-b sees no conversation of team-a", lst == {"conversations": [], "next_after": None}, (lst, err))
        _, err = await call(s, "get_task", {"task_id": task_id})
        check("tenant team-b cannot read team-a's task", err == f"task '{task_id}' not found", err)
        _, err = await call(s, "get_context", {"conversation_id": cid})
        check("tenant team-b cannot read team-a's conversation", err == f"conversation '{cid}' not found", err)
        _, err = await call(s, "append_message", {"conversation_id": cid, "role": "user", "content": "intrusion"})
        check("tenant team-b cannot append to team-a's conversation", err == f"conversation '{cid}' not found", err)
        _, err = await call(s, "clear_conversation", {"conversation_id": cid})
        check("tenant team-b cannot clear team-a's conversation", err == f"conversation '{cid}' not found", err)
        found, err = await call(s, "search_history", {"query": "bluebird"})
        check("tenant team-b finds none of team-a's messages", found == {"hits": []}, (found, err))
    # And team-a's conversation is as team-a left it.
    async with connect("team-a") as s:
        await s.initialize()
        found, err = await call(s, "search_history", {"query": "bluebird"})
        check("team-a still finds its message", found is not None and [h["seq"] for h in found["hits"]] == [3], (found, err))
        found, err = await call(s, "search_history", {"query": "intrusion"})
        check("team-b's attempted append stored nothing", found == {"hits": []}, (found, err))


async def refused(label, headers):
    """A client without a valid key: every request is HTTP 401 and the SDK raises."""
    statuses = []
    outcome = None
    try:
        async with http_client(headers, statuses) as http:
            async with streamable_http_client(URL, http_client=http) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    outcome = "initialize succeeded"
    except MCPError as e:
        outcome = e
    except BaseException as e:  # noqa: BLE001 - anyio may wrap the error in a group
        outcome = e
    check(f"{label}: initialize fails", isinstance(outcome, BaseException), outcome)
    check(f"{label}: the server answered HTTP 401", statuses != [] and all(c == 401 for c in statuses), statuses)
    # The body says why, in the server's error shape.
    async with http_client(headers) as http:
        r = await http.post(URL, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, headers={"Accept": "application/json, text/event-stream"})
        body = r.json()
        check(
            f"{label}: 401 with an authentication_error body",
            r.status_code == 401 and body["error"]["type"] == "authentication_error",
            (r.status_code, body),
        )


async def main():
    cid, task_id = await main_tenant()
    await other_tenant(cid, task_id)
    if HTTP:
        await refused("no API key", {})
        await refused("a wrong API key", {"Authorization": "Bearer rk_" + "0" * 64})
        await refused("not a bearer header", {"Authorization": f"Basic {KEYS['team-a']}"})


try:
    anyio.run(main)
except Exception:  # noqa: BLE001 - any crash is a failed check with its traceback
    traceback.print_exc()
    check("the client session ran to the end", False, "exception above")
print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
