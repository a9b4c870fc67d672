"""Import a LlamaIndex ``./storage`` folder (``index.storage_context.persist()``) into ragloom's storage.

LlamaIndex's default storage is three JSON files: the docstore (``docstore.json``: every node,
under ``<namespace>/data``), the index store (``index_store.json``: the index structs; a
``VectorStoreIndex``'s ``nodes_dict`` maps vector ids to node ids) and the simple vector store
(``default__vector_store.json``: ``embedding_dict`` from vector id to vector).  This module reads
them and writes the nodes *with their vectors* into a ragloom index: nothing is re-embedded.

- **Only ``VectorStoreIndex`` structs** are imported; a folder whose structs are all of another
  kind (``SummaryIndex``, ``TreeIndex`` …), a struct whose nodes live in an external vector store
  (Chroma, Qdrant …: the folder has no vectors for them) and a folder with several vector indexes
  but no ``index_id`` are refused with the reason.
- **The embed model** that made the vectors must be the one the ragloom index records, since
  queries are embedded with it.  It is stated (``embed_model=``, ``--embed-model``), or, when not
  stated, the bundled all-MiniLM-L6-v2 (fp32, the vectors of LlamaIndex's
  ``HuggingFaceEmbedding("sentence-transformers/all-MiniLM-L6-v2")``) is tried.  Either way it is
  checked: its dimension must equal the vectors', and (``verify=True``) up to
  :data:`VERIFY_SAMPLE` stored nodes are embedded again and each new vector must have a cosine
  similarity of at least :data:`VERIFY_MIN_COSINE` with the stored one — a model of the same
  dimension but another vector space scores near 0.  A failed check names the models of that
  dimension ragloom knows.
- **One write path**: the nodes go through :class:`~ragloom.ingestion.IngestionPipeline` (the
  ingestion engine) as pre-split, pre-embedded nodes grouped by source document, with the
  ``UPSERTS`` strategy: each source's fingerprint is recorded, so importing the same folder again
  changes nothing and a source whose nodes changed is replaced whole.

LlamaIndex node JSON decodes into ragloom's node classes (:func:`~ragloom.vector_stores.utils.node_from_llamaindex`);
``TextNode``, ``Document`` and ``IndexNode`` are supported, another node type is reported as a
failed source.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from ragloom.schema import BaseNode, MetadataMode

logger = logging.getLogger(__name__)

__all__ = [
    "LlamaIndexStorage",
    "ImportSummary",
    "read_llamaindex_storage",
    "verify_embed_model",
    "import_llamaindex",
    "import_llamaindex_into",
    "import_llamaindex_dir",
    "LLAMAINDEX_FILES",
    "VERIFY_SAMPLE",
    "VERIFY_MIN_COSINE",
]

PathLike = Union[str, "os.PathLike[str]"]

#: The files LlamaIndex's ``StorageContext.persist`` writes that are read here.
DOCSTORE_FILE = "docstore.json"
INDEX_STORE_FILE = "index_store.json"
VECTOR_STORE_FILE = "default__vector_store.json"
#: the simple vector store's name before LlamaIndex had namespaces (0.6 and older)
LEGACY_VECTOR_STORE_FILE = "vector_store.json"
LLAMAINDEX_FILES = (DOCSTORE_FILE, INDEX_STORE_FILE, VECTOR_STORE_FILE)
#: Stored nodes embedded again to check the embed model (first, middle and last).
VERIFY_SAMPLE = 3
#: Least cosine similarity between a stored vector and the model's new one.  The same model gives
#: about 1.0 (0.99 for its int8 variant against fp32 vectors); another model's space about 0.
VERIFY_MIN_COSINE = 0.9
#: Source documents written per transaction.
SOURCES_PER_BATCH = 256
#: LlamaIndex index struct types (``__type__``) and the classes that write them, for messages.
_STRUCT_CLASSES = {
    "vector_store": "VectorStoreIndex",
    "list": "SummaryIndex",
    "tree": "TreeIndex",
    "keyword_table": "KeywordTableIndex",
    "kg": "KnowledgeGraphIndex",
    "simple_lpg": "PropertyGraphIndex",
    "document_summary": "DocumentSummaryIndex",
    "multimodal_vector_store": "MultiModalVectorStoreIndex",
}


@dataclass
class LlamaIndexStorage:
    """What :func:`read_llamaindex_storage` found: the ``VectorStoreIndex`` struct ``index_id``, its
    ``nodes`` (each with its ``embedding``), their ``dimension``, and ``failed``: ``[{"node_id",
    "reason"}]`` for nodes that could not be read (an unsupported node type)."""

    persist_dir: Path
    index_id: str
    nodes: List[BaseNode]
    dimension: int
    failed: List[Dict[str, str]] = field(default_factory=list)


@dataclass
class ImportSummary:
    """What :func:`import_llamaindex` did.  ``documents``: source documents ``read`` and how many were
    ``added``, ``updated`` or ``unchanged``; ``nodes_read`` / ``nodes_written``; ``failed``:
    ``[{"id", "reason"}]`` (nodes that could not be read, sources the engine refused);
    ``verified``: ``{"sample", "min_cosine"}`` of the embed-model check, or ``None`` when skipped;
    ``seconds``: wall time."""

    persist_dir: str
    index_dir: Optional[str]
    index_id: str
    embed_model: str
    dimension: int
    nodes_read: int
    nodes_written: int
    documents: Dict[str, int]
    failed: List[Dict[str, str]]
    verified: Optional[Dict[str, Any]]
    seconds: float

    def to_dict(self) -> Dict[str, Any]:
        return asdict(self)


# -- reading -------------------------------------------------------------------------------------
def _load_json(path: Path) -> Dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path} is not valid JSON ({exc}); is it a LlamaIndex storage file?") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{path} holds a JSON {type(data).__name__}, not the object LlamaIndex writes")
    return data


def _collection(data: Dict[str, Any], suffix: str, path: Path) -> Dict[str, Any]:
    """The ``<namespace>/<suffix>`` collection of a LlamaIndex key-value JSON file (``{}`` if none)."""
    for key, value in data.items():
        if key == suffix or key.endswith("/" + suffix):
            if not isinstance(value, dict):
                raise ValueError(f"{path}: {key!r} is not an object")
            return value
    return {}


def _struct_data(entry: Any) -> Tuple[str, Dict[str, Any]]:
    """``(type, data)`` of one index-store entry (``__data__`` is JSON text in LlamaIndex's files)."""
    if not isinstance(entry, dict):
        return "?", {}
    data = entry.get("__data__")
    if isinstance(data, str):
        try:
            data = json.loads(data)
        except json.JSONDecodeError:
            data = None
    return str(entry.get("__type__", "?")), data if isinstance(data, dict) else {}


def _choose_struct(structs: Dict[str, Any], index_id: Optional[str], path: Path) -> Tuple[str, Dict[str, Any]]:
    typed = {sid: _struct_data(entry) for sid, entry in structs.items()}
    vectors = {sid: data for sid, (kind, data) in typed.items() if kind == "vector_store"}
    if index_id is not None:
        if index_id not in typed:
            raise ValueError(f"{path} has no index with index_id {index_id!r}; it holds {sorted(typed) or 'none'}")
        kind = typed[index_id][0]
        if kind != "vector_store":
            raise ValueError(f"index {index_id!r} in {path} is a {_STRUCT_CLASSES.get(kind, kind)} ({kind!r}); "
                             "only VectorStoreIndex storage can be imported")
        return index_id, vectors[index_id]
    if not vectors:
        kinds = sorted({_STRUCT_CLASSES.get(k, k) for k, _ in typed.values()})
        raise ValueError(f"{path} holds no VectorStoreIndex (it holds {', '.join(kinds) or 'no index'}); "
                         "only VectorStoreIndex storage can be imported")
    if len(vectors) > 1:
        raise ValueError(f"{path} holds {len(vectors)} VectorStoreIndex structs ({', '.join(sorted(vectors))}); "
                         "choose one with index_id= (--index-id)")
    return next(iter(vectors.items()))


def _vector_store_path(directory: Path) -> Optional[Path]:
    for name in (VECTOR_STORE_FILE, LEGACY_VECTOR_STORE_FILE):
        if (directory / name).is_file():
            return directory / name
    return None


def _check_vector(node_id: str, vector: Any, dim: Optional[int]) -> int:
    if not isinstance(vector, list) or not vector or not all(isinstance(x, (int, float)) for x in vector):
        raise ValueError(f"the vector of node {node_id} is not a non-empty list of numbers")
    if dim is not None and len(vector) != dim:
        raise ValueError(f"the vector of node {node_id} has {len(vector)} dimensions, the others {dim}")
    if not all(math.isfinite(x) for x in vector):
        raise ValueError(f"the vector of node {node_id} holds NaN or infinity")
    return len(vector)


def read_llamaindex_storage(persist_dir: PathLike, index_id: Optional[str] = None) -> LlamaIndexStorage:
    """Read the ``VectorStoreIndex`` of a LlamaIndex storage folder: its nodes with their vectors.

    Args:
        persist_dir: the folder ``storage_context.persist()`` wrote.
        index_id: the index to read when the folder holds several.

    Raises:
        FileNotFoundError: ``persist_dir`` or one of :data:`LLAMAINDEX_FILES` is missing (the
            message lists which).
        ValueError: a file that is not LlamaIndex's JSON; no ``VectorStoreIndex``, several and no
            ``index_id``, an unknown ``index_id``; an index whose nodes or vectors are not in the
            folder (an external vector store); vectors of mixed dimensions or not finite.
    """
    directory = Path(persist_dir)
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory} is not a folder: give the LlamaIndex persist_dir (e.g. ./storage)")
    vector_path = _vector_store_path(directory)
    missing = [n for n in (DOCSTORE_FILE, INDEX_STORE_FILE) if not (directory / n).is_file()]
    if vector_path is None:
        missing.append(VECTOR_STORE_FILE)
    if missing:
        raise FileNotFoundError(f"{directory} is not a LlamaIndex storage folder: missing {', '.join(missing)} "
                                "(written by index.storage_context.persist())")
    structs = _collection(_load_json(directory / INDEX_STORE_FILE), "data", directory / INDEX_STORE_FILE)
    chosen, struct = _choose_struct(structs, index_id, directory / INDEX_STORE_FILE)
    nodes_dict = struct.get("nodes_dict") or {}
    if not isinstance(nodes_dict, dict) or not nodes_dict:
        raise ValueError(f"index {chosen!r} in {directory} lists no nodes: LlamaIndex keeps them in the vector store "
                         "it was built with (Chroma, Qdrant …), not in this folder; open that store with ragloom's "
                         "adapter (e.g. ragloom.vector_stores.chroma.ChromaVectorStore) instead")
    docs = _collection(_load_json(directory / DOCSTORE_FILE), "data", directory / DOCSTORE_FILE)
    assert vector_path is not None
    embeddings = _load_json(vector_path).get("embedding_dict") or {}
    return _nodes_with_vectors(directory, chosen, nodes_dict, docs, embeddings)


