"""``KnowledgeGraphIndex``: knowledge triplets extracted from every chunk by an LLM (LlamaIndex's)."""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, Dict, List, Optional, Sequence, Tuple

import msgspec

from ragloom.data_structs import KG
from ragloom.graph_stores.types import entity_key
from ragloom.indices.base import BaseIndex
from ragloom.indices.knowledge_graph.utils import DEFAULT_MAX_OBJECT_LENGTH, parse_triplets, triplet_text
from ragloom.prompts.base import check_vars, to_prompt
from ragloom.prompts.graph_prompts import DEFAULT_KG_TRIPLET_EXTRACT_PROMPT
from ragloom.schema import BaseNode, MetadataMode

logger = logging.getLogger(__name__)

__all__ = [
    "KnowledgeGraphIndex", "GPTKnowledgeGraphIndex", "WORD_KEY_PREFIX", "entity_postings", "recorded_embed_model",
]

Triple = Tuple[str, str, str]

#: prefix of the postings that key a node by one word of an entity's name (the other postings are
#: whole entity keys, LlamaIndex's ``table``); ``entity_key`` never contains it (it is whitespace)
WORD_KEY_PREFIX = "\x1f"


def entity_postings(names: Sequence[str]) -> List[str]:
    """The posting keys of entity ``names``: each name's :func:`~ragloom.graph_stores.types.entity_key`,
    and :data:`WORD_KEY_PREFIX` + the :func:`~ragloom.keywords.keyword_key` of each of its words (and
    of the sub-words jieba finds in a long Chinese word), so a question naming part of an entity
    (``"Curie"``, ``"北京"``) still finds it."""
    from ragloom.keywords import expand_with_subtokens, keyword_key

    out: Dict[str, None] = {}
    for name in names:
        out.setdefault(entity_key(name))
        for word in expand_with_subtokens([name]):
            key = keyword_key(word)
            if key:
                out.setdefault(WORD_KEY_PREFIX + key)
    return [k for k in out if k and k != WORD_KEY_PREFIX]


def recorded_embed_model(embed_arg: Any, recorded: Dict[str, Any]) -> Any:
    """The embed model of a graph index: ``embed_arg`` (resolved, checked against ``recorded``, the
    identity the index recorded when it first embedded), else the recorded model
    (``Settings.embed_model`` when it is that model, else rebuilt from the record), else
    ``Settings.embed_model``.

    Raises:
        ValueError: ``embed_arg`` is another model than the recorded one; a recorded remote model
            (it needs ``embed_model=``).
    """
    from ragloom.embeddings import check_embed_model, embed_model_from_identity, resolve_embed_model
    from ragloom.settings import Settings

    if embed_arg is not None:
        model = resolve_embed_model(embed_arg)
        check_embed_model(recorded, model)
        return model
    if not recorded:
        return Settings.embed_model
    current = Settings._embed_model
    if current is not None:
        try:
            check_embed_model(recorded, current)
            return current
        except ValueError:
            pass
    return embed_model_from_identity(recorded)


@dataclass
class _Extracted:
    """What :meth:`KnowledgeGraphIndex._prepare_nodes` found for one node."""

    triplets: List[Triple] = field(default_factory=list)
    #: more entity names to key the node by (``add_node``)
    keywords: List[str] = field(default_factory=list)


