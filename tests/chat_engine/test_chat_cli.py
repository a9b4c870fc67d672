"""``ragloom chat`` over a real index directory, the LLM an OpenAI-compatible server on 127.0.0.1 that
records the prompts; and ``IndexService.chat``, the one library call per turn."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from chat_support import condensing_answer  # type: ignore[import-not-found, unused-ignore]

from ragloom.cli import cli
from ragloom.service import IndexService

pytestmark = pytest.mark.requires_extra("remote")

FIRST = "Tell me about the Eiffel Tower."
FIRST_ANSWER = "It is a wrought-iron tower in Paris."
SECOND = "When was it completed?"
STANDALONE = "When was the Eiffel Tower completed?"


@pytest.fixture(scope="module")
def index_dir(docs_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("chat_cli") / "idx"
    res = CliRunner().invoke(cli, ["index", str(docs_dir), "--index-dir", str(out), "--json"])
    assert res.exit_code == 0, res.output
    return out


def _chat(index_dir, srv, stdin, *args):
    return CliRunner().invoke(cli, ["chat", "--index-dir", str(index_dir), "--llm", f"openai_like:m@{srv.url}",
                                    "-k", "1", *args], input=stdin)


def _chats(srv):
    return [r for r in srv.requests if r["endpoint"] == "chat"]


def test_two_turns_print_sources_and_the_second_carries_the_first(index_dir, server_factory):
    answers = iter([FIRST_ANSWER, STANDALONE, "It was completed in 1889."])
    srv = server_factory(lambda prompt: next(answers))
    res = _chat(index_dir, srv, f"{FIRST}\n{SECOND}\n/exit\nnever sent\n")
    assert res.exit_code == 0, res.output
    out = res.stdout
    assert f"assistant> {FIRST_ANSWER}\n" in out and "assistant> It was completed in 1889.\n" in out
    # sources after each turn: rank, score, file, location, snippet
    assert out.count("Sources:") == 2 and out.count("[1] score ") == 2 and out.count("eiffel.md") == 2
    assert "completed in 1889 for the World's Fair" in out
    first, condense, second = _chats(srv)  # the line after /exit was never read
    assert all(r["body"]["stream"] is True for r in (first, second))  # answers are streamed
    assert f"user: {FIRST}" in condense["prompt"] and f"assistant: {FIRST_ANSWER}" in condense["prompt"]
    assert [(m["role"], m["content"]) for m in second["messages"][1:]] == [
        ("user", FIRST), ("assistant", FIRST_ANSWER), ("user", SECOND)]
    assert "/reset" in res.stderr and "Traceback" not in res.output


def test_reset_forgets_and_eof_ends(index_dir, server_factory):
    srv = server_factory(condensing_answer(STANDALONE, "An answer."))
    res = _chat(index_dir, srv, f"{FIRST}\n/reset\n/nonsense\n\n{SECOND}\n", "--chat-mode", "context")
    assert res.exit_code == 0, res.output
    first, second = _chats(srv)
    assert [m["content"] for m in second["messages"][1:]] == [SECOND]  # nothing of the first turn
    assert "conversation cleared" in res.stderr and "unknown command '/nonsense'" in res.stderr


def test_errors_are_one_line_and_the_session_goes_on(index_dir, server_factory, tmp_path):
    res = CliRunner().invoke(cli, ["chat", "--index-dir", str(tmp_path / "none"), "--llm", "mock"], input="hi\n")
    assert res.exit_code == 1 and "no index in" in res.output
    srv = server_factory("ok")
    res = _chat(index_dir, srv, "tower " * 5000 + "\nhello\n", "--chat-mode", "simple")
    assert res.exit_code == 0, res.output
    assert "error: " in res.stderr and "context_window=3900" in res.stderr and "Traceback" not in res.output
    assert len(_chats(srv)) == 1 and "assistant> ok" in res.stdout and "Sources:" not in res.stdout


def test_service_chat_is_stateless(index_dir, server_factory):
    srv = server_factory(condensing_answer(STANDALONE, "1889."))
    service = IndexService(index_dir, llm=f"openai_like:m@{srv.url}")
    first = service.chat(FIRST, top_k=1)
    assert first["history"] == [{"role": "user", "content": FIRST}, {"role": "assistant", "content": "1889."}]
    assert first["question"] == FIRST and first["chat_mode"] == "condense_plus_context"
    assert first["sources"][0]["source"].endswith("eiffel.md") and first["sources"][0]["rank"] == 1
    deltas: list = []
    second = service.chat(SECOND, history=first["history"], top_k=1, on_delta=deltas.append)
    assert "".join(deltas) == second["answer"] == "1889." and second["question"] == STANDALONE
    assert len(second["history"]) == 4 and second["toy"] is False and second["note"] is None
    with pytest.raises(ValueError, match=r"history\[0\]"):
        service.chat(SECOND, history=[{"role": "robot", "content": "x"}])
    with pytest.raises(ValueError, match="chat_mode"):
        service.chat(SECOND, chat_mode="react")
