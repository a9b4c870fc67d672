"""Three LlamaIndex programs (examples/llamaindex/) run on ragloom after changing their imports only.

Each program is LlamaIndex code as its documentation writes it.  The test rewrites ``llama_index.core``
to ``ragloom`` and ``llama_index.X`` to ``ragloom.X`` on import lines (and asserts nothing else
changed), runs the result in a fresh Python process with the bundled embedding model, and points
OpenAI's client at the prompt-recording server on 127.0.0.1 through ``$OPENAI_API_BASE``, as a user
would point LlamaIndex's at a local server.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from llm_server import OpenAICompatibleServer  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = ROOT / "examples" / "llamaindex"

DOCS = {
    "tea.md": "# Tea\n\nGreen tea is brewed with water at about eighty degrees Celsius for two minutes. "
    "Black tea takes boiling water and steeps for four minutes. Oolong sits between the two.\n",
    "bikes.txt": "A flat bicycle tyre is fixed by patching the inner tube. First remove the wheel, then lever "
    "the tyre off the rim and find the hole by pumping air into the tube under water.\n",
    "长城.txt": "长城是中国古代的军事防御工程。它东起山海关，西至嘉峪关，全长两万多公里。"
    "秦始皇统一六国后修筑了万里长城。",
}


def port(source: str) -> str:
    """``source`` with LlamaIndex imports changed to ragloom's: the only edit a user makes."""
    out = []
    for line in source.splitlines(keepends=True):
        if re.match(r"\s*(from|import)\s+llama_index\b", line):
            line = re.sub(r"\bllama_index\.core\b", "ragloom", line)
            line = re.sub(r"\bllama_index\b", "ragloom", line)
        out.append(line)
    ported = "".join(out)
    changed = [d for d in difflib.ndiff(source.splitlines(), ported.splitlines()) if d[:1] in "+-"]
    assert all(re.match(r"[+-]\s*(from|import)\s+(llama_index|ragloom)\b", d) for d in changed), changed
    return ported


def _run(tmp_path: Path, name: str, args, srv, stdin: str = "") -> str:
    script = tmp_path / name
    script.write_text(port((PROGRAMS / name).read_text(encoding="utf-8")), encoding="utf-8")
    env = dict(os.environ, OPENAI_API_BASE=srv.url, OPENAI_API_KEY="sk-test", HF_HUB_OFFLINE="1",
               TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, str(script), *map(str, args)], input=stdin, capture_output=True,
                          text=True, timeout=600, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc.stdout


@pytest.fixture
def folder(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    for name, text in DOCS.items():
        (data / name).write_text(text, encoding="utf-8")
    return data


def _answer(prompt: str) -> str:
    if "describes a source of answers" in prompt:  # the router's selector
        choice = 1 if "summar" in prompt.split("Question:")[-1].lower() else 2
        return json.dumps([{"choice": choice, "reason": "fits the question"}])
    if "title" in prompt.lower() and "question" not in prompt.lower():
        return "A Guide to Tea and Bicycles"
    return "The answer, from the context: green tea wants water at eighty degrees."


@pytest.mark.slow
@pytest.mark.requires_extra("remote")
def test_router_program_ports_by_changing_imports(tmp_path, folder):
    with OpenAICompatibleServer(answer=_answer) as srv:
        out = _run(tmp_path, "router.py", [folder, "What temperature is green tea brewed at?"], srv)
        prompts = [r["prompt"] for r in srv.requests]
    assert "green tea wants water at eighty degrees" in out
    select = prompts[0]
    for description in ("summarization questions", "specific context from the documents", "exact keywords"):
        assert description in select
    assert "What temperature is green tea brewed at?" in select
    # the vector tool answered: its prompt carries the tea document's text
    assert any("eighty degrees Celsius" in p and "What temperature" in p for p in prompts[1:])
    assert "source:" in out


@pytest.mark.slow
@pytest.mark.requires_extra("remote")
def test_chat_program_ports_by_changing_imports(tmp_path, folder):
    questions = "How long does black tea steep?\nAnd green tea?\nreset\nHow do I fix a flat tyre?\n"
    with OpenAICompatibleServer(answer=_answer) as srv:
        out = _run(tmp_path, "chat.py", [folder], srv, stdin=questions)
        requests = list(srv.requests)
    assert out.count("green tea wants water at eighty degrees") == 3
    assert "(conversation reset)" in out
    # the follow-up was condensed with the first turn in view, and answered with retrieved context
    bodies = [json.dumps(r["body"], ensure_ascii=False) for r in requests]
    follow_up = [b for b in bodies if "And green tea?" in b]
    assert any("How long does black tea steep?" in b for b in follow_up)
    assert any("Green tea is brewed" in b for b in bodies)
    # after reset the last question's requests carry no earlier turn
    last = [b for b in bodies if "How do I fix a flat tyre?" in b]
    assert last and not any("black tea steep" in b for b in last)
    assert "source: bikes.txt" in out
    assert "history: 2 messages" in out


@pytest.mark.slow
@pytest.mark.requires_extra("remote")
@pytest.mark.requires_extra("chroma")
def test_pipeline_program_ports_by_changing_imports(tmp_path, folder):
    with OpenAICompatibleServer(answer=_answer) as srv:
        out = _run(tmp_path, "pipeline.py", [folder, tmp_path / "chroma", "brewing green tea"], srv)
        prompts = [r["prompt"] for r in srv.requests]
    first = int(re.search(r"first run: (\d+) nodes", out).group(1))
    assert first >= 3
    assert "second run: 0 nodes" in out
    assert "title: A Guide to Tea and Bicycles" in out
    assert "questions: " in out and "questions: None" not in out
    assert any("Green tea is brewed" in p for p in prompts)
    hits = re.findall(r"hit: ([0-9.]+) (.*)", out)
    assert len(hits) == 2 and "tea" in hits[0][1].lower()
