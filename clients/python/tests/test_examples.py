"""The README's Python examples (examples/python/), run as shown: against `recall serve` and
the local model, each holds a three-turn conversation whose last answer needs turn 1."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from .conftest import ROOT

EXAMPLES = ["agents_session.py", "langchain_history.py", "langgraph_store.py"]


@pytest.mark.parametrize("name", EXAMPLES)
def test_the_example_runs_and_remembers(name, server, local_model):
    env = dict(os.environ, RECALL_URL=server.url, RECALL_API_KEY=server.key, OPENAI_BASE_URL=local_model.base_url, OPENAI_API_KEY="local", OPENAI_MODEL=local_model.model)
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / name)], env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    answers = out.stdout.split("> What is my sister's dog called?")
    assert len(answers) == 2, out.stdout
    assert "biscuit" in answers[1].lower(), out.stdout


def test_the_readme_quickstart_is_the_file_and_remembers(server, local_model):
    """Issue 53: the first Python snippet of the README is `examples/python/quickstart.py`,
    byte for byte, and runs as shown: its second answer needs the first turn."""
    source = (ROOT / "examples" / "python" / "quickstart.py").read_text()
    readme = (ROOT / "README.md").read_text()
    assert f"```python\n{source}```" in readme, "the README's quickstart differs from examples/python/quickstart.py"
    first_python = readme.index("```python\n")
    assert readme.index(f"```python\n{source}") == first_python, "the quickstart is not the README's first Python block"
    env = dict(os.environ, RECALL_URL=server.url, RECALL_API_KEY=server.key, OPENAI_BASE_URL=local_model.base_url, OPENAI_API_KEY="local", OPENAI_MODEL=local_model.model)
    out = subprocess.run([sys.executable, str(ROOT / "examples" / "python" / "quickstart.py")], env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    assert out.returncode == 0, out.stderr
    assert "biscuit" in out.stdout.lower(), out.stdout
