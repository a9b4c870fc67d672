"""``ragloom chat``: an interactive conversation with the index, the answers streamed, sources per turn.

Each line read from standard input is one turn: one call of :meth:`ragloom.service.IndexService.chat`
(``index.as_chat_engine(...)``, by default ``condense_plus_context``: the message is rewritten as a
standalone question from the conversation, the index is searched with it, and the LLM answers from the
passages and the conversation).  ``/reset`` forgets the conversation, ``/exit`` (or end of input,
Ctrl-D) ends the session.  The LLM is chosen with ``--llm`` as for ``ragloom ask``.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import click

from ragloom.cli.ask import _SNIPPET_CHARS, _llm_help, _print_sources
from ragloom.service import CHAT_MODES

__all__ = ["chat_cmd"]

_COMMANDS = "/reset forgets the conversation, /exit (or Ctrl-D) ends"


def _read_line(stdin: Any, interactive: bool) -> Optional[str]:
    """The next line of input without its newline; ``None`` at end of input."""
    if interactive:
        click.secho("you> ", bold=True, nl=False)
    line = stdin.readline()
    if not line:
        return None
    return line.rstrip("\r\n")


@click.command("chat")
@click.option("--index-dir", default="ragloom_index", show_default=True, type=click.Path(path_type=Path),
              help="Directory holding the index.")
@click.option("--llm", "llm_spec", default=None, metavar="SPEC", help=_llm_help()
              + "  [default: $RAGLOOM_LLM, else 'local']")
@click.option("--chat-mode", type=click.Choice(CHAT_MODES), default="best", show_default=True,
              help="condense_plus_context ('best'): rewrite each message as a standalone question, retrieve "
                   "with it, answer from the passages and the conversation; context: retrieve with the "
                   "message as typed; condense_question: rewrite, then answer like 'ragloom ask'; simple: "
                   "the LLM alone, no retrieval.")
@click.option("-k", "--top-k", "top_k", type=click.IntRange(min=1, max=1000), default=5, show_default=True,
              help="How many chunks to retrieve per turn.")
@click.option("--mode", type=click.Choice(["hybrid", "dense", "keyword"]), default="hybrid", show_default=True,
              help="Retrieval, as for 'ragloom query'.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None,
              help="Most tokens in each answer [default: the LLM's, 256].")
@click.option("--max-chars", type=click.IntRange(min=0), default=_SNIPPET_CHARS, show_default=True,
              help="Characters of each source snippet to print (0 = all).")
def chat_cmd(index_dir: Path, llm_spec: Optional[str], chat_mode: str, top_k: int, mode: str,
             max_tokens: Optional[int], max_chars: int) -> None:
    """Chat with the index: type a message, read the answer as it is written and the sources it used.

    \b
    Commands: /reset forgets the conversation, /exit or Ctrl-D ends the session.
    Examples:
      ragloom chat --llm ollama:llama3.2
      ragloom chat --llm openai_like:qwen2.5@http://localhost:8000/v1 -k 8
      printf 'What is X?\\nAnd how old is it?\\n' | ragloom chat --llm ollama:llama3.2

    The default LLM is the offline toy SmolLM2-135M (extra ragloom[llm]): its answers are for
    testing the pipeline, not for use.
    """
    import os

    from ragloom.cli.indexing import open_service
    from ragloom.errors import RagloomError

    spec = llm_spec or os.environ.get("RAGLOOM_LLM") or "default"
    service = open_service(index_dir, llm=spec)
    stdin = sys.stdin
    interactive = stdin.isatty()
    click.secho(f"Chatting with {index_dir} (chat mode {chat_mode}); {_COMMANDS}.", fg="cyan", err=True)
    history: List[Dict[str, Any]] = []
    warned = False
    while True:
        line = _read_line(stdin, interactive)
        if line is None or line.strip() == "/exit":
            break
        text = line.strip()
        if not text:
            continue
        if text == "/reset":
            history = []
            click.secho("(conversation cleared)", fg="cyan", err=True)
            continue
        if text.startswith("/"):
            click.secho(f"unknown command {text.split()[0]!r}: {_COMMANDS}", fg="yellow", err=True)
            continue
        click.secho("assistant> ", bold=True, nl=False)
        try:
            result = service.chat(line, history=history, chat_mode=chat_mode, top_k=top_k, mode=mode,
                                  max_tokens=max_tokens, on_delta=lambda piece: click.echo(piece, nl=False))
        except (ValueError, ImportError, RagloomError) as exc:
            click.echo("")
            click.secho(f"error: {exc}", fg="red", err=True)
            continue
        click.echo("")
        history = result["history"]
        if result["toy"] and not warned:
            click.secho(f"note: {result['note']}", fg="yellow", err=True)
            warned = True
        if chat_mode != "simple":
            _print_sources(result["sources"], max_chars)
        click.echo("")
