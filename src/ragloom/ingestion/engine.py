"""The ingestion engine: **plan → transform → write**, the one path by which data reaches storage.

Every entry point is a thin caller of :class:`IngestionEngine`: ``VectorStoreIndex.from_documents``
/ ``insert`` / ``update_ref_doc`` / ``refresh_ref_docs``, ``IngestionPipeline.run`` / ``run_batches``
/ ``arun`` and ``ragloom index``.  The three parts:

* **plan** (:meth:`IngestionEngine.plan`): inputs are grouped by *source document* — a
  :class:`~ragloom.schema.Document` is its own source; a pre-split node belongs to its
  ``ref_doc_id`` (or is its own source when it has none).  Each source gets a *fingerprint*:
  the sha256 of the transformations' configuration digest and of its inputs' ids and hashes.
  Against the fingerprints recorded in the docstore, each source is ``new``, ``changed``,
  ``unchanged`` or (with ``UPSERTS_AND_DELETE``) ``absent``.  Because the configuration is part of
  the fingerprint, changing a splitter (or the embed model) re-chunks every document on the next
  run, through every entry point, and a re-chunk interrupted by a crash resumes where it stopped.
* **transform** (:mod:`ragloom.ingestion.transform`): the per-node, per-transformation cache and
  the worker pool.  A document that a transformation rejects (:class:`~ragloom.errors.DocumentError`
  or any ``ValueError``), or whose metadata cannot be serialised, is reported in
  :attr:`IngestionStats.failed` and the others go on (``raise_on_error=True`` raises
  :class:`~ragloom.errors.IngestionError` instead, after the good documents are written).
* **write** (:meth:`IngestionEngine._write`): the only place a transaction opens — one per batch.
  The old nodes of every new or changed source are deleted (all of them: a document re-split from
  10 chunks into 9 loses its 10th), its new nodes written to the vector store and the docstore and
  its fingerprint recorded, together.  When the docstore and the vector store share one SQLite
  database (one ``StorageContext``) this is one transaction: a source is ingested exactly when its
  fingerprint is recorded.  With a separate server store (Chroma, Milvus) the engine records a
  *pending* fingerprint first, so a crash between the two stores leaves a source that the next
  run re-does (or deletes, if it is gone), never an orphan.

Kill points for crash tests are injected with :func:`set_commit_hook`; production code sets none.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Set, Tuple

import msgspec

from ragloom.errors import DocumentError, IngestionError, UnserializableMetadataError
from ragloom.ingestion.cache import IngestionCache, transformation_digest
from ragloom.ingestion.transform import EmbedCounts, ProgressCallback, SplitPool, run_transformations
from ragloom.schema import BaseNode, Document, TransformComponent

logger = logging.getLogger(__name__)

__all__ = [
    "DocstoreStrategy",
    "DocumentFailure",
    "IngestionEngine",
    "IngestionStats",
    "Plan",
    "SourcePlan",
    "prepare_source",
    "set_commit_hook",
    "source_fingerprint",
    "source_id",
]

#: Prefix of a fingerprint recorded before a source's nodes reach a store outside the docstore's
#: transaction; replaced by the real fingerprint once they are written.
PENDING = "pending:"


class DocstoreStrategy(str, Enum):
    """How re-ingested documents are treated (LlamaIndex's names).

    * ``UPSERTS``: new sources are added; a changed source has *all* its old nodes replaced;
      unchanged ones are skipped.
    * ``DUPLICATES_ONLY``: a source whose fingerprint is already recorded (for any id) is skipped;
      nothing is deleted.
    * ``UPSERTS_AND_DELETE``: ``UPSERTS``, plus every recorded source absent from the run is
      deleted (for *full syncs*: each run must pass the whole corpus).
    """

    UPSERTS = "upserts"
    DUPLICATES_ONLY = "duplicates_only"
    UPSERTS_AND_DELETE = "upserts_and_delete"


class FailureKind(str, Enum):
    """``permanent``: the input itself is at fault (retrying the same input fails again).
    ``transient``: the environment is (a file could not be read this time)."""

    PERMANENT = "permanent"
    TRANSIENT = "transient"


@dataclass(frozen=True)
class DocumentFailure:
    """One source document that was not ingested: ``doc_id``, a ``message`` for people, the
    metadata ``keys`` at fault (empty when not about metadata), ``kind`` and ``source_path`` (the
    document's ``file_path`` metadata, when it has one)."""

    doc_id: str
    message: str
    keys: Tuple[str, ...] = ()
    kind: FailureKind = FailureKind.PERMANENT
    source_path: Optional[str] = None


@dataclass
class IngestionStats:
    """Counts of one engine run; "documents" are source documents.

    * ``documents``: sources received; each is then ``added`` (new), ``updated`` (changed, or
      ``force``), ``unchanged`` (skipped) or ``failed``.
    * ``failed``: :class:`DocumentFailure` per source not ingested; its old nodes are removed and
      no fingerprint is recorded, so the next run tries it again.
    * ``deleted``: sources absent from the run that were removed (``UPSERTS_AND_DELETE``).
    * ``nodes_written``: nodes written; ``nodes_embedded``: vectors computed by the embed model;
      ``nodes_reused``: vectors taken from a cache instead.
    * ``batches``: transactions committed; ``documents_in_docstore``: sources recorded after the run
      (``None`` without a docstore).
    """

    documents: int = 0
    added: int = 0
    updated: int = 0
    unchanged: int = 0
    deleted: int = 0
    failed: List[DocumentFailure] = field(default_factory=list)
    nodes_written: int = 0
    nodes_embedded: int = 0
    nodes_reused: int = 0
    batches: int = 0
    documents_in_docstore: Optional[int] = None


@dataclass
class SourcePlan:
    """One source document of a batch: its id, inputs (the document, or its pre-split nodes),
    fingerprint and status (``"new"``, ``"changed"``, ``"unchanged"``, or ``"continued"``: more
    pre-split nodes of a source an earlier batch of the same run wrote)."""

    doc_id: str
    inputs: List[BaseNode]
    fingerprint: str
    status: str


@dataclass
class Plan:
    """What one batch does: ``sources`` to (re)build, stored sources to ``delete`` first (absent
    ones, and the old nodes of changed ones), ``unchanged`` and ``failed`` sources."""

    sources: List[SourcePlan] = field(default_factory=list)
    unchanged: List[SourcePlan] = field(default_factory=list)
    delete: List[str] = field(default_factory=list)
    failed: List[DocumentFailure] = field(default_factory=list)
    #: unchanged sources recorded by an older ragloom (a bare document hash): their fingerprint is
    #: rewritten in the new form, nothing is re-embedded
    rehash: Dict[str, str] = field(default_factory=dict)
    #: ids that several input Documents of this batch share, with how many share each
    #: (the last of each is planned, as an upsert)
    duplicates: Dict[str, int] = field(default_factory=dict)

    @property
    def todo(self) -> List[BaseNode]:
        return [n for s in self.sources for n in s.inputs]


# -- crash-test hook --------------------------------------------------------------------------
_commit_hook: Optional[Callable[[str], None]] = None


def set_commit_hook(hook: Optional[Callable[[str], None]]) -> None:
    """Install ``hook(event)`` (``None`` removes it), called with ``"before_commit"`` inside each
    write transaction after every write, and ``"after_commit"`` after it commits.  For crash tests:
    a hook that kills the process there proves a run can die at that point and be re-run."""
    global _commit_hook
    _commit_hook = hook


def _emit(event: str) -> None:
    if _commit_hook is not None:
        _commit_hook(event)


# -- planning helpers -----------------------------------------------------------------------------
def source_id(node: BaseNode) -> str:
    """The id of the source document ``node`` belongs to: a :class:`Document`'s own id; a node's
    ``ref_doc_id``, or its own id when it has no SOURCE."""
    if isinstance(node, Document):
        return node.id_
    return node.ref_doc_id or node.id_


def view_hash(node: BaseNode) -> str:
    """What a fingerprint records of one input: ``node.hash`` (text and content metadata) and the
    metadata keys its embed and LLM views hide (sha256, hex).  The hidden keys change the embedded
    text without changing ``node.hash`` (a reader that stops embedding ``file_path`` must re-embed)."""
    hidden = "\x00".join(sorted(node.excluded_embed_metadata_keys)) + "\x01" + "\x00".join(
        sorted(node.excluded_llm_metadata_keys))
    return hashlib.sha256(f"{node.hash}\x02{hidden}".encode("utf-8", "surrogatepass")).hexdigest()


def source_fingerprint(config_digest: str, parts: Sequence[Tuple[Optional[str], str]]) -> str:
    """sha256 over ``config_digest`` and the ``(node id or None, node hash)`` parts of one source
    (:meth:`IngestionEngine.fingerprint`); a module function so that workers of a distributed run
    compute it with the driver's digest and no transformations."""
    h = hashlib.sha256(config_digest.encode("ascii"))
    for node_id, node_hash in parts:
        h.update(b"\x00")
        if node_id is not None:
            h.update(node_id.encode("utf-8", "surrogateescape"))
            h.update(b"\x01")
        h.update(node_hash.encode("ascii"))
    return h.hexdigest()


def _bad_metadata(node: BaseNode) -> Optional[DocumentError]:
    """An :class:`UnserializableMetadataError` naming the keys whose values are not JSON, or ``None``."""
    try:
        msgspec.json.encode(node.metadata, order="sorted")  # as BaseNode.hash encodes it
        return None
    except (TypeError, msgspec.EncodeError, OverflowError, UnicodeEncodeError):
        pass
    bad = []
    for key, value in node.metadata.items():
        try:
            msgspec.json.encode({key: value}, order="sorted")
        except (TypeError, msgspec.EncodeError, OverflowError, UnicodeEncodeError):
            bad.append(str(key))
    if not bad:
        bad = ["<keys>"]
    kinds = ", ".join(f"{k}: {type(node.metadata.get(k)).__name__}" for k in bad)
    return UnserializableMetadataError(
        source_id(node),
        f"metadata values cannot be stored as JSON ({kinds}); convert them to str/int/float/bool/list/dict",
        tuple(bad),
    )


def _valid_metadata(value: Any) -> Any:
    """``value`` with the lone surrogates in its strings (dict keys included, in dicts, lists and
    tuples) replaced as :func:`~ragloom.readers.base.path_text` replaces them in file paths: the
    byte 0xNN of a ``surrogateescape``-decoded name (U+DCNN) becomes U+10FENN, so distinct names
    (and keys) stay distinct; any other surrogate becomes U+FFFD.  A copy of its containers."""
    from ragloom.readers.base import path_text

    if isinstance(value, str):
        return path_text(value)
    if isinstance(value, dict):
        return {_valid_metadata(k): _valid_metadata(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_valid_metadata(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_valid_metadata(v) for v in value)
    return value


def _holds_surrogates(value: Any) -> bool:
    """Whether a string in ``value`` (dict keys included, in dicts, lists and tuples) holds a
    surrogate code point, which UTF-8 (and so JSON and every store) has no form for."""
    if isinstance(value, str):
        from ragloom.tokenizers.base import valid_unicode

        return valid_unicode(value) is not value  # (the same string back when it holds none)
    if isinstance(value, dict):
        return any(_holds_surrogates(k) or _holds_surrogates(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(map(_holds_surrogates, value))
    return False


def _related(infos: Any) -> List[Any]:
    return infos if isinstance(infos, list) else [infos]


def _repair_text(nodes: Sequence[BaseNode]) -> None:
    """Make the inputs' strings valid Unicode, with a warning: no tokenizer, model or store accepts
    a lone surrogate (UTF-8 has no form for it; a file name decoded with ``surrogateescape`` holds
    them), and the rest of the document is fine.  In text, each becomes U+FFFD (one character for
    one: offsets hold); in metadata, in the excluded-key lists and in the metadata copied into the
    node's relationships, each is replaced as :func:`_valid_metadata` says.  The node is changed in
    place (its metadata, lists and relationships replaced by repaired copies; the caller's own
    dicts, lists and ``RelatedNodeInfo`` objects are left as they were).  A PREVIOUS/NEXT link
    among ``nodes`` (already-split inputs) whose ``hash`` was its neighbour's :attr:`~BaseNode.hash`
    before that neighbour's repair gets the repaired neighbour's hash (:func:`_relink`)."""
    from ragloom.schema import TextNode
    from ragloom.tokenizers.base import valid_unicode

    rehashed: Dict[str, Tuple[str, str]] = {}  # node id -> (hash before its repair, after)
    for node in nodes:
        before: Optional[str] = None
        if isinstance(node, TextNode):
            fixed = valid_unicode(node.text)
            if fixed is not node.text:
                logger.warning("document %s: lone surrogate characters in its text replaced by U+FFFD",
                               source_id(node))
                before = _hash_or_none(node)
                node.text = fixed
        infos = [i for v in node.relationships.values() for i in _related(v)]
        if (
            _holds_surrogates(node.metadata)
            or _holds_surrogates(node.excluded_embed_metadata_keys)
            or _holds_surrogates(node.excluded_llm_metadata_keys)
            or any(_holds_surrogates(i.metadata) for i in infos)
        ):
            logger.warning("document %s: lone surrogate characters in its metadata replaced", source_id(node))
            if before is None:
                before = _hash_or_none(node)
            node.metadata = _valid_metadata(node.metadata)
            node.excluded_embed_metadata_keys = _valid_metadata(list(node.excluded_embed_metadata_keys))
            node.excluded_llm_metadata_keys = _valid_metadata(list(node.excluded_llm_metadata_keys))
            node.relationships = {
                rel: [_valid_info(i) for i in v] if isinstance(v, list) else _valid_info(v)
                for rel, v in node.relationships.items()
            }
        if before is not None:
            rehashed[node.id_] = (before, node.hash)
    if rehashed:
        _relink(nodes, rehashed)


def _hash_or_none(node: BaseNode) -> Optional[str]:
    """``node.hash``, or ``None`` when its metadata has no JSON form (that node fails later, named by
    :func:`_bad_metadata`; links to it are left as they are)."""
    try:
        return node.hash
    except (TypeError, ValueError, msgspec.EncodeError):
        return None


def _relink(nodes: Sequence[BaseNode], rehashed: Dict[str, Tuple[str, str]]) -> None:
    """Point the PREVIOUS/NEXT links of ``nodes`` at the new hash of a neighbour that
    :func:`_repair_text` changed (``rehashed``: its id -> ``(old hash, new hash)``), where the link
    held the old one (a link that was already stale is left alone).  The node's relationships are
    replaced by a copy; the caller's ``RelatedNodeInfo`` objects are not changed."""
    from ragloom.schema import NodeRelationship

    for node in nodes:
        for rel in (NodeRelationship.PREVIOUS, NodeRelationship.NEXT):
            info = node.relationships.get(rel)
            if info is None or isinstance(info, list):
                continue
            change = rehashed.get(info.node_id)
            if change is not None and info.hash == change[0]:
                node.relationships = {**node.relationships, rel: msgspec.structs.replace(info, hash=change[1])}


def _valid_info(info: Any) -> Any:
    """A copy of the ``RelatedNodeInfo`` ``info`` with :func:`_valid_metadata` metadata (``info``
    itself when its metadata holds no surrogate)."""
    if not _holds_surrogates(info.metadata):
        return info
    return msgspec.structs.replace(info, metadata=_valid_metadata(info.metadata))


def prepare_source(doc_id: str, nodes: Sequence[BaseNode]) -> Optional[DocumentFailure]:
    """Make one source's inputs storable before it is fingerprinted: lone surrogates in their text
    and metadata are replaced (:func:`_repair_text`); an id holding one (the source's or a node's:
    ids are not rewritten, a caller looks things up by them) or metadata that is not JSON makes the
    source fail (returned, else ``None``)."""
    _repair_text(nodes)  # (first: a failure reports the inputs' repaired file_path)
    bad_id = next((i for i in [doc_id, *(n.id_ for n in nodes)] if _holds_surrogates(i)), None)
    if bad_id is not None:
        return _failure(doc_id, DocumentError(
            doc_id,
            f"the id {bad_id!r} holds a lone surrogate (an undecodable byte of a file name, say), which no store "
            "can keep; give the document a valid-Unicode id (ragloom.readers.base.path_text maps such a name "
            "losslessly, as SimpleDirectoryReader(filename_as_id=True) does)",
        ), nodes)
    bad = next((b for b in map(_bad_metadata, nodes) if b is not None), None)
    return None if bad is None else _failure(doc_id, bad, nodes)


def _failure(doc_id: str, exc: BaseException, inputs: Sequence[BaseNode]) -> DocumentFailure:
    keys: Tuple[str, ...] = exc.keys if isinstance(exc, DocumentError) else ()
    message = exc.reason if isinstance(exc, DocumentError) else str(exc)
    path = None
    for node in inputs:
        fp = node.metadata.get("file_path")
        if isinstance(fp, str):
            path = fp
            break
    return DocumentFailure(doc_id=doc_id, message=message, keys=keys, source_path=path)


class IngestionEngine:
    """Plan → transform → write over a docstore and a vector store (either may be ``None``).

    Args:
        transformations: applied in order (node parsers, extractors, an embed model).
        docstore: records source fingerprints (and node links, or nodes); without one, every input
            is written and nothing is skipped or deleted.
        vector_store: where embedded nodes go (nodes need an embedding by then).
        cache: per-node, per-transformation :class:`IngestionCache`, or ``None``.
        strategy: a :class:`DocstoreStrategy`.
        store_doc_text: keep node text in the docstore (``False``: only links and hashes, for a
            vector store that stores text).
        on_nodes_written: called inside the write transaction with the nodes and the ids the vector
            store returned (``VectorStoreIndex`` keeps its index struct with it).
        plan_sources: ``False`` writes every input as given — no fingerprints are compared or
            recorded and nothing is deleted (``VectorStoreIndex.insert_nodes``).

    Raises:
        ValueError: bad ``strategy``.
    """

    def __init__(
        self,
        transformations: Sequence[TransformComponent],
        docstore: Any = None,
        vector_store: Any = None,
        cache: Optional[IngestionCache] = None,
        strategy: Any = DocstoreStrategy.UPSERTS,
        store_doc_text: bool = True,
        on_nodes_written: Optional[Callable[[List[BaseNode], List[str]], None]] = None,
        cache_collection: Optional[str] = None,
        plan_sources: bool = True,
    ) -> None:
        self.transformations = list(transformations)
        self.plan_sources = plan_sources
        self.docstore = docstore
        self.vector_store = vector_store
        self.cache = cache
        self.strategy = DocstoreStrategy(strategy)
        self.store_doc_text = store_doc_text
        self.on_nodes_written = on_nodes_written
        self.cache_collection = cache_collection
        self._config_digest: Optional[str] = None

    # -- plan ---------------------------------------------------------------------------------
    def config_digest(self) -> str:
        """sha256 of every transformation's ``to_config()``: part of each source's fingerprint."""
        if self._config_digest is None:
            h = hashlib.sha256()
            for t in self.transformations:
                h.update(transformation_digest(t).encode("ascii"))
            self._config_digest = h.hexdigest()
        return self._config_digest

    def fingerprint(self, inputs: Sequence[BaseNode]) -> str:
        """The fingerprint of one source: configuration digest + its content.

        A document's content is its :func:`view_hash` (text, content metadata and the keys hidden
        from the embed and LLM views; its id is the key, not part of the value, so
        ``DUPLICATES_ONLY`` finds equal documents under other ids); pre-split nodes add their ids,
        in order, since those are what is stored.
        """
        return self._fingerprint([(None if isinstance(n, Document) else n.id_, view_hash(n)) for n in inputs])

    def _fingerprint(self, parts: Sequence[Tuple[Optional[str], str]]) -> str:
        return source_fingerprint(self.config_digest(), parts)

    def recorded_sources(self) -> Dict[str, str]:
        """``{source id: recorded fingerprint}`` of the docstore (``{}`` without one)."""
        if self.docstore is None:
            return {}
        return dict(self.docstore.get_source_document_hashes())

    def plan(
        self,
        inputs: Sequence[BaseNode],
        force: bool = False,
        continuing: Optional[Dict[str, List[Tuple[Optional[str], str]]]] = None,
    ) -> Plan:
        """Group ``inputs`` by source document and decide what each needs (see the module doc).

        ``force``: every source is rebuilt whatever its fingerprint.  Absent sources are not
        decided here (see :meth:`absent`).  The last version of a repeated input id wins; repeated
        :class:`Document` ids are listed in :attr:`Plan.duplicates` (:meth:`run` warns once about them).
        ``continuing``: pre-split sources an earlier batch of the same run wrote, with the
        ``(node id, hash)`` of their nodes so far; more nodes of such a source *continue* it (nothing
        is deleted; its fingerprint is recorded over all its nodes).
        """
        plan = Plan()
        groups: Dict[str, Dict[str, BaseNode]] = {}
        for node in inputs:
            g = groups.setdefault(source_id(node), {})
            if g.pop(node.id_, None) is not None and isinstance(node, Document):
                plan.duplicates[node.id_] = plan.duplicates.get(node.id_, 1) + 1
            g[node.id_] = node
        recorded_hashes: Set[str] = set()
        if self.docstore is not None and self.strategy == DocstoreStrategy.DUPLICATES_ONLY:
            recorded_hashes = set(self.recorded_sources().values())
        for doc_id, members in groups.items():
            nodes = list(members.values())
            bad = prepare_source(doc_id, nodes)
            if bad is not None:
                plan.failed.append(bad)
                if not _holds_surrogates(doc_id):  # (an id no store can hold has nothing stored)
                    plan.delete.append(doc_id)
                continue
            if continuing is not None and doc_id in continuing and not isinstance(nodes[0], Document):
                known = {nid for nid, _ in continuing[doc_id]}
                parts = continuing[doc_id] + [(n.id_, view_hash(n)) for n in nodes if n.id_ not in known]
                plan.sources.append(SourcePlan(doc_id, nodes, self._fingerprint(parts), "continued"))
                continue
            fp = self.fingerprint(nodes)
            if self.docstore is None or not self.plan_sources:
                plan.sources.append(SourcePlan(doc_id, nodes, fp, "new"))
                continue
            if self.strategy == DocstoreStrategy.DUPLICATES_ONLY:
                if fp in recorded_hashes and not force:
                    plan.unchanged.append(SourcePlan(doc_id, nodes, fp, "unchanged"))
                    continue
                recorded_hashes.add(fp)
                plan.sources.append(SourcePlan(doc_id, nodes, fp, "new"))
                continue
            doc_hash = nodes[0].hash if len(nodes) == 1 and isinstance(nodes[0], Document) else None
            status = self.classify(doc_id, fp, doc_hash, force)
            if status in ("unchanged", "rehash"):
                plan.unchanged.append(SourcePlan(doc_id, nodes, fp, "unchanged"))
                if status == "rehash":
                    plan.rehash[doc_id] = fp
                continue
            plan.sources.append(SourcePlan(doc_id, nodes, fp, status))
            plan.delete.append(doc_id)  # also clears leftovers of an interrupted earlier run
        return plan

    def classify(self, doc_id: str, fingerprint: str, doc_hash: Optional[str] = None, force: bool = False) -> str:
        """What one source needs under ``UPSERTS`` / ``UPSERTS_AND_DELETE``, against the docstore:
        ``"new"`` (nothing recorded), ``"changed"`` (another or a pending fingerprint), ``"unchanged"``,
        or ``"rehash"`` (unchanged, recorded by an older ragloom as the bare ``doc_hash`` of a
        :class:`Document`: its fingerprint is to be rewritten).  ``force``: never unchanged.
        Needs a docstore."""
        stored = self.docstore.get_document_hash(doc_id)
        if not force and stored == fingerprint:
            return "unchanged"
        if not force and doc_hash is not None and stored == doc_hash:
            return "rehash"
        return "new" if stored is None else "changed"

    def absent(self, seen: Set[str], scope: Optional[Callable[[str], bool]] = None) -> List[str]:
        """Recorded sources not in ``seen`` (and inside ``scope``), to delete under
        ``UPSERTS_AND_DELETE``; ``[]`` for other strategies."""
        if self.docstore is None or self.strategy != DocstoreStrategy.UPSERTS_AND_DELETE:
            return []
        return sorted(d for d in self.recorded_sources() if d not in seen and (scope is None or scope(d)))

    # -- transform --------------------------------------------------------------------------
    def transform(
        self, plan: Plan, raise_on_error: bool = False, **run_kw: Any
    ) -> Tuple[List[BaseNode], List[DocumentFailure], EmbedCounts]:
        """Run the transformations over the plan's sources; a failing source is isolated.

        Runs the whole batch at once; when a transformation raises ``ValueError``, re-runs source
        by source to find the culprits (and writes the others).  Other exceptions propagate.
        """
        counts = EmbedCounts()
        kw = dict(run_kw)
        kw.setdefault("cache", self.cache)
        kw.setdefault("cache_collection", self.cache_collection)
        kw.setdefault("validate_nodes", self._validator())
        if not plan.sources:
            return [], [], counts
        try:
            out = run_transformations(plan.todo, self.transformations, embed_counts=counts, **kw)
            return out, [], counts
        except ValueError as exc:
            if len(plan.sources) == 1:
                src = plan.sources[0]
                return [], [_failure(src.doc_id, exc, src.inputs)], EmbedCounts()
        logger.info("a transformation rejected a document of this batch; retrying its %d documents one by one",
                    len(plan.sources))
        counts = EmbedCounts()
        nodes: List[BaseNode] = []
        failed: List[DocumentFailure] = []
        for src in plan.sources:
            one = EmbedCounts()
            try:
                out = run_transformations(src.inputs, self.transformations, embed_counts=one, **kw)
            except ValueError as exc:
                failed.append(_failure(src.doc_id, exc, src.inputs))
                continue
            nodes.extend(out)
            counts.embedded += one.embedded
            counts.reused += one.reused
        return nodes, failed, counts

    def _validator(self) -> Optional[Callable[[Sequence[BaseNode]], None]]:
        return self.vector_store.validate_nodes if self.vector_store is not None else None

    # -- write ----------------------------------------------------------------------------------
    def _shared_database(self) -> Any:
        """The one SQLite database both stores write to, or ``None`` (separate commits)."""
        ds_db = self.docstore.database if self.docstore is not None else None
        vs_db = self.vector_store.database if self.vector_store is not None else None
        if self.docstore is None:
            return vs_db
        if self.vector_store is None:
            return ds_db
        return ds_db if ds_db is not None and ds_db is vs_db else None

    def _transaction(self) -> Any:
        db = self._shared_database()
        return db.transaction() if db is not None else contextlib.nullcontext()

    def _delete(self, doc_ids: Sequence[str], vectors: bool = True, docstore: bool = True) -> None:
        for doc_id in doc_ids:
            if vectors and self.vector_store is not None:
                self.vector_store.delete(doc_id)
                self.vector_store.delete_nodes(node_ids=[doc_id])  # a pre-split node that is its own source
            if docstore and self.docstore is not None:
                self.docstore.delete_ref_doc(doc_id, raise_error=False)
                self.docstore.delete_document(doc_id, raise_error=False)

    def write(self, sources: Sequence[SourcePlan], nodes: List[BaseNode], delete: Sequence[str]) -> None:
        """Delete ``delete``, write ``nodes`` and record the fingerprints of ``sources``: one transaction.

        Raises:
            ValueError: nodes without an embedding for a vector store.
        """
        if self.vector_store is not None and any(n.embedding is None for n in nodes):
            missing = sum(1 for n in nodes if n.embedding is None)
            raise ValueError(
                f"{missing} nodes have no embedding; add an embed model to the transformations "
                "before writing to a vector store"
            )
        fingerprints = {s.doc_id: s.fingerprint for s in sources} if self.plan_sources else {}
        if not self.atomic:
            self.mark_pending(fingerprints)
        with self._transaction():
            self._delete(delete)
            ids: List[str] = []
            if self.vector_store is not None and nodes:
                ids = self.vector_store.add(nodes)
            self._record(nodes, ids, fingerprints)
            _emit("before_commit")
        _emit("after_commit")

    @property
    def atomic(self) -> bool:
        """Whether one transaction covers both stores (one shared SQLite database, or no vector store)."""
        return self._shared_database() is not None or self.vector_store is None

    def mark_pending(self, fingerprints: Dict[str, str]) -> None:
        """Record ``{source id: PENDING + fingerprint}`` before nodes reach a vector store outside
        the docstore's transaction: a crash before :meth:`record_written` then leaves sources the
        next run re-does (or deletes, when gone), never orphans."""
        self.set_fingerprints({k: PENDING + v for k, v in fingerprints.items()})

    def set_fingerprints(self, fingerprints: Dict[str, str]) -> None:
        """Record ``{source id: fingerprint}`` in the docstore, in one transaction (nothing without a
        docstore or fingerprints): a pending mark, or the new form of an unchanged source's record."""
        if self.docstore is not None and fingerprints:
            with self._transaction():
                self.docstore.set_document_hashes(fingerprints)

    def delete_vectors(self, doc_ids: Sequence[str]) -> None:
        """Delete the vector-store nodes of ``doc_ids`` (the docstore side is left to
        :meth:`record_written`); used before other processes write their new nodes."""
        self._delete(doc_ids, docstore=False)

    def record_written(self, sources: Sequence[SourcePlan], nodes: List[BaseNode], delete: Sequence[str]) -> None:
        """The docstore side of a write whose ``nodes`` other processes already put in the vector
        store (a distributed run, :mod:`ragloom.ingestion.ray_engine`): in one transaction, forget
        the docstore entries of ``delete``, add ``nodes`` and record the fingerprints of ``sources``."""
        fingerprints = {s.doc_id: s.fingerprint for s in sources}
        with self._transaction():
            self._delete(delete, vectors=False)
            self._record(nodes, [n.node_id for n in nodes], fingerprints)
            _emit("before_commit")
        _emit("after_commit")

    def _record(self, nodes: List[BaseNode], ids: List[str], fingerprints: Dict[str, str]) -> None:
        if self.docstore is not None:
            if nodes:
                self.docstore.add_documents(nodes, allow_update=True, store_text=self.store_doc_text)
            if fingerprints:
                self.docstore.set_document_hashes(fingerprints)
        if self.on_nodes_written is not None and nodes:
            self.on_nodes_written(nodes, ids or [n.node_id for n in nodes])

    # -- the whole run ----------------------------------------------------------------------------
    def run(
        self,
        batches: Iterable[Sequence[BaseNode]],
        *,
        force: bool = False,
        delete_absent: bool = False,
        delete_scope: Optional[Callable[[str], bool]] = None,
        raise_on_error: bool = False,
        progress_callback: Optional[ProgressCallback] = None,
        collect: Optional[List[BaseNode]] = None,
        plans: Optional[List[Plan]] = None,
        **run_kw: Any,
    ) -> IngestionStats:
        """Ingest a stream of input batches, one transaction per batch; returns :class:`IngestionStats`.

        Args:
            batches: an iterable of input lists (documents and/or pre-split nodes); a generator is
                consumed lazily, so memory is bounded by the batch size.
            force: rebuild every source whatever its fingerprint.
            delete_absent: after the last batch, delete the recorded sources absent from every batch
                (only with ``UPSERTS_AND_DELETE``) for which ``delete_scope(doc_id)`` is true
                (default: all).  ``delete_scope`` is called after the iterable is exhausted.
            raise_on_error: raise :class:`~ragloom.errors.IngestionError` listing the failed sources
                at the end (the good ones are written first) instead of only reporting them.
            progress_callback: see :data:`~ragloom.ingestion.transform.ProgressCallback`.
            collect: when given, the written nodes are appended to it.
            plans: when given, each batch's :class:`Plan` is appended to it.
            run_kw: ``show_progress``, ``num_workers``, ``pool``, ``compact_embeddings`` … for
                :func:`~ragloom.ingestion.transform.run_transformations` (``compact_embeddings``
                only for inputs the caller does not keep, as ``ragloom index`` reads them).
                ``num_workers > 1`` without a ``pool`` starts one
                :class:`~ragloom.ingestion.transform.SplitPool` for the whole run.

        Raises:
            IngestionError: with ``raise_on_error``, some sources failed.
            ValueError: ``num_workers < 1``; ``compact_embeddings`` with ``collect``, an ingestion
                cache or a docstore that keeps node text.
        """
        if run_kw.get("num_workers") is not None and run_kw["num_workers"] < 1:
            raise ValueError(f"num_workers must be >= 1, got {run_kw['num_workers']}")
        if run_kw.get("compact_embeddings") and (collect is not None or self.cache is not None
                                                 or run_kw.get("cache") is not None
                                                 or (self.docstore is not None and self.store_doc_text)):
            raise ValueError("compact_embeddings=True needs nodes nobody keeps: no collect, no ingestion cache, "
                             "and a docstore without node text")
        from ragloom.node_parser.interface import metadata_warnings_once

        with metadata_warnings_once():  # one metadata-budget warning per set of keys, retries included
            return self._run(batches, force, delete_absent, delete_scope, raise_on_error, progress_callback,
                             collect, plans, **run_kw)

    @staticmethod
    def _fail_rest_of_failed_sources(plan: Plan, failed_sources: Set[str]) -> None:
        """More pre-split nodes of a source that already failed in this run fail too (not written)."""
        if not failed_sources:
            return
        rest = [s for s in plan.sources if s.doc_id in failed_sources]
        if rest:
            plan.sources = [s for s in plan.sources if s.doc_id not in failed_sources]
            plan.failed.extend(
                DocumentFailure(s.doc_id, "an earlier part of this source document failed", ()) for s in rest
            )

    def _run(
        self,
        batches: Iterable[Sequence[BaseNode]],
        force: bool,
        delete_absent: bool,
        delete_scope: Optional[Callable[[str], bool]],
        raise_on_error: bool,
        progress_callback: Optional[ProgressCallback],
        collect: Optional[List[BaseNode]],
        plans: Optional[List[Plan]],
        **run_kw: Any,
    ) -> IngestionStats:
        run = _RunState()
        own_pool = None
        if run_kw.get("pool") is None and (run_kw.get("num_workers") or 1) > 1:
            # one set of worker processes for every batch of the run (started on first use)
            own_pool = run_kw["pool"] = SplitPool(int(run_kw["num_workers"]), min_chars=0)
        try:
            for batch in batches:
                inputs = list(batch)
                if not inputs:
                    continue
                plan = self.plan(inputs, force=force, continuing=run.continuing)
                self._fail_rest_of_failed_sources(plan, run.failed_sources)
                if plans is not None:
                    plans.append(plan)
                run.count_planned(plan)
                self.set_fingerprints(plan.rehash)
                if not plan.sources and not plan.failed:
                    continue
                nodes = self._run_batch(plan, run, progress_callback, run_kw)
                if collect is not None:
                    collect.extend(nodes)
                if progress_callback is not None:
                    progress_callback("committed", nodes)
        except BaseException:  # an error or Ctrl-C: the workers' queued parts are not waited for
            if own_pool is not None:
                own_pool.close(cancel=True)
            raise
        if own_pool is not None:
            own_pool.close()
        return self._finish(run, delete_absent, delete_scope, raise_on_error)

    def _run_batch(
        self, plan: Plan, run: "_RunState", progress_callback: Optional[ProgressCallback], run_kw: Dict[str, Any]
    ) -> List[BaseNode]:
        """Transform and write one planned batch; returns the nodes written."""
        stats = run.stats
        nodes, failed, counts = self.transform(plan, progress_callback=progress_callback, **run_kw)
        failed_ids = {f.doc_id for f in failed}
        stats.failed.extend(failed)
        ok = [s for s in plan.sources if s.doc_id not in failed_ids]
        nodes = _unique(nodes)
        delete = list(plan.delete)
        for f in [*plan.failed, *failed]:  # a source that fails loses the parts earlier batches wrote
            run.failed_sources.add(f.doc_id)
            if run.continuing.pop(f.doc_id, None) is not None and f.doc_id not in delete:
                delete.append(f.doc_id)
        if self.docstore is not None or self.vector_store is not None:
            # failed sources were deleted by the plan too: their old nodes must not outlive them
            self.write(ok, nodes, delete)
        for src in ok:
            if not isinstance(src.inputs[0], Document):
                known = run.continuing.setdefault(src.doc_id, [])
                have = {nid for nid, _ in known}
                known.extend((n.id_, view_hash(n)) for n in src.inputs if n.id_ not in have)
        stats.batches += 1
        stats.added += sum(1 for s in ok if s.status == "new")
        stats.updated += sum(1 for s in ok if s.status == "changed")
        stats.nodes_written += len(nodes)
        stats.nodes_embedded += counts.embedded
        stats.nodes_reused += counts.reused
        return nodes

    def _finish(
        self, run: "_RunState", delete_absent: bool, delete_scope: Optional[Callable[[str], bool]],
        raise_on_error: bool,
    ) -> IngestionStats:
        """Absent sources, final counts, the failure report."""
        stats = run.stats
        if delete_absent:
            gone = self.absent(run.seen, delete_scope)
            if gone:
                with self._transaction():
                    self._delete(gone)
                stats.deleted = len(gone)
        if self.docstore is not None:
            stats.documents_in_docstore = len(self.recorded_sources())
        run.warn_duplicates()
        first: Dict[str, DocumentFailure] = {}
        for f in stats.failed:
            first.setdefault(f.doc_id, f)
        stats.failed = list(first.values())
        if raise_on_error and stats.failed:
            raise IngestionError(stats.failed)
        for f in stats.failed:
            logger.warning("document %s not ingested: %s", f.doc_id, f.message)
        return stats


@dataclass
class _RunState:
    """What one :meth:`IngestionEngine.run` carries from batch to batch."""

    stats: IngestionStats = field(default_factory=IngestionStats)
    seen: Set[str] = field(default_factory=set)
    #: pre-split sources written by an earlier batch of this run: (node id, hash) of their nodes so far
    continuing: Dict[str, List[Tuple[Optional[str], str]]] = field(default_factory=dict)
    failed_sources: Set[str] = field(default_factory=set)
    #: ids shared by several input Documents of this run (in one batch or across batches): how many
    #: Documents had each (only repeated ids are kept here)
    duplicates: Dict[str, int] = field(default_factory=dict)

    def count_planned(self, plan: Plan) -> None:
        self._note_duplicates(plan)
        stats = self.stats
        stats.documents += (
            sum(1 for s in plan.sources if s.status != "continued")
            + len(plan.unchanged)
            + sum(1 for f in plan.failed if f.doc_id not in self.seen)
        )
        self.seen.update(s.doc_id for s in plan.sources)
        self.seen.update(s.doc_id for s in plan.unchanged)
        self.seen.update(f.doc_id for f in plan.failed)
        stats.unchanged += len(plan.unchanged)
        stats.failed.extend(plan.failed)

    def _note_duplicates(self, plan: Plan) -> None:
        """Record the Document ids of ``plan`` repeated in its batch or already seen in an earlier
        batch of this run (called before :attr:`seen` takes the batch's ids)."""
        documents = dict.fromkeys(plan.duplicates)  # (ordered: the warning names the first ones met)
        documents.update(dict.fromkeys(
            s.doc_id for s in (*plan.sources, *plan.unchanged) if isinstance(s.inputs[0], Document)))
        for doc_id in documents:
            here = plan.duplicates.get(doc_id, 1)
            if doc_id in self.seen:
                self.duplicates[doc_id] = self.duplicates.get(doc_id, 1) + here
            elif here > 1:
                self.duplicates[doc_id] = here

    def warn_duplicates(self, shown: int = 3) -> None:
        """One warning naming the first ``shown`` ids that several input Documents shared (LlamaIndex
        keeps the last one silently; so does ragloom, but says so)."""
        if not self.duplicates:
            return
        items = list(self.duplicates.items())
        named = ", ".join(f"{count} documents share the id {doc_id!r}" for doc_id, count in items[:shown])
        more = len(items) - shown
        rest = f" (and {more} more id{'s are' if more > 1 else ' is'} shared)" if more > 0 else ""
        logger.warning("%s%s; the last of each is kept", named, rest)


def _unique(nodes: List[BaseNode]) -> List[BaseNode]:
    """First node of each id (ids are deterministic: a repeated id is the same chunk)."""
    unique: Dict[str, BaseNode] = {}
    for node in nodes:
        unique.setdefault(node.id_, node)
    return list(unique.values())
