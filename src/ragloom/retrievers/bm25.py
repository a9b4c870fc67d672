"""``BM25Retriever``: keyword (BM25) retrieval over nodes, a docstore or an index.

LlamaIndex users import it from ``llama_index.retrievers.bm25``; here it is
``ragloom.retrievers.bm25`` (also ``ragloom.retrievers``).  There is one BM25
implementation in ragloom — SQLite FTS5 over the language-aware analyzer (:mod:`ragloom.fts`,
:mod:`ragloom.analysis`): CJK unigrams + bigrams and Snowball-stemmed English words without
stopwords, the same analyzer at index and query time.  So Chinese, English and mixed text
work without configuration, and scores equal those of the SQLite store's ``text_search``
mode over the same nodes.

* ``from_defaults(index=…)`` over an index whose vector store keeps a keyword table (the
  default :class:`~ragloom.vector_stores.SQLiteVectorStore`) searches that table: nothing is
  copied, it is already persisted with the index and follows every insert and delete.
* ``from_defaults(nodes=…)`` / ``docstore=…`` builds a standalone index in an in-memory SQLite
  database, which :meth:`BM25Retriever.insert_nodes` / :meth:`~BM25Retriever.delete_nodes` /
  :meth:`~BM25Retriever.delete_ref_doc` update and :meth:`~BM25Retriever.persist` saves
  (:meth:`~BM25Retriever.from_persist_dir` opens it again).
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union


from ragloom.fts import (
    create_fts_table,
    create_node_table,
    delete_node_rows,
    fill_fts_table,
    keyword_search,
    nodes_where,
    write_node_rows,
)
from ragloom.retrievers.base import BaseRetriever
from ragloom.schema import BaseNode, NodeWithScore, QueryBundle, node_from_json
from ragloom.storage.sqlite import SQLiteDatabase
from ragloom.vector_stores.utils import dedupe_last

logger = logging.getLogger(__name__)

__all__ = ["BM25Retriever", "SQLiteKeywordIndex", "DEFAULT_PERSIST_FILENAME"]

#: File written by :meth:`BM25Retriever.persist` inside its directory.
DEFAULT_PERSIST_FILENAME = "bm25.sqlite"
DEFAULT_SIMILARITY_TOP_K = 2

_NAME_RE = re.compile(r"^[A-Za-z0-9_]{1,64}$")
_BATCH = 2000
#: ``language`` values accepted for LlamaIndex compatibility (analysis is automatic).
_LANGUAGES = {"en", "english", "zh", "chinese", "auto"}

PathLike = Union[str, "os.PathLike[str]"]


class SQLiteKeywordIndex:
    """A standalone BM25 index: node rows plus a contentless FTS5 table in a :class:`SQLiteDatabase`.

    Tables ``kw_<collection>_nodes`` (same columns as the vector store's node table) and
    ``kw_<collection>_fts`` (see :mod:`ragloom.fts`); in memory unless a file-backed database is
    given.  Writes are transactional: a node's row and its keyword row change together.

    Raises:
        ValueError: ``collection`` is not 1–64 characters of ``[A-Za-z0-9_]``.
    """

    def __init__(self, database: Optional[SQLiteDatabase] = None, collection: str = "default") -> None:
        if not _NAME_RE.match(collection):
            raise ValueError(f"collection name must match [A-Za-z0-9_]{{1,64}}, got {collection!r}")
        self._db = database if database is not None else SQLiteDatabase(":memory:")
        self.collection = collection
        self._nodes = f"kw_{collection}_nodes"
        self._fts = f"kw_{collection}_fts"
        self._config = f"kw_{collection}_config"
        with self._db.transaction():
            conn = self._db.connection
            new_fts = create_fts_table(conn, self._fts)
            create_node_table(conn, self._nodes)
            conn.execute(f'CREATE TABLE IF NOT EXISTS "{self._config}" (key TEXT PRIMARY KEY, value TEXT NOT NULL)')
            if new_fts:  # keyword text of another version: index the stored nodes again
                fill_fts_table(conn, self._fts, self._nodes)

    @property
    def database(self) -> SQLiteDatabase:
        return self._db

    def count(self) -> int:
        """Number of indexed nodes."""
        return int(self._db.execute(f'SELECT count(*) FROM "{self._nodes}"')[0][0])

    def __len__(self) -> int:
        return self.count()

    def add(self, nodes: Sequence[BaseNode]) -> List[str]:
        """Index ``nodes`` (a node whose id is already indexed is replaced) in one transaction;
        return their ids.  Embeddings are not kept."""
        batch = dedupe_last(nodes)
        with self._db.transaction():
            conn = self._db.connection
            for start in range(0, len(batch), _BATCH):
                write_node_rows(conn, self._nodes, self._fts, batch[start : start + _BATCH])
        return [n.node_id for n in nodes]

    def _delete_where(self, where: str, params: List[Any]) -> int:
        with self._db.transaction():
            return delete_node_rows(self._db.connection, self._nodes, self._fts, where, params)

    def delete_nodes(self, node_ids: Sequence[str]) -> int:
        """Remove the nodes ``node_ids`` (unknown ids are ignored); return how many were removed."""
        where, params = nodes_where(node_ids=list(node_ids))
        return self._delete_where(where, params)

    def delete(self, ref_doc_id: str) -> int:
        """Remove every node of the source document ``ref_doc_id``; return how many were removed."""
        where, params = nodes_where(doc_ids=[ref_doc_id])
        return self._delete_where(where, params)

    def clear(self) -> None:
        """Remove every node."""
        self._delete_where("1", [])

    def get_nodes(self, node_ids: Optional[Sequence[str]] = None) -> List[BaseNode]:
        """Indexed nodes (without embeddings), in insertion order; only ``node_ids`` when given."""
        where, params = nodes_where(node_ids=node_ids)
        rows = self._db.execute(f'SELECT n.node FROM "{self._nodes}" AS n WHERE {where} ORDER BY n.id', params)
        return [node_from_json(r[0]) for r in rows]

    def search(
        self,
        query_str: str,
        k: int,
        filters: Any = None,
        node_ids: Optional[Sequence[str]] = None,
        doc_ids: Optional[Sequence[str]] = None,
    ) -> List[Tuple[str, str, float]]:
        """The ``k`` best BM25 matches as ``(node_id, node_json, score)``, best first (see
        :func:`ragloom.fts.keyword_search`), restricted by ``filters`` / ``node_ids`` / ``doc_ids``."""
        where, params = nodes_where(node_ids=node_ids, doc_ids=doc_ids, filters=filters)
        return keyword_search(self._db, self._fts, self._nodes, query_str, k, where, params)

    def get_config(self) -> Dict[str, Any]:
        return {k: json.loads(v) for k, v in self._db.execute(f'SELECT key, value FROM "{self._config}"')}

    def set_config(self, config: Dict[str, Any]) -> None:
        with self._db.transaction():
            self._db.connection.executemany(
                f'INSERT INTO "{self._config}"(key, value) VALUES (?, ?) '
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [(k, json.dumps(v)) for k, v in config.items()],
            )


def _check_top_k(similarity_top_k: Any) -> int:
    if isinstance(similarity_top_k, bool) or not isinstance(similarity_top_k, int) or similarity_top_k < 1:
        raise ValueError(f"similarity_top_k must be an int >= 1, got {similarity_top_k!r}")
    return similarity_top_k


def _check_compat_args(
    stemmer: Any, language: Any, skip_stemming: Any, token_pattern: Any, existing_bm25: Any
) -> None:
    """LlamaIndex's bm25s knobs: ragloom's analyzer is fixed (it must match the store's index)."""
    if stemmer is not None:
        raise ValueError("stemmer must be None: ragloom always uses its analyzer's Snowball English stemmer")
    if language is not None and str(language).lower() not in _LANGUAGES:
        raise ValueError(
            f"language must be one of {sorted(_LANGUAGES)} (analysis is automatic for Chinese and English), "
            f"got {language!r}"
        )
    if skip_stemming:
        raise ValueError("skip_stemming must be False: the keyword index is built with stemmed English words")
    if token_pattern is not None:
        raise ValueError("token_pattern must be None: ragloom tokenizes with its language-aware analyzer")
    if existing_bm25 is not None:
        raise ValueError("existing_bm25 is not supported: use BM25Retriever.from_persist_dir(path)")


class BM25Retriever(BaseRetriever):
    """Retrieve the ``similarity_top_k`` nodes with the highest BM25 score for the query.

    Scores are BM25 (FTS5 ``bm25()`` negated: > 0, higher is better; k1 = 1.2, b = 0.75, lengths
    in analyzer tokens) and only nodes sharing at least one analysed token with the query are
    returned, so fewer than ``similarity_top_k`` may come back.  Ties are broken by insertion
    order.

    Build with :meth:`from_defaults`; ``BM25Retriever(nodes=[…])`` also works.

    Args:
        nodes: nodes to index in a new in-memory keyword index.
        similarity_top_k: how many nodes to return (>= 1).
        filters: :class:`~ragloom.vector_stores.types.MetadataFilters` applied inside the search.
        verbose: log each query and its hit count at INFO (otherwise DEBUG).
        index: search this index's own keyword table instead (see :meth:`from_defaults`).
        keyword_index: an existing :class:`SQLiteKeywordIndex` to search.
        stemmer / language / skip_stemming / token_pattern / existing_bm25: LlamaIndex's bm25s
            options, accepted only at values that match ragloom's fixed analyzer.

    Raises:
        ValueError: not exactly one of ``nodes`` / ``index`` / ``keyword_index``, a bad
            ``similarity_top_k``, or an unsupported LlamaIndex option.
    """

    def __init__(
        self,
        nodes: Optional[Sequence[BaseNode]] = None,
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        filters: Any = None,
        verbose: bool = False,
        *,
        index: Any = None,
        keyword_index: Optional[SQLiteKeywordIndex] = None,
        stemmer: Any = None,
        language: Any = "en",
        skip_stemming: bool = False,
        token_pattern: Optional[str] = None,
        existing_bm25: Any = None,
    ) -> None:
        _check_compat_args(stemmer, language, skip_stemming, token_pattern, existing_bm25)
        given = sum(x is not None for x in (nodes, index, keyword_index))
        if given != 1:
            raise ValueError("pass exactly one of nodes, index or keyword_index")
        self.similarity_top_k = _check_top_k(similarity_top_k)
        self.filters = filters
        self._verbose = bool(verbose)
        self._index = index
        self._keyword_index: Optional[SQLiteKeywordIndex] = keyword_index
        if nodes is not None:
            self._keyword_index = SQLiteKeywordIndex()
            self._keyword_index.add(list(nodes))

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_defaults(
        cls,
        index: Any = None,
        nodes: Optional[Sequence[BaseNode]] = None,
        docstore: Any = None,
        stemmer: Any = None,
        language: Any = "en",
        similarity_top_k: int = DEFAULT_SIMILARITY_TOP_K,
        verbose: bool = False,
        skip_stemming: bool = False,
        token_pattern: Optional[str] = None,
        filters: Any = None,
        **kwargs: Any,
    ) -> "BM25Retriever":
        """A BM25 retriever over exactly one of ``index``, ``nodes`` or ``docstore``.

        * ``index``: when its vector store keeps a keyword table (``supports_hybrid``, as the
          default SQLite store does), the retriever searches that table directly — no copy; it is
          persisted with the index and sees every later insert/delete.  Otherwise the nodes of
          ``index.docstore`` are indexed as with ``docstore``.
        * ``nodes``: index these nodes in a new in-memory keyword index.
        * ``docstore``: index every node of the docstore now (a snapshot; later docstore changes
          are not seen — use :meth:`insert_nodes` / :meth:`delete_nodes`).

        Raises:
            ValueError: not exactly one source given, an index with neither a keyword table nor
                nodes in its docstore, an empty ``docstore`` (name ``index=`` instead), a bad
                ``similarity_top_k`` or an unsupported option.
        """
        _check_compat_args(stemmer, language, skip_stemming, token_pattern, kwargs.pop("existing_bm25", None))
        if sum(x is not None for x in (index, nodes, docstore)) != 1:
            raise ValueError("pass exactly one of index, nodes or docstore")
        _check_top_k(similarity_top_k)
        common = dict(similarity_top_k=similarity_top_k, filters=filters, verbose=verbose)
        if index is not None:
            store = getattr(index, "vector_store", None)
            if getattr(store, "supports_hybrid", False):
                return cls(index=index, **common)
            nodes = list(index.docstore.docs.values())
            if not nodes:
                raise ValueError(
                    "the index's vector store has no keyword table and its docstore holds no nodes; "
                    "build the index with store_nodes_override=True or pass nodes=..."
                )
        elif docstore is not None:
            # (docs also holds the nodes a StorageContext's vector store keeps: docstore=index.docstore works)
            nodes = list(docstore.docs.values())
            if not nodes:  # an empty snapshot would silently find nothing
                raise ValueError(
                    "the docstore holds no nodes; pass index=<the index> to search its keyword table, or nodes=..."
                )
        return cls(nodes=list(nodes or []), **common)

    @classmethod
    def from_persist_dir(cls, path: PathLike, **kwargs: Any) -> "BM25Retriever":
        """Open the keyword index saved by :meth:`persist` in directory ``path``.

        The file is used in place (not copied): later :meth:`insert_nodes` / :meth:`delete_nodes`
        are written to it at once.  ``similarity_top_k`` is restored unless given in ``kwargs``
        (``filters``, ``verbose`` may also be given).

        Raises:
            FileNotFoundError: ``path`` holds no ``bm25.sqlite``.
        """
        file = Path(path) / DEFAULT_PERSIST_FILENAME
        if not file.is_file():
            raise FileNotFoundError(f"no BM25 index at {file}: save one with BM25Retriever.persist({str(path)!r})")
        keyword_index = SQLiteKeywordIndex(SQLiteDatabase(file, create=False))
        config = keyword_index.get_config()
        kwargs.setdefault("similarity_top_k", int(config.get("similarity_top_k", DEFAULT_SIMILARITY_TOP_K)))
        return cls(keyword_index=keyword_index, **kwargs)

    # -- properties ----------------------------------------------------------------------------
    @property
    def keyword_index(self) -> Optional[SQLiteKeywordIndex]:
        """The standalone keyword index (``None`` when searching an index's own table)."""
        return self._keyword_index

    @property
    def index(self) -> Any:
        """The index whose keyword table is searched (``None`` for a standalone retriever)."""
        return self._index

    def _standalone(self, what: str) -> SQLiteKeywordIndex:
        if self._keyword_index is None:
            raise RuntimeError(
                f"{what}: this retriever searches the keyword table of an index; insert into / delete from the index "
                "instead (the retriever sees the change at once)"
            )
        return self._keyword_index

    # -- incremental updates (standalone) -------------------------------------------------------
    def insert_nodes(self, nodes: Sequence[BaseNode]) -> None:
        """Add (or replace, by id) ``nodes`` in the standalone keyword index.

        Raises:
            RuntimeError: the retriever searches an index's table (update the index instead).
        """
        self._standalone("insert_nodes").add(list(nodes))

    def delete_nodes(self, node_ids: Sequence[str]) -> None:
        """Remove nodes by id from the standalone keyword index (unknown ids are ignored).

        Raises:
            RuntimeError: the retriever searches an index's table (update the index instead).
        """
        self._standalone("delete_nodes").delete_nodes(node_ids)

    def delete_ref_doc(self, ref_doc_id: str) -> None:
        """Remove every node of source document ``ref_doc_id`` from the standalone keyword index.

        Raises:
            RuntimeError: the retriever searches an index's table (update the index instead).
        """
        self._standalone("delete_ref_doc").delete(ref_doc_id)

    # -- persistence ------------------------------------------------------------------------------
    def persist(self, path: PathLike, **kwargs: Any) -> None:
        """Save the keyword index and ``similarity_top_k`` to ``path/bm25.sqlite`` (the directory
        is created), atomically.  For a retriever over an index, its nodes are copied into a new
        standalone index file (the index's own table is persisted with the index).
        ``filters`` are not saved."""
        directory = Path(path)
        directory.mkdir(parents=True, exist_ok=True)
        target = directory / DEFAULT_PERSIST_FILENAME
        keyword_index = self._keyword_index
        if keyword_index is None:
            keyword_index = SQLiteKeywordIndex()
            keyword_index.add(self._index.vector_store.get_nodes())
        keyword_index.set_config({"similarity_top_k": self.similarity_top_k})
        keyword_index.database.backup_to(target)

    # -- retrieval ----------------------------------------------------------------------------------
    def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
        k = self.similarity_top_k
        if self._index is not None:
            from ragloom.vector_stores.types import VectorStoreQuery, VectorStoreQueryMode

            result = self._index.vector_store.query(
                VectorStoreQuery(
                    query_str=query_bundle.query_str,
                    similarity_top_k=k,
                    mode=VectorStoreQueryMode.TEXT_SEARCH,
                    filters=self.filters,
                )
            )
            out = self._index._build_node_list_from_query_result(result)
        else:
            assert self._keyword_index is not None
            rows = self._keyword_index.search(query_bundle.query_str, k, filters=self.filters)
            out = [NodeWithScore(node=node_from_json(data), score=score) for _, data, score in rows]
        logger.log(
            logging.INFO if self._verbose else logging.DEBUG, "BM25 %r: %d hits", query_bundle.query_str, len(out)
        )
        return out