def _nodes_with_vectors(directory: Path, index_id: str, nodes_dict: Dict[str, Any], docs: Dict[str, Any],
                        embeddings: Dict[str, Any]) -> LlamaIndexStorage:
    from ragloom.vector_stores.utils import node_from_llamaindex

    nodes: List[BaseNode] = []
    failed: List[Dict[str, str]] = []
    no_node = [nid for nid in nodes_dict.values() if nid not in docs]
    no_vector = [vid for vid in nodes_dict if vid not in embeddings]
    if no_node or no_vector:
        raise ValueError(
            f"index {index_id!r} in {directory}: {len(no_node)} of its {len(nodes_dict)} nodes are not in "
            f"{DOCSTORE_FILE} and {len(no_vector)} have no vector in {VECTOR_STORE_FILE}; the index was built "
            "on an external vector store (open that store with ragloom's adapter) or the folder is incomplete")
    dim: Optional[int] = None
    for vector_id, node_id in nodes_dict.items():
        entry = docs[node_id]
        data = entry.get("__data__") if isinstance(entry, dict) else None
        if isinstance(data, str):
            data = json.loads(data)
        if not isinstance(data, dict):
            failed.append({"id": str(node_id), "reason": "the docstore entry holds no node"})
            continue
        try:
            node = node_from_llamaindex(data)
        except ValueError as exc:
            failed.append({"id": str(node_id), "reason": str(exc)})
            continue
        dim = _check_vector(str(node_id), embeddings[vector_id], dim)
        node.embedding = [float(x) for x in embeddings[vector_id]]
        nodes.append(node)
    if not nodes:
        raise ValueError(f"no node of index {index_id!r} in {directory} could be read: {failed[:3]}")
    assert dim is not None
    return LlamaIndexStorage(directory, index_id, nodes, dim, failed)


