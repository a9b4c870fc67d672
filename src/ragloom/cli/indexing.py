"""What the CLI commands do, kept apart from argument parsing so it can be tested and reused."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import click

from ragloom.schema import MetadataMode

logger = logging.getLogger(__name__)


def _open_index(index_dir: Path, create: bool, embed_model: Optional[str] = None) -> Any:
    """:func:`ragloom.ingestion.paths.open_index`, its errors as one-line CLI messages."""
    from ragloom.ingestion.paths import open_index

    try:
        return open_index(index_dir, create=create, embed_model=embed_model)
    except FileNotFoundError as exc:
        raise click.ClickException(str(exc)) from None
    except ValueError as exc:
        raise click.ClickException(f"{index_dir}: {exc}; use a new --index-dir to change models") from None


def run_index(paths: Sequence[Path], index_dir: Path, chunk_size: Optional[int] = None,
              chunk_overlap: Optional[int] = None, required_exts: Optional[List[str]] = None,
              exclude: Optional[List[str]] = None, recursive: bool = True, full: bool = False,
              embed_model: str = "default", show_progress: bool = True,
              include_hidden: bool = False, files_per_batch: int = 32,
              wait: bool = False, parser: str = "auto") -> Dict[str, Any]:
    """``ragloom index``: one call of :func:`ragloom.ingestion.paths.index_paths`; returns its summary
    as a dict (:meth:`IndexSummary.to_dict <ragloom.ingestion.paths.IndexSummary.to_dict>`).

    Raises:
        click.BadParameter: invalid chunk size/overlap or ``files_per_batch``.
        click.ClickException: the index is locked by another process (and not ``wait``), or was
            built with another embed model.
    """
    from ragloom.errors import IndexLockedError
    from ragloom.ingestion.paths import index_paths

    def told(pid: Optional[int]) -> None:
        click.echo(f"index {index_dir} is locked by pid {pid if pid is not None else '?'}; "
                   "waiting for it to finish (--wait)", err=True)

    try:
        summary = index_paths(
            paths, index_dir, chunk_size=chunk_size, chunk_overlap=chunk_overlap, required_exts=required_exts,
            exclude=exclude, recursive=recursive, full=full, embed_model=embed_model,
            show_progress=show_progress, include_hidden=include_hidden, files_per_batch=files_per_batch,
            wait=wait, on_wait=told, parser=parser,
        )
    except IndexLockedError as exc:
        raise click.ClickException(f"{exc}, or pass --wait to queue behind it") from None
    except ValueError as exc:
        message = str(exc)
        if "chunk_size" in message or "chunk_overlap" in message or "files_per_batch" in message:
            raise click.BadParameter(f"{message} (--chunk-size / --chunk-overlap / --files-per-batch)") from None
        raise click.ClickException(f"{index_dir}: {message}") from None
    return summary.to_dict()


def _location(node: Any) -> str:
    md = node.metadata or {}
    parts = []
    if md.get("page_label") is not None:
        parts.append(f"page {md['page_label']}")
    if node.start_char_idx is not None and node.end_char_idx is not None:
        parts.append(f"chars {node.start_char_idx}-{node.end_char_idx}")
    return ", ".join(parts) or "-"


def _display_path(path: str) -> str:
    from ragloom.ingestion.paths import display_path

    return display_path(path)


_MODES = {"hybrid": "hybrid", "dense": "default", "keyword": "text_search"}


def run_query(text: str, index_dir: Path, top_k: int = 5, mode: str = "hybrid") -> List[Dict[str, Any]]:
    """Retrieve the ``top_k`` best chunks for ``text``; returns ``list[dict]`` as printed by the CLI.

    ``mode``: ``"hybrid"`` (default), ``"dense"`` or ``"keyword"``.

    Raises:
        click.ClickException: there is no index in ``index_dir``.
    """
    if not text.strip():
        raise click.ClickException(
            "the query is empty: give the text to search for, e.g. ragloom query \"how do I …?\""
        )
    index = _open_index(Path(index_dir), create=False)
    results = index.as_retriever(similarity_top_k=top_k, vector_store_query_mode=_MODES[mode]).retrieve(text)
    return [source_dict(rank, nws) for rank, nws in enumerate(results, 1)]


def source_dict(rank: int, nws: Any) -> Dict[str, Any]:
    """One retrieved chunk as ``ragloom query --json`` and ``ragloom ask --json`` print it: rank,
    score, display path of its file, location (page / character range), offsets, ids and text."""
    node = nws.node
    md = dict(node.metadata or {})
    source = md.get("file_path") or node.ref_doc_id or node.node_id
    return {
        "rank": rank,
        "score": float(nws.score) if nws.score is not None else None,
        "source": _display_path(str(source)),
        "file_path": md.get("file_path"),
        "location": _location(node),
        "page_label": md.get("page_label"),
        "start_char_idx": node.start_char_idx,
        "end_char_idx": node.end_char_idx,
        "node_id": node.node_id,
        "ref_doc_id": node.ref_doc_id,
        "text": node.get_content(MetadataMode.NONE),
    }
