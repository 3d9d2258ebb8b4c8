"""The official Anthropic and OpenAI Python SDKs against recall's gateway.

Run by crates/recall-cli/tests/gateway_sdk.rs: `python gateway_sdk.py BASE KEY`, where BASE is
a running `recall serve` whose upstreams are recall-testkit's fake provider (it answers "I was
sent N messages. You said: A | B | C", fails on "fail 429" / "fail 500", cuts its stream on
"drop" and calls a tool on "use the tool"). Prints one line per check and ends with
"N passed, M failed"; exits non-zero when any failed.
"""

import json
import sys
import urllib.request

import anthropic
import openai

BASE, KEY = sys.argv[1], sys.argv[2]
results = []


def check(name):
    def run(fn):
        try:
            fn()
            results.append((name, None))
            print(f"ok   {name}")
        except Exception as e:  # noqa: BLE001 - every failure is reported
            results.append((name, e))
            print(f"FAIL {name}: {type(e).__name__}: {e}")
        return fn

    return run


def stored(conv):
    """The stored messages of a conversation, through recall's own API."""
    req = urllib.request.Request(
        f"{BASE}/v1/conversations/{conv}/messages?limit=1000",
        headers={"Authorization": f"Bearer {KEY}"},
    )
    with urllib.request.urlopen(req) as r:
        return json.load(r)["data"]


def expect(cond, what):
    if not cond:
        raise AssertionError(what)


claude = anthropic.Anthropic(base_url=f"{BASE}/anthropic", api_key=KEY, max_retries=0)
gpt = openai.OpenAI(base_url=f"{BASE}/openai/v1", api_key=KEY, max_retries=0)
MODEL_A, MODEL_O = "claude-sonnet-4-6", "gpt-test"


def a_create(conv, messages, **kw):
    raw = claude.messages.with_raw_response.create(
        model=MODEL_A,
        max_tokens=64,
        messages=messages,
        extra_headers={"x-recall-conversation": conv},
        **kw,
    )
    return raw.headers["x-recall-conversation"], raw.parse()


def a_stream(conv, messages):
    with claude.messages.stream(
        model=MODEL_A,
        max_tokens=64,
        messages=messages,
        extra_headers={"x-recall-conversation": conv},
    ) as s:
        text = "".join(s.text_stream)
        final = s.get_final_message()
        conv = s.response.headers["x-recall-conversation"]
    return conv, text, final


@check("anthropic: append mode remembers across three turns (non-streaming and streaming)")
def _():
    conv, m = a_create("new", [{"role": "user", "content": "My dog is called Biscuit."}])
    expect(m.content[0].text.startswith("I was sent 1 messages"), m.content[0].text)
    conv, m = a_create(conv, [{"role": "user", "content": "I like tea."}])
    conv, text, final = a_stream(conv, [{"role": "user", "content": "What is my dog called?"}])
    expect("Biscuit" in text, text)
    expect(final.stop_reason == "end_turn", final.stop_reason)
    rows = stored(conv)
    expect(len(rows) == 6 and all(r["status"] == "complete" for r in rows), rows)


@check("anthropic: mirror mode (the whole history each time) stores each message once")
def _():
    history = [{"role": "user", "content": "My cat is called Miso."}]
    conv = "new"
    for nxt in ["Nice weather.", "What is my cat called?"]:
        conv, m = a_create(conv, history)
        history += [
            {"role": "assistant", "content": [b.model_dump() for b in m.content]},
            {"role": "user", "content": nxt},
        ]
    conv, text, _ = a_stream(conv, history)
    expect("Miso" in text, text)
    expect(len(stored(conv)) == 6, stored(conv))


