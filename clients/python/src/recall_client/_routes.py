"""Which route of the HTTP API each client method calls: ``tests/test_routes.py`` lists the
OpenAPI document's routes and fails on one no method declares."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

_F = TypeVar("_F", bound=Callable[..., object])


def route(method: str, path: str) -> Callable[[_F], _F]:
    """Marks a client method as the one for ``method path`` (the path as the OpenAPI
    document writes it, e.g. ``/v1/conversations/{id}``)."""

    def mark(f: _F) -> _F:
        f.__recall_route__ = (method.upper(), path)  # type: ignore[attr-defined]
        return f

    return mark


def declared(*classes: type) -> dict[tuple[str, str], str]:
    """Every route the methods of ``classes`` declare, with the method's qualified name."""
    out: dict[tuple[str, str], str] = {}
    for cls in classes:
        for name in dir(cls):
            r = getattr(getattr(cls, name), "__recall_route__", None)
            if r is not None:
                out[r] = f"{cls.__name__}.{name}"
    return out