# -- the embed model ----------------------------------------------------------------------------------
def _models_of_dimension(dim: int) -> List[str]:
    from ragloom.embeddings.limits import KNOWN_MODEL_LIMITS

    return sorted(name for name, info in KNOWN_MODEL_LIMITS.items() if info.dimension == dim)


def _dimension_hint(dim: int) -> str:
    names = _models_of_dimension(dim)
    return (f"models ragloom knows with {dim}-dimensional vectors: {', '.join(names)}" if names
            else f"ragloom knows no model with {dim}-dimensional vectors")


def verify_embed_model(nodes: Sequence[BaseNode], embed_model: Any, dimension: int,
                       sample: int = VERIFY_SAMPLE, min_cosine: float = VERIFY_MIN_COSINE) -> Dict[str, Any]:
    """Check that ``embed_model`` made the stored vectors of ``nodes``: embed up to ``sample`` of them
    again (first, middle, last) from their embed view (``get_content(MetadataMode.EMBED)``, the text
    LlamaIndex embedded) and compare.

    Returns:
        ``{"sample": n, "min_cosine": c}``.

    Raises:
        ValueError: the model's vectors have another dimension, or a cosine below ``min_cosine``
            (the message gives both and the models of that dimension ragloom knows).
    """
    if not nodes:
        return {"sample": 0, "min_cosine": None}
    picks = sorted({0, len(nodes) // 2, len(nodes) - 1})[:max(1, sample)]
    chosen = [nodes[i] for i in picks]
    fresh = np.asarray(embed_model.get_text_embedding_batch_array(
        [n.get_content(MetadataMode.EMBED) for n in chosen]), dtype=np.float32)
    name = embed_model.model_name
    if fresh.ndim != 2 or fresh.shape[1] != dimension:
        got = fresh.shape[1] if fresh.ndim == 2 else "?"
        raise ValueError(f"the stored vectors have {dimension} dimensions but embed model {name!r} makes {got}; "
                         f"state the model that built the LlamaIndex index ({_dimension_hint(dimension)})")
    stored = np.asarray([n.embedding for n in chosen], dtype=np.float32)
    num = (fresh * stored).sum(axis=1)
    den = np.linalg.norm(fresh, axis=1) * np.linalg.norm(stored, axis=1)
    cos = np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0)
    worst = float(cos.min())
    if worst < min_cosine:
        raise ValueError(
            f"embed model {name!r} does not reproduce the stored vectors (cosine similarity {worst:.3f} < "
            f"{min_cosine} on node {chosen[int(cos.argmin())].node_id}): it is not the model that built the "
            f"LlamaIndex index; state that model ({_dimension_hint(dimension)}), or skip this check with "
            "verify=False (--no-verify) if you are sure")
    return {"sample": len(chosen), "min_cosine": round(worst, 6)}


def _resolve_model(embed_model: Any, dimension: int) -> Any:
    """The stated model, or the bundled fp32 model when its dimension fits."""
    from ragloom.embeddings import resolve_embed_model

    if embed_model is not None:
        return resolve_embed_model(embed_model)
    model = resolve_embed_model("fp32")
    if model.dimension != dimension:
        raise ValueError(f"state the embed model that built the LlamaIndex index (embed_model=, --embed-model): its "
                         f"vectors have {dimension} dimensions, not the bundled model's {model.dimension} "
                         f"({_dimension_hint(dimension)}; e.g. 'openai:text-embedding-3-small')")
    return model


# -- writing --------------------------------------------------------------------------------------
def _source_batches(nodes: Sequence[BaseNode], per_batch: int = SOURCES_PER_BATCH) -> Iterator[List[BaseNode]]:
    """The nodes in batches of whole source documents (a source's nodes are written together)."""
    from ragloom.ingestion.engine import source_id

    groups: Dict[str, List[BaseNode]] = {}
    for node in nodes:
        groups.setdefault(source_id(node), []).append(node)
    batch: List[BaseNode] = []
    count = 0
    for members in groups.values():
        batch.extend(members)
        count += 1
        if count >= per_batch:
            yield batch
            batch, count = [], 0
    if batch:
        yield batch


def import_llamaindex_into(index: Any, storage: LlamaIndexStorage, verified: Optional[Dict[str, Any]],
                           show_progress: bool = False) -> ImportSummary:
    """Write ``storage``'s nodes into the ragloom ``index`` (a :class:`~ragloom.indices.VectorStoreIndex`
    whose embed model was checked) through the ingestion engine; returns the :class:`ImportSummary`."""
    from ragloom.ingestion import DocstoreStrategy, IngestionPipeline

    t0 = time.perf_counter()
    model = index.embed_model
    pipeline = IngestionPipeline(
        transformations=[model],  # the nodes carry their vectors: the model embeds none of them
        docstore=index.docstore,
        vector_store=index.vector_store,
        docstore_strategy=DocstoreStrategy.UPSERTS,
        disable_cache=True,
    )
    stats = pipeline.run_batches(_source_batches(storage.nodes), store_doc_text=not index.vector_store.stores_text,
                                 show_progress=show_progress)
    if stats.nodes_embedded:  # pragma: no cover - every node arrives with its vector
        logger.warning("%d imported nodes were embedded again", stats.nodes_embedded)
    persist = index.storage_context.persist_dir
    return ImportSummary(
        persist_dir=str(storage.persist_dir),
        index_dir=str(persist) if persist is not None else None,
        index_id=storage.index_id,
        embed_model=model.model_name,
        dimension=storage.dimension,
        nodes_read=len(storage.nodes),
        nodes_written=stats.nodes_written,
        documents={"read": stats.documents, "added": stats.added, "updated": stats.updated,
                   "unchanged": stats.unchanged},
        failed=list(storage.failed) + [{"id": f.doc_id, "reason": f.message} for f in stats.failed],
        verified=verified,
        seconds=round(time.perf_counter() - t0, 3),
    )


def _open_target(storage_context: Any, model: Any, index_id: str) -> Any:
    """The ``VectorStoreIndex`` of ``storage_context`` (checked against ``model``), or a new one named
    ``index_id`` (LlamaIndex's id, so ``load_index_from_storage(sc, index_id=...)`` keeps working)."""
    from ragloom.indices import VectorStoreIndex, load_index_from_storage

    if list(storage_context.index_store.index_structs()):
        return load_index_from_storage(storage_context, embed_model=model)
    index = VectorStoreIndex(storage_context=storage_context, embed_model=model)
    index.set_index_id(index_id)
    return index


def import_llamaindex(
    persist_dir: PathLike,
    storage_context: Any = None,
    *,
    embed_model: Any = None,
    index_id: Optional[str] = None,
    verify: bool = True,
    show_progress: bool = False,
) -> Tuple[Any, ImportSummary]:
    """Import the ``VectorStoreIndex`` of LlamaIndex storage folder ``persist_dir`` into
    ``storage_context`` (default: a new in-memory one), vectors kept.

    Args:
        persist_dir: the LlamaIndex folder (``docstore.json``, ``index_store.json``,
            ``default__vector_store.json``).
        storage_context: a ragloom :class:`~ragloom.storage.StorageContext` with no index (a new
            index is made, named by LlamaIndex's ``index_id``) or with one ``VectorStoreIndex``
            built with the same embed model (the import then adds to it).
        embed_model: the model that made the vectors (anything
            :func:`~ragloom.embeddings.resolve_embed_model` takes); ``None``: the bundled model in
            fp32 when the vectors are 384-dimensional.  Recorded in the index, so queries use it.
        index_id: the LlamaIndex index to import when the folder holds several.
        verify: embed a few stored nodes again to check the model (see the module doc).
        show_progress: progress bars.

    Returns:
        ``(index, summary)``: the ragloom :class:`~ragloom.indices.VectorStoreIndex` and an
        :class:`ImportSummary`.

    Raises:
        FileNotFoundError, ValueError: as :func:`read_llamaindex_storage`; the embed model's
            dimension or vectors do not match (:func:`verify_embed_model`); ``storage_context``
            holds an index built with another model or several indexes.
    """
    from ragloom.storage import StorageContext

    storage, model, verified = _prepare(persist_dir, embed_model, index_id, verify)
    sc = storage_context if storage_context is not None else StorageContext.from_defaults()
    index = _open_target(sc, model, storage.index_id)
    summary = import_llamaindex_into(index, storage, verified, show_progress=show_progress)
    logger.info("imported %d nodes of LlamaIndex index %s from %s", summary.nodes_written, storage.index_id,
                persist_dir)
    return index, summary


def _prepare(persist_dir: PathLike, embed_model: Any, index_id: Optional[str],
             verify: bool) -> Tuple[LlamaIndexStorage, Any, Optional[Dict[str, Any]]]:
    """Read the folder and settle the embed model, before anything is written."""
    storage = read_llamaindex_storage(persist_dir, index_id)
    model = _resolve_model(embed_model, storage.dimension)
    verified = verify_embed_model(storage.nodes, model, storage.dimension) if verify else None
    if not verify and model.dimension is not None and model.dimension != storage.dimension:
        raise ValueError(f"the stored vectors have {storage.dimension} dimensions but embed model "
                         f"{model.model_name!r} makes {model.dimension} ({_dimension_hint(storage.dimension)})")
    return storage, model, verified


def import_llamaindex_dir(
    persist_dir: PathLike,
    index_dir: PathLike,
    *,
    embed_model: Any = None,
    index_id: Optional[str] = None,
    verify: bool = True,
    wait: bool = False,
    on_wait: Any = None,
    show_progress: bool = False,
) -> ImportSummary:
    """``ragloom import-llamaindex``: :func:`import_llamaindex` into the ragloom index directory
    ``index_dir`` (created when missing; an existing index must record the same embed model), under
    its writer lock (:func:`~ragloom.ingestion.paths.acquire_lock`).  The folder is read and the model
    checked before ``index_dir`` is touched.

    Raises:
        as :func:`import_llamaindex`; IndexLockedError: another process writes ``index_dir`` and not ``wait``.
    """
    from ragloom.embeddings.cache import attach_query_cache
    from ragloom.ingestion.paths import INDEX_DB_NAME, acquire_lock, open_index
    from ragloom.storage import StorageContext

    storage, model, verified = _prepare(persist_dir, embed_model, index_id, verify)
    lock = acquire_lock(index_dir, wait, on_wait)
    try:
        if (Path(index_dir) / INDEX_DB_NAME).exists():
            index = open_index(index_dir, create=False, embed_model=model)
        else:
            sc = StorageContext.from_defaults(persist_dir=str(index_dir), create_if_missing=True)
            index = _open_target(sc, model, storage.index_id)
            attach_query_cache(index.embed_model, Path(index_dir))
        summary = import_llamaindex_into(index, storage, verified, show_progress=show_progress)
        index.vector_store.optimize()  # the approximate index, once the store is big enough
        return summary
    finally:
        lock.release()
