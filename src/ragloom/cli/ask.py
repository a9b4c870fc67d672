"""``ragloom ask QUESTION``: retrieve from the index, then answer with an LLM, citing the sources.

Retrieval is the same as ``ragloom query`` (same index, embed model and ``--mode``); the answer
comes from ``index.as_query_engine(llm=..., response_mode=..., similarity_top_k=k)``.  The LLM
is chosen with ``--llm`` (see :func:`ragloom.llms.resolve_llm`); the default is the offline toy
SmolLM2-135M, whose answers are for testing the pipeline, not for use.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional

import click

__all__ = ["ask_cmd", "run_ask", "RESPONSE_MODES"]

#: the ``--response-mode`` choices (values of :class:`~ragloom.response_synthesizers.ResponseMode`)
RESPONSE_MODES = (
    "compact", "refine", "tree_summarize", "simple_summarize", "accumulate", "compact_accumulate",
    "generation", "no_text", "context_only",
)
_SNIPPET_CHARS = 300


def run_ask(
    question: str,
    index_dir: Path,
    llm: Any = "default",
    top_k: int = 5,
    response_mode: str = "compact",
    mode: str = "hybrid",
    max_tokens: Optional[int] = None,
    on_delta: Optional[Callable[[str], None]] = None,
) -> Dict[str, Any]:
    """Answer ``question`` from the index in ``index_dir``.

    Args:
        llm: an :class:`~ragloom.llms.LLM` or a :func:`~ragloom.llms.resolve_llm` specification.
        top_k: chunks retrieved (>= 1).
        response_mode: a :class:`~ragloom.response_synthesizers.ResponseMode` value.
        mode: retrieval as ``ragloom query --mode``: ``"hybrid"``, ``"dense"`` or ``"keyword"``.
        max_tokens: most tokens per answer (``None``: the LLM's default).
        on_delta: when given, the answer is streamed and every new piece of text is passed
            to it as it is generated.

    Returns:
        ``{"question", "answer", "sources": [...], "llm", "toy", "note", "response_mode",
        "mode", "seconds"}``; each source is :func:`ragloom.cli.indexing.source_dict` (as
        ``ragloom query --json`` prints it); ``note``: the toy model's warning, else ``None``.

    Raises:
        click.ClickException: no index in ``index_dir``.
        ValueError: a bad ``llm`` specification or argument.
        ImportError: the chosen LLM's extra is not installed.
        RagloomError: the LLM request failed (e.g. :class:`~ragloom.llms.remote.LLMProviderError`).
    """
    from ragloom.cli.indexing import _MODES, _open_index, source_dict
    from ragloom.llms import resolve_llm

    if mode not in _MODES:
        raise ValueError(f"mode must be one of {sorted(_MODES)}, got {mode!r}")
    if not isinstance(top_k, int) or top_k < 1:
        raise ValueError(f"top_k must be an int >= 1, got {top_k!r}")
    t0 = time.perf_counter()
    model = resolve_llm(llm, max_tokens=max_tokens)
    index = _open_index(Path(index_dir), create=False)
    engine = index.as_query_engine(
        llm=model,
        response_mode=response_mode,
        similarity_top_k=top_k,
        vector_store_query_mode=_MODES[mode],
        streaming=on_delta is not None,
    )
    response = engine.query(question)
    if on_delta is not None and hasattr(response, "response_gen"):
        parts: List[str] = []
        for piece in response.response_gen:
            parts.append(piece)
            on_delta(piece)
        answer: Optional[str] = "".join(parts)
    else:
        answer = response.response
        if on_delta is not None and answer:
            on_delta(answer)
    return {
        "question": question,
        "answer": answer,
        "sources": [source_dict(i, nws) for i, nws in enumerate(response.source_nodes, 1)],
        "llm": model.metadata.model_name,
        "toy": bool(getattr(model, "is_toy", False)),
        "note": getattr(model, "TOY_NOTICE", None),
        "response_mode": response_mode,
        "mode": mode,
        "seconds": round(time.perf_counter() - t0, 3),
    }


def _print_sources(sources: List[Dict[str, Any]], max_chars: int) -> None:
    if not sources:
        click.echo("No sources (is the index empty?).")
        return
    click.secho("Sources:", bold=True)
    for s in sources:
        score = f"{s['score']:.4f}" if s["score"] is not None else "-"
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

    from ragloom.errors import RagloomError

    if stream and as_json:
        raise click.UsageError("--stream and --json cannot be combined")
    if not question.strip():
        raise click.UsageError("the question is empty: give the question to answer, e.g. ragloom ask \"how do I …?\"")
    spec = llm_spec or os.environ.get("RAGLOOM_LLM") or "default"
    on_delta = (lambda piece: click.echo(piece, nl=False)) if stream else None
    try:
        result = run_ask(question, index_dir=index_dir, llm=spec, top_k=top_k, response_mode=response_mode,
                         mode=mode, max_tokens=max_tokens, on_delta=on_delta)
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
