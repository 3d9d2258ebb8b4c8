"""The errors a recall client raises.

Every answer of the server that is not a success carries ``{"error": {"type", "message"}}``;
the client raises the subclass of :class:`APIError` for its status, with the server's
``type`` and ``message`` on it. A request that never got an answer raises
:class:`ConnectionError`.
"""

from __future__ import annotations

from typing import Any


class RecallError(Exception):
    """Base of every error this package raises."""


class ConnectionError(RecallError):  # noqa: A001 - the name users expect next to APIError
    """The server could not be reached, or the connection failed before an answer."""


class APIError(RecallError):
    """The server answered with an error.

    Attributes:
        status: the HTTP status.
        type: the server's error type (``not_found``, ``conflict``, ``invalid_request``…).
        message: the server's message, as it wrote it.
        body: the whole decoded error body (``None`` when it was not JSON).
    """

    status: int
    type: str
    message: str
    body: Any

    def __init__(self, status: int, type: str, message: str, body: Any = None) -> None:
        super().__init__(f"{status} {type}: {message}")
        self.status = status
        self.type = type
        self.message = message
        self.body = body


class InvalidJSONError(APIError):
    """400: the body was not JSON."""


class AuthenticationError(APIError):
    """401: no key, or a key the server does not know."""


class NotFoundError(APIError):
    """404: no such conversation, message, task or route."""


class ConflictError(APIError):
    """409: the request contradicts what is stored (a client id reused for another message,
    a conversation with forks…)."""


class TooLargeError(APIError):
    """413: the body is over the server's limit."""


class InvalidRequestError(APIError):
    """422: the request is well-formed JSON but not valid (an unknown field, a bad value)."""


class RateLimitedError(APIError):
    """429: too many requests (retried by the client first, honouring ``Retry-After``)."""


class InternalServerError(APIError):
    """500: the server failed."""


class UpstreamError(APIError):
    """502: the model backend failed."""


class UnavailableError(APIError):
    """503: the server is not ready or is shutting down (retried by the client first)."""


_BY_STATUS: dict[int, type[APIError]] = {
    400: InvalidJSONError,
    401: AuthenticationError,
    404: NotFoundError,
    409: ConflictError,
    413: TooLargeError,
    422: InvalidRequestError,
    429: RateLimitedError,
    500: InternalServerError,
    502: UpstreamError,
    503: UnavailableError,
}


def error_for(status: int, body: Any, text: str) -> APIError:
    """The exception for an error answer: its status's class, the server's type and message."""
    kind, message = "http_error", text or f"HTTP {status}"
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        err = body["error"]
        kind = str(err.get("type", kind))
        message = str(err.get("message", message))
    cls = _BY_STATUS.get(status, APIError)
    return cls(status, kind, message, body)