class KnowledgeGraphIndex(BaseIndex[KG]):
    """Knowledge triplets ``(subject, relation, object)`` of every chunk, in a graph store (LlamaIndex's
    ``KnowledgeGraphIndex``).

    Each node's text (the LLM's view) goes through ``kg_triple_extract_template`` (or
    ``kg_triplet_extract_fn``); the answer's triplets (:func:`~ragloom.indices.knowledge_graph.utils.parse_triplets`,
    at most ``max_triplets_per_chunk``) go to ``storage_context.graph_store`` — a
    :class:`~ragloom.graph_stores.SimpleGraphStore` in the same SQLite database — and the node is keyed
    by the subject and object of each (the struct's ``table``).  Queries: :meth:`as_retriever`.

    Args:
        nodes, objects, storage_context, transformations, callback_manager, show_progress: see
            :class:`~ragloom.indices.base.BaseIndex`.
        llm: the model that extracts triplets (default ``Settings.llm``).
        embed_model: embeds triplets (``include_embeddings``) and queries; default: the model a
            reopened index recorded, else ``Settings.embed_model``.
        kg_triple_extract_template: prompt with ``text`` (and optionally ``max_knowledge_triplets``);
            default :data:`~ragloom.prompts.graph_prompts.DEFAULT_KG_TRIPLET_EXTRACT_PROMPT`.
        max_triplets_per_chunk: triplets kept per node, >= 1; default: recorded, else 10.
        include_embeddings: embed each triplet's text (``"(subject, relation, object)"``) for the
            ``"embedding"`` / ``"hybrid"`` retriever modes; default: recorded, else ``False``.
        max_object_length: longest triplet part kept, in UTF-8 bytes (>= 1; default 128).
        kg_triplet_extract_fn: ``fn(text) -> [(subject, relation, object), ...]`` used instead of the
            LLM (no model needed).

    **Transactions.**  The LLM runs in the ingestion engine's transform step, outside any write
    transaction; a node's triplets, its keys and the node itself commit together.  Triplet vectors
    are computed after the nodes are written (derived data: an interrupted run leaves triplets without
    vectors, which the next write fills in).

    **Incremental.**  An unchanged document costs nothing on ``refresh_ref_docs``.  A changed one has
    its old nodes' triplets removed (each triplet records the nodes that support it: one another node
    also states stays) and its new nodes extracted — except the chunks whose text and metadata did not
    change, whose triplets are kept without asking the LLM again.  A different template,
    ``max_triplets_per_chunk``, ``max_object_length`` or ``kg_triplet_extract_fn`` re-extracts every
    document on the next refresh.  The LLM's identity is not part of that: a reopened index used with
    another model keeps the triplets it has.  ``delete_ref_doc`` removes a document's triplets
    (LlamaIndex raises ``NotImplementedError``).

    Differences from LlamaIndex: names keep the model's spelling and are matched case-insensitively
    (LlamaIndex capitalises them); triplet vectors live in the graph store (LlamaIndex: the struct's
    ``embedding_dict``); nodes are also keyed by the words of their entities' names, so a question
    naming part of an entity finds it.  Not provided: ``get_networkx_graph``, ``use_async``.

    Raises:
        ValueError: a bad ``max_triplets_per_chunk`` / ``max_object_length``, a template without
            ``text``, a ``kg_triplet_extract_fn`` that is not callable, or an unknown argument.
    """

    index_struct_cls: ClassVar[Any] = KG
    retriever_accepts_llm: ClassVar[bool] = True

    def __init__(
        self,
        nodes: Optional[Sequence[BaseNode]] = None,
        objects: Optional[Sequence[Any]] = None,
        index_struct: Optional[KG] = None,
        llm: Any = None,
        embed_model: Any = None,
        storage_context: Any = None,
        kg_triple_extract_template: Any = None,
        max_triplets_per_chunk: Optional[int] = None,
        include_embeddings: Optional[bool] = None,
        show_progress: bool = False,
        max_object_length: int = DEFAULT_MAX_OBJECT_LENGTH,
        kg_triplet_extract_fn: Optional[Callable[[str], List[Triple]]] = None,
        **kwargs: Any,
    ) -> None:
        for name, value in (("max_triplets_per_chunk", max_triplets_per_chunk),
                            ("max_object_length", max_object_length)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if include_embeddings is not None and not isinstance(include_embeddings, bool):
            raise ValueError(f"include_embeddings must be a bool, got {include_embeddings!r}")
        if kg_triplet_extract_fn is not None and not callable(kg_triplet_extract_fn):
            raise ValueError("kg_triplet_extract_fn must be a callable text -> [(subject, relation, object)]")
        self.kg_triple_extract_template = to_prompt(kg_triple_extract_template or DEFAULT_KG_TRIPLET_EXTRACT_PROMPT,
                                                    "kg_triple_extract_template")
        check_vars(self.kg_triple_extract_template, ["text"], "kg_triple_extract_template")
        self._max_triplets_arg = max_triplets_per_chunk
        self._include_embeddings_arg = include_embeddings
        self._max_object_length = max_object_length
        self._kg_triplet_extract_fn = kg_triplet_extract_fn
        #: node id -> what add_node / upsert_triplet_and_node give for it (no extraction)
        self._manual: Dict[str, _Extracted] = {}
        super().__init__(nodes=nodes, objects=objects, index_struct=index_struct, llm=llm, embed_model=embed_model,
                         storage_context=storage_context, show_progress=show_progress, **kwargs)
        struct = self._index_struct
        changed = False
        if max_triplets_per_chunk is not None and struct.max_triplets_per_chunk != max_triplets_per_chunk:
            struct.max_triplets_per_chunk, changed = max_triplets_per_chunk, True
        if include_embeddings is not None and struct.include_embeddings != include_embeddings:
            struct.include_embeddings, changed = include_embeddings, True
        if changed:
            self._save_index_struct()

    def _build_index_struct(self) -> KG:
        return KG(max_triplets_per_chunk=self._max_triplets_arg if self._max_triplets_arg is not None else 10,
                  include_embeddings=bool(self._include_embeddings_arg))

    # -- configuration ----------------------------------------------------------------------------
    @property
    def graph_store(self) -> Any:
        """The storage context's triplet store."""
        return self._storage_context.graph_store

    @property
    def max_triplets_per_chunk(self) -> int:
        return self._index_struct.max_triplets_per_chunk

    @property
    def include_embeddings(self) -> bool:
        return self._index_struct.include_embeddings

    def _index_config(self) -> Dict[str, Any]:
        fn = self._kg_triplet_extract_fn
        return {
            "kg_triple_extract_template": None if fn is not None else self.kg_triple_extract_template.get_template(),
            "kg_triplet_extract_fn": None if fn is None else f"{getattr(fn, '__module__', '')}."
                                                            f"{getattr(fn, '__qualname__', type(fn).__name__)}",
            "max_triplets_per_chunk": self.max_triplets_per_chunk,
            "max_object_length": self._max_object_length,
        }

    def _config_digest(self) -> str:
        return hashlib.sha256(json.dumps(self._index_config(), sort_keys=True).encode("utf-8")).hexdigest()

    @property
    def embed_model(self) -> Any:
        """The embed model: see :func:`recorded_embed_model`.

        Raises:
            ValueError: ``embed_model=`` is not the model the triplets were embedded with.
        """
        if self._embed_model is None:
            self._embed_model = recorded_embed_model(self._embed_arg, dict(self._index_struct.embed_model or {}))
        return self._embed_model

    def _vector_space(self) -> str:
        from ragloom.embeddings.cache import namespace_of

        return namespace_of(self.embed_model.cache_identity())

    # -- extraction -----------------------------------------------------------------------------------
    def _extract_triplets(self, text: str) -> List[Triple]:
        """The triplets of ``text``: ``kg_triplet_extract_fn``, else one LLM call (prompt fitted to the
        model's window), at most ``max_triplets_per_chunk``."""
        if self._kg_triplet_extract_fn is not None:
            found = [tuple(str(p).strip() for p in t) for t in self._kg_triplet_extract_fn(text)]
            good = [t for t in found if len(t) == 3 and all(t)]
            return [(t[0], t[1], t[2]) for t in good][: self.max_triplets_per_chunk]
        return self._llm_extract_triplets(text)

    def _check_build_ready(self) -> None:
        """No LLM configured (and no ``kg_triplet_extract_fn``) stops the write before anything is
        stored, instead of failing every document."""
        if self._kg_triplet_extract_fn is None:
            self.llm  # noqa: B018  (raises ValueError when no LLM is configured)

    def _llm_extract_triplets(self, text: str) -> List[Triple]:
        from ragloom.indices.tree.utils import fill_prompt, prompt_helper_for

        llm = self.llm
        prompt = self.kg_triple_extract_template
        if "max_knowledge_triplets" in prompt.template_vars:
            prompt = prompt.partial_format(max_knowledge_triplets=self.max_triplets_per_chunk)
        filled = fill_prompt(prompt_helper_for(llm), llm, prompt, "text", [text], lambda texts: texts[0])
        response = str(llm.predict(filled))
        return parse_triplets(response, max_length=self._max_object_length, max_triplets=self.max_triplets_per_chunk)

    def _reusable(self, nodes: Sequence[BaseNode]) -> set:
        """Ids of ``nodes`` this index already extracted, with this configuration, from the same text
        and metadata (a changed document's unchanged chunks): their triplets are kept."""
        if self._index_struct.extraction_digest != self._config_digest():
            return set()
        held = set(self._node_ids())
        return {n.node_id for n in nodes if n.node_id in held and self.docstore.get_document_hash(n.node_id) == n.hash}

    def _prepare_nodes(self, nodes: List[BaseNode]) -> Dict[str, Any]:
        out: Dict[str, Any] = {}
        reuse = self._reusable(nodes)
        for node in nodes:
            manual = self._manual.pop(node.node_id, None)
            if manual is not None:
                out[node.node_id] = manual
            elif node.node_id in reuse:
                out[node.node_id] = _Extracted(triplets=self.graph_store.triplets_of_source(node.node_id))
            else:
                triplets = self._extract_triplets(node.get_content(metadata_mode=MetadataMode.LLM))
                logger.debug("node %s: triplets %s", node.node_id, triplets)
                out[node.node_id] = _Extracted(triplets=triplets)
        return out

    def _add_nodes_to_index(self, nodes: Sequence[BaseNode], prepared: Dict[str, Any]) -> None:
        postings: List[Tuple[str, str]] = []
        for node in nodes:
            found = prepared.get(node.node_id)
            if found is None:
                continue
            self.graph_store.upsert_triplets(found.triplets, source_id=node.node_id)
            names = [name for s, _, o in found.triplets for name in (s, o)] + list(found.keywords)
            postings += [(key, node.node_id) for key in entity_postings(names)]
        if postings:
            self._storage_context.index_store.add_postings(self.index_id, postings)

    def _delete_nodes_from_index(self, node_ids: Sequence[str]) -> None:
        self.graph_store.delete_sources(list(node_ids))

    # -- after each write: vectors, and the configuration the triplets were made with --------------------
    def _after_write(self) -> None:
        struct = self._index_struct
        digest = self._config_digest()
        if struct.extraction_digest != digest:
            struct.extraction_digest = digest  # what _reusable compares with
            self._save_index_struct()
        if self.include_embeddings:
            self._embed_missing()

    def _embed_missing(self, extra: Sequence[Triple] = ()) -> None:
        """Embed the triplets of the graph that have no vector of this index's embed model (and
        ``extra``), then store the vectors (one transaction)."""
        space = self._vector_space()
        todo = list(dict.fromkeys([*extra, *self.graph_store.missing_embeddings(space)]))
        if not todo:
            return
        vectors = self.embed_model.get_text_embedding_batch([triplet_text(t) for t in todo],
                                                           show_progress=self._show_progress)
        with self._storage_context.transaction():
            self.graph_store.set_embeddings(space, list(zip(todo, vectors, strict=True)))
            if not self._index_struct.embed_model:
                self._index_struct.embed_model = dict(self.embed_model.identity())
                self._save_index_struct()

    def insert_nodes(self, nodes: Sequence[BaseNode], show_progress: bool = False, **insert_kwargs: Any) -> None:
        """Add ``nodes`` as given, extracting their triplets (see the class docstring)."""
        try:
            super().insert_nodes(nodes, show_progress=show_progress, **insert_kwargs)
        finally:
            self._manual.clear()

    # -- LlamaIndex's manual API --------------------------------------------------------------------------
    def upsert_triplet(self, triplet: Triple, include_embeddings: bool = False) -> None:
        """Add ``triplet`` to the graph by hand (it stays until ``graph_store.delete``); with
        ``include_embeddings``, embed it now.

        Raises:
            ValueError: a part of ``triplet`` is empty.
        """
        subj, rel, obj = triplet
        self.graph_store.upsert_triplet(subj, rel, obj)
        if include_embeddings:
            self._embed_missing([(subj.strip(), rel.strip(), obj.strip())])

    def add_node(self, keywords: List[str], node: BaseNode) -> None:
        """Add ``node`` (written through the ingestion engine, no extraction) keyed by the entity names
        ``keywords``."""
        self._manual[node.node_id] = _Extracted(keywords=list(keywords))
        self.insert_nodes([node])

    def upsert_triplet_and_node(self, triplet: Triple, node: BaseNode, include_embeddings: bool = False) -> None:
        """Add ``node`` (no extraction) with ``triplet`` as its one triplet, keyed by its subject and
        object; with ``include_embeddings``, embed the triplet now.  Deleting the node later removes the
        triplet unless something else supports it."""
        subj, rel, obj = (str(p).strip() for p in triplet)
        self._manual[node.node_id] = _Extracted(triplets=[(subj, rel, obj)])
        self.insert_nodes([node])
        if include_embeddings:
            self._embed_missing([(subj, rel, obj)])

    # -- reading ----------------------------------------------------------------------------------------------
    def _materialize_struct(self) -> KG:
        postings = self._storage_context.index_store.get_all_postings(self.index_id)
        table = {k: set(v) for k, v in postings.items() if not k.startswith(WORD_KEY_PREFIX)}
        return msgspec.structs.replace(self._index_struct, table=table)

    def as_retriever(self, retriever_mode: Any = None, embed_model: Any = None, **kwargs: Any) -> Any:
        """A :class:`~ragloom.indices.knowledge_graph.retrievers.KGTableRetriever`.

        Args:
            retriever_mode: ``"keyword"``, ``"embedding"`` or ``"hybrid"``; default ``"hybrid"`` when
                the index embeds triplets, else ``"keyword"`` (as LlamaIndex).
            embed_model: for the query (default: the index's).
            **kwargs: the retriever's arguments (``include_text``, ``graph_store_query_depth``,
                ``keyword_mode``, ``similarity_top_k`` …).

        Raises:
            ValueError: bad retriever arguments.
        """
        from ragloom.indices.knowledge_graph.retrievers import KGRetrieverMode, KGTableRetriever

        if retriever_mode is None:
            retriever_mode = KGRetrieverMode.HYBRID if self.include_embeddings else KGRetrieverMode.KEYWORD
        return KGTableRetriever(self, embed_model=embed_model, retriever_mode=retriever_mode, **kwargs)


#: LlamaIndex's older name.
GPTKnowledgeGraphIndex = KnowledgeGraphIndex
