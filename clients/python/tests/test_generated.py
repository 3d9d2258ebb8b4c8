"""The generated files are what their generator gives now: the models from
`clients/openapi.json`, the sync client from the async one."""

from __future__ import annotations

import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCE = HERE.parent / "src" / "recall_client"


def _generator():
    spec = importlib.util.spec_from_file_location("generate", HERE.parent / "scripts" / "generate.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_models_are_generated_from_the_spec_as_it_is():
    gen = _generator()
    assert gen.models_source() == (SOURCE / "models.py").read_text(), (
        "models.py differs from what clients/openapi.json gives: run bash scripts/generate-clients.sh"
    )


def test_the_sync_client_is_the_async_one_rewritten():
    gen = _generator()
    expected = gen.sync_source((SOURCE / "_async_client.py").read_text())
    assert expected == (SOURCE / "_sync_client.py").read_text(), (
        "_sync_client.py differs from _async_client.py rewritten: run bash scripts/generate-clients.sh"
    )
    assert "async def" not in expected and "await " not in expected
