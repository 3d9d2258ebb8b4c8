"""Each client covers every route of the OpenAPI document: the one in the checkout
(`clients/openapi.json`, which a Rust test holds equal to the server's) and the one the
running server serves."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

import recall_client as rc
from recall_client._routes import declared

SPEC = Path(__file__).resolve().parents[2] / "openapi.json"
METHODS = {"get", "post", "put", "patch", "delete"}


def routes(doc: dict) -> set[tuple[str, str]]:
    return {(m.upper(), path) for path, ops in doc["paths"].items() for m in ops if m in METHODS}


def test_every_route_of_the_spec_has_a_method_in_both_clients():
    spec = routes(json.loads(SPEC.read_text()))
    assert len(spec) >= 24
    for classes in [(rc.Recall, rc.ChatSocket), (rc.AsyncRecall, rc.AsyncChatSocket)]:
        have = declared(*classes)
        missing = sorted(spec - set(have))
        assert not missing, f"{classes[0].__name__} has no method for {missing}"
        stale = sorted(set(have) - spec)
        assert not stale, f"{classes[0].__name__} declares routes the spec lacks: {stale}"


def test_the_running_server_serves_the_spec_the_client_was_built_on(server):
    served = httpx.get(server.url + "/openapi.json").json()
    assert served == json.loads(SPEC.read_text()), (
        "the server's /openapi.json differs from clients/openapi.json: run bash scripts/generate-clients.sh"
    )
