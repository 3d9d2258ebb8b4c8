"""Generates the Python client's derived files from their sources:

- ``models.py``: the pydantic models of every schema in ``clients/openapi.json``, by
  datamodel-code-generator (pinned in ``scripts/setup.sh``);
- ``_sync_client.py``: the synchronous client, rewritten from ``_async_client.py``.

``python generate.py`` writes both; ``tests/test_generated.py`` calls the same functions and
fails when a committed file differs from what they give (the spec changed, or the async
client was edited without regenerating). ``scripts/generate-clients.sh`` runs this.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PACKAGE = HERE.parent / "src" / "recall_client"
SPEC = HERE.parent.parent / "openapi.json"

MODEL_OPTIONS = [
    "--input-file-type", "openapi",
    "--output-model-type", "pydantic_v2.BaseModel",
    "--target-python-version", "3.10",
    "--use-standard-collections",
    "--use-union-operator",
    "--collapse-root-models",
    "--use-schema-description",
    "--use-field-description",
    "--disable-timestamp",
    "--enum-field-as-literal", "all",
    "--formatters", "builtin",
]

HEADER = (
    '"""The request and response models of recall\'s HTTP API, generated from\n'
    '``clients/openapi.json`` by ``clients/python/scripts/generate.py``: do not edit."""\n\n'
)


def models_source(spec: Path = SPEC) -> str:
    """The text of ``models.py`` for the spec at ``spec``."""
    with tempfile.TemporaryDirectory() as tmp:
        # A fixed input name: the generator writes it into its header.
        src = Path(tmp) / "openapi.json"
        src.write_bytes(spec.read_bytes())
        out = Path(tmp) / "models.py"
        codegen = Path(sys.executable).with_name("datamodel-codegen")
        subprocess.run(
            [str(codegen), "--input", str(src), "--output", str(out), *MODEL_OPTIONS],
            check=True,
            capture_output=True,
        )
        return HEADER + out.read_text()


# Ordered: longer names first, so that a rewrite never applies inside another's result.
_SYNC_REWRITES = [
    (r"from websockets\.asyncio\.client import connect", "from websockets.sync.client import connect"),
    (r"\bAsyncIterator\b", "Iterator"),
    (r"\bAsyncRecall\b", "Recall"),
    (r"\bhttpx\.AsyncClient\b", "httpx.Client"),
    (r"\basync def __aenter__\b", "def __enter__"),
    (r"\basync def __aexit__\b", "def __exit__"),
    (r"\basync def\b", "def"),
    (r"\basync for\b", "for"),
    (r"\basync with\b", "with"),
    (r"\bawait asyncio\.sleep\(", "time.sleep("),
    (r"\bawait ", ""),
    (r"\baiter_text\(", "iter_text("),
    (r"\baiter_raw\(", "iter_raw("),
    (r"\baread\(", "read("),
    (r"\baclose\(", "close("),
    (r"^import asyncio\n", ""),
]

SYNC_DOC = (
    '"""The synchronous client: one method per route of recall\'s HTTP API.\n\n'
    "Generated from ``_async_client.py`` by ``clients/python/scripts/generate.py``: do not\n"
    'edit; change the async client and regenerate."""\n'
)


def sync_source(async_text: str) -> str:
    """``_sync_client.py``: the async client's text with every async construct made
    synchronous."""
    # The module's docstring speaks of the rewrite itself: replaced, not rewritten.
    head, sep, rest = async_text.partition('"""\n\n')
    if not head.startswith('"""') or not sep:
        raise ValueError("_async_client.py must start with its docstring")
    text = rest
    for pattern, repl in _SYNC_REWRITES:
        text = re.sub(pattern, repl, text, flags=re.MULTILINE)
    return SYNC_DOC + "\n" + text


def main() -> None:
    (PACKAGE / "models.py").write_text(models_source())
    async_text = (PACKAGE / "_async_client.py").read_text()
    (PACKAGE / "_sync_client.py").write_text(sync_source(async_text))
    print(f"wrote {PACKAGE / 'models.py'} and {PACKAGE / '_sync_client.py'}")


if __name__ == "__main__":
    main()
