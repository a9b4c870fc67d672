"""``ragloom ask QUESTION``: retrieve from the index, then answer with an LLM, citing the sources.

Retrieval is the same as ``ragloom query`` (same index, embed model and ``--mode``); the answer
comes from :meth:`ragloom.service.IndexService.ask`, as for ``POST /ask`` of ``ragloom serve``.  The LLM
is chosen with ``--llm`` (see :func:`ragloom.llms.resolve_llm`); the default is the offline toy
SmolLM2-135M, whose answers are for testing the pipeline, not for use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Optional

import click

from ragloom.service import RESPONSE_MODES

__all__ = ["ask_cmd"]

_SNIPPET_CHARS = 300


def _print_sources(sources: List[Dict[str, Any]], max_chars: int) -> None:
    if not sources:
        click.echo("No sources (is the index empty?).")
        return
    click.secho("Sources:", bold=True)
    for s in sources:
        score = f"{s['score']:#.4g}" if s["score"] is not None else "-"
        click.secho(f"[{s['rank']}] score {score}  {s['source']}  ({s['location']})", bold=True)
        snippet = " ".join(s["text"].split())
        if max_chars and len(snippet) > max_chars:
            snippet = snippet[:max_chars].rstrip() + " …"
        click.echo(f"    {snippet}")


def _llm_help() -> str:
    from ragloom.llms import LLM_SPEC_HELP

    return f"The LLM: {LLM_SPEC_HELP}."


@click.command("ask")
@click.argument("question")
@click.option("-k", "--top-k", "top_k", type=click.IntRange(min=1, max=1000), default=5, show_default=True,
              help="How many chunks to retrieve and answer from.")
@click.option("--index-dir", default="ragloom_index", show_default=True, type=click.Path(path_type=Path),
              help="Directory holding the index.")
@click.option("--llm", "llm_spec", default=None, metavar="SPEC", help=_llm_help()
              + "  [default: $RAGLOOM_LLM, else 'local']")
@click.option("--response-mode", type=click.Choice(RESPONSE_MODES), default="compact", show_default=True,
              help="How the chunks become an answer (LlamaIndex response modes): compact packs chunks into "
                   "few LLM calls and refines; refine calls once per chunk; tree_summarize summarizes "
                   "recursively; no_text only retrieves.")
@click.option("--mode", type=click.Choice(["hybrid", "dense", "keyword"]), default="hybrid", show_default=True,
              help="Retrieval, as for 'ragloom query'.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=None,
              help="Most tokens in the answer [default: the LLM's, 256].")
@click.option("--json", "as_json", is_flag=True, help='Print {"answer": ..., "sources": [...]} as JSON.')
@click.option("--stream", is_flag=True, help="Print the answer as it is generated.")
@click.option("--max-chars", type=click.IntRange(min=0), default=_SNIPPET_CHARS, show_default=True,
              help="Characters of each source snippet to print (0 = all; --json prints all).")
def ask_cmd(question: str, top_k: int, index_dir: Path, llm_spec: Optional[str], response_mode: str, mode: str,
            max_tokens: Optional[int], as_json: bool, stream: bool, max_chars: int) -> None:
    """Answer QUESTION from the index, then list the numbered sources it used.

    \b
    Examples:
      ragloom ask "How do I reset my password?"
      ragloom ask "What changed in 2.0?" --llm ollama:llama3.2 -k 8 --stream
      ragloom ask "Summarize the design" --llm openai_like:qwen2.5@http://localhost:8000/v1 --json

    The default LLM is the offline toy SmolLM2-135M (extra ragloom[llm]): its answers are for
    testing the pipeline, not for use.
    """
    import os

    from ragloom.cli.indexing import open_service
    from ragloom.errors import RagloomError

    if stream and as_json:
        raise click.UsageError("--stream and --json cannot be combined")
    if not question.strip():
        raise click.UsageError("the question is empty: give the question to answer, e.g. ragloom ask \"how do I …?\"")
    spec = llm_spec or os.environ.get("RAGLOOM_LLM") or "default"
    on_delta = (lambda piece: click.echo(piece, nl=False)) if stream else None
    service = open_service(index_dir, llm=spec)
    try:
        result = service.ask(question, top_k=top_k, response_mode=response_mode, mode=mode, max_tokens=max_tokens,
                             on_delta=on_delta)
    except (ValueError, ImportError, RagloomError) as exc:
        raise click.ClickException(str(exc)) from exc
    if as_json:
        click.echo(json.dumps(result, ensure_ascii=False, indent=2))
        return
    if stream:
        click.echo("")
    else:
        click.echo(result["answer"] if result["answer"] is not None else "(no answer)")
    if result["toy"] and result["answer"]:  # no_text mode: no answer, so nothing to warn about
        click.secho(f"note: {result['note']}", fg="yellow", err=True)
    click.echo("")
    _print_sources(result["sources"], max_chars)
