"""Server-sent events of a chat turn, decoded incrementally (the WHATWG event-stream rules
recall's server uses: ``event:`` and ``data:`` lines, a blank line ends an event)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ChatEvent:
    """One event of a chat turn: its ``type`` (``user_stored``, ``forked``,
    ``assistant_chunk``, ``tool_use``, ``tool_result``, ``done``, ``error``) and its JSON data.
    """

    type: str
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def delta(self) -> str:
        """The text of an ``assistant_chunk`` (``""`` for other events)."""
        return str(self.data.get("delta", "")) if self.type == "assistant_chunk" else ""


class SSEDecoder:
    """Feed it text as it arrives; it returns the events completed so far."""

    def __init__(self) -> None:
        self._buf = ""
        self._event = ""
        self._data: list[str] = []

    def feed(self, text: str) -> list[ChatEvent]:
        self._buf += text
        out: list[ChatEvent] = []
        while True:
            cut = _line_end(self._buf)
            if cut is None:
                return out
            line, self._buf = self._buf[: cut[0]], self._buf[cut[1] :]
            event = self._line(line)
            if event is not None:
                out.append(event)

    def end(self) -> list[ChatEvent]:
        """The stream ended: a last event without its blank line still counts."""
        out = self.feed("\n\n") if (self._buf or self._data) else []
        return out

    def _line(self, line: str) -> ChatEvent | None:
        if line == "":
            if not self._data:
                self._event = ""
                return None
            raw = "\n".join(self._data)
            kind = self._event or "message"
            self._event, self._data = "", []
            try:
                data = json.loads(raw)
            except ValueError:
                data = {"raw": raw}
            return ChatEvent(kind, data if isinstance(data, dict) else {"value": data})
        if line.startswith(":"):
            return None  # a keep-alive comment
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None


def _line_end(buf: str) -> tuple[int, int] | None:
    """Where the first line ends and the next begins (CRLF, LF or CR)."""
    for i, ch in enumerate(buf):
        if ch == "\n":
            return i, i + 1
        if ch == "\r":
            if i + 1 == len(buf):
                return None  # maybe CRLF split across chunks
            return i, i + (2 if buf[i + 1] == "\n" else 1)
    return None
