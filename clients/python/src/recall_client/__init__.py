"""A client of recall's HTTP API (``recall serve``): conversations, messages, context,
search, forks, summaries, tasks and streamed chat, sync (:class:`Recall`) and async
(:class:`AsyncRecall`).

>>> from recall_client import Recall
>>> with Recall() as r:                      # RECALL_URL and RECALL_API_KEY from the environment
...     c = r.create_conversation(title="Support")
...     r.append_message(c.id, {"role": "user", "content": "We use FastAPI."})
...     print(r.context(c.id, max_tokens=4000).prompt)

The models (``recall_client.models``) are generated from the server's OpenAPI document.
Framework integrations live in ``recall_client.integrations`` (OpenAI Agents SDK, LangChain,
LangGraph); each imports its framework only when used.
"""

from . import models
from ._async_client import AsyncRecall, ChatSocket as AsyncChatSocket
from ._sse import ChatEvent
from ._sync_client import ChatSocket, Recall
from .errors import (
    APIError,
    AuthenticationError,
    ConflictError,
    ConnectionError,
    InternalServerError,
    InvalidJSONError,
    InvalidRequestError,
    NotFoundError,
    RateLimitedError,
    RecallError,
    TooLargeError,
    UnavailableError,
    UpstreamError,
)

__version__ = "0.1.0"

__all__ = [
    "APIError",
    "AsyncChatSocket",
    "AsyncRecall",
    "AuthenticationError",
    "ChatEvent",
    "ChatSocket",
    "ConflictError",
    "ConnectionError",
    "InternalServerError",
    "InvalidJSONError",
    "InvalidRequestError",
    "NotFoundError",
    "RateLimitedError",
    "Recall",
    "RecallError",
    "TooLargeError",
    "UnavailableError",
    "UpstreamError",
    "models",
]
