"""A local server speaking OpenAI's chat-completions wire format with scripted replies, for
the framework tests whose point is a tool call (the 1.5B local model does not call tools
reliably); it records every request body."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}]}


def text(t: str) -> dict[str, Any]:
    return {"role": "assistant", "content": t}


class ScriptedChat:
    """Answers `POST /v1/chat/completions` with the next scripted assistant message."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = list(replies)
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                outer.requests.append(body)
                msg = outer.replies.pop(0) if outer.replies else text("(no more replies)")
                finish = "tool_calls" if msg.get("tool_calls") else "stop"
                out = json.dumps({
                    "id": f"chatcmpl-{len(outer.requests)}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "message": msg, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                }).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

            def log_message(self, *args: object) -> None:
                pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def close(self) -> None:
        self._httpd.shutdown()


def recording_chat_model(base_url: str, model: str, seen: list[dict[str, Any]], max_tokens: int = 48):
    """LangChain's ChatOpenAI on ``base_url`` that appends every chat-completions request body
    it sends to ``seen`` (what the model was given)."""
    import httpx
    from langchain_openai import ChatOpenAI

    def record(request: httpx.Request) -> None:
        if request.url.path.endswith("/chat/completions"):
            seen.append(json.loads(request.content))

    http = httpx.Client(event_hooks={"request": [record]}, timeout=300)
    return ChatOpenAI(base_url=base_url, api_key="local", model=model, max_tokens=max_tokens, temperature=0, http_client=http)