@check("anthropic: a tool loop (tool_use stored, tool_result next)")
def _():
    ask = {"role": "user", "content": "Weather in Oslo? use the tool"}
    tools = [{"name": "get_weather", "description": "weather",
              "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}]
    conv, m = a_create("new", [ask], tools=tools)
    expect(m.stop_reason == "tool_use", m.stop_reason)
    call = m.content[0]
    result = {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": call.id, "content": "12 C, rain"}]}
    conv, m = a_create(conv, [result], tools=tools)
    expect(m.stop_reason == "end_turn", m.stop_reason)
    rows = stored(conv)
    expect([r["message"]["role"] for r in rows] == ["user", "assistant", "user", "assistant"], rows)
    expect(rows[1]["message"]["content"][0]["type"] == "tool_use", rows[1])


@check("anthropic: upstream 429 and 500 raise the SDK's errors")
def _():
    try:
        a_create("new", [{"role": "user", "content": "fail 429"}])
        raise AssertionError("no error")
    except anthropic.RateLimitError as e:
        expect(e.status_code == 429, e)
    try:
        a_create("new", [{"role": "user", "content": "fail 500"}])
        raise AssertionError("no error")
    except anthropic.InternalServerError as e:
        expect(e.status_code == 500, e)


@check("anthropic: a dropped stream raises, and the reply is stored as partial")
def _():
    raw = claude.messages.with_raw_response.create(
        model=MODEL_A, max_tokens=64, stream=True,
        messages=[{"role": "user", "content": "drop"}],
        extra_headers={"x-recall-conversation": "new"},
    )
    conv = raw.headers["x-recall-conversation"]
    try:
        for _ in raw.parse():
            pass
        raise AssertionError("the stream ended without an error")
    except AssertionError:
        raise
    except Exception:  # noqa: BLE001 - httpx's or the SDK's, as the SDK raises it
        pass
    rows = stored(conv)
    expect(len(rows) == 2 and rows[1]["status"] == "partial", rows)
    expect(rows[1]["message"]["content"] == "Half a reply", rows[1])


@check("anthropic: a bad recall key is the SDK's AuthenticationError")
def _():
    bad = anthropic.Anthropic(base_url=f"{BASE}/anthropic", api_key="rk_wrong", max_retries=0)
    try:
        bad.messages.create(model=MODEL_A, max_tokens=5,
                            messages=[{"role": "user", "content": "hi"}])
        raise AssertionError("no error")
    except anthropic.AuthenticationError as e:
        expect(e.status_code == 401, e)


def o_create(conv, messages, **kw):
    raw = gpt.chat.completions.with_raw_response.create(
        model=MODEL_O, messages=messages, extra_headers={"x-recall-conversation": conv}, **kw
    )
    return raw.headers["x-recall-conversation"], raw.parse()


def o_stream(conv, messages):
    raw = gpt.chat.completions.with_raw_response.create(
        model=MODEL_O, messages=messages, stream=True,
        extra_headers={"x-recall-conversation": conv},
    )
    text = "".join((c.choices[0].delta.content or "") for c in raw.parse() if c.choices)
    return raw.headers["x-recall-conversation"], text


@check("openai: append mode remembers across three turns (non-streaming and streaming)")
def _():
    sys_msg = {"role": "system", "content": "You are terse."}
    conv, c = o_create("new", [sys_msg, {"role": "user", "content": "My dog is called Biscuit."}])
    conv, c = o_create(conv, [sys_msg, {"role": "user", "content": "I like tea."}])
    conv, text = o_stream(conv, [sys_msg, {"role": "user", "content": "What is my dog called?"}])
    expect("Biscuit" in text, text)
    rows = stored(conv)
    expect(len(rows) == 6 and all(r["message"]["role"] != "system" for r in rows), rows)


@check("openai: mirror mode stores each message once")
def _():
    history = [{"role": "user", "content": "My cat is called Miso."}]
    conv = "new"
    for nxt in ["Nice weather.", "What is my cat called?"]:
        conv, c = o_create(conv, history)
        history += [{"role": "assistant", "content": c.choices[0].message.content},
                    {"role": "user", "content": nxt}]
    conv, text = o_stream(conv, history)
    expect("Miso" in text, text)
    expect(len(stored(conv)) == 6, stored(conv))


@check("openai: a tool loop")
def _():
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {
        "type": "object", "properties": {"city": {"type": "string"}}}}}]
    ask = {"role": "user", "content": "Weather in Oslo? use the tool"}
    conv, c = o_create("new", [ask], tools=tools)
    msg = c.choices[0].message
    expect(c.choices[0].finish_reason == "tool_calls", c.choices[0].finish_reason)
    call = msg.tool_calls[0]
    history = [ask, msg.model_dump(exclude_none=True),
               {"role": "tool", "tool_call_id": call.id, "content": "12 C, rain"}]
    conv, c = o_create(conv, history, tools=tools)
    expect(c.choices[0].finish_reason == "stop", c.choices[0].finish_reason)
    expect(len(stored(conv)) == 4, stored(conv))


@check("openai: upstream 429 and 500 raise the SDK's errors")
def _():
    try:
        o_create("new", [{"role": "user", "content": "fail 429"}])
        raise AssertionError("no error")
    except openai.RateLimitError as e:
        expect(e.status_code == 429, e)
    try:
        o_create("new", [{"role": "user", "content": "fail 500"}])
        raise AssertionError("no error")
    except openai.InternalServerError as e:
        expect(e.status_code == 500, e)


@check("openai: a dropped stream raises, and the reply is stored as partial")
def _():
    raw = gpt.chat.completions.with_raw_response.create(
        model=MODEL_O, messages=[{"role": "user", "content": "drop"}], stream=True,
        extra_headers={"x-recall-conversation": "new"},
    )
    conv = raw.headers["x-recall-conversation"]
    try:
        for _ in raw.parse():
            pass
        raise AssertionError("the stream ended without an error")
    except AssertionError:
        raise
    except Exception:  # noqa: BLE001
        pass
    rows = stored(conv)
    expect(len(rows) == 2 and rows[1]["status"] == "partial", rows)


@check("openai: a bad recall key is the SDK's AuthenticationError")
def _():
    bad = openai.OpenAI(base_url=f"{BASE}/openai/v1", api_key="rk_wrong", max_retries=0)
    try:
        bad.chat.completions.create(model=MODEL_O, messages=[{"role": "user", "content": "hi"}])
        raise AssertionError("no error")
    except openai.AuthenticationError as e:
        expect(e.status_code == 401, e)


failed = sum(1 for _, e in results if e is not None)
print(f"{len(results) - failed} passed, {failed} failed")
sys.exit(1 if failed else 0)
