"""``TreeIndex``: a bottom-up tree of LLM summaries over a document's chunks (LlamaIndex's)."""

from __future__ import annotations

import logging
from enum import Enum
from typing import Any, ClassVar, Dict, List, Optional, Sequence

import msgspec

from ragloom.data_structs import IndexGraph
from ragloom.indices.base import BaseIndex
from ragloom.indices.tree.shape import TreeShape
from ragloom.prompts.base import check_vars, to_prompt
from ragloom.prompts.tree_prompts import DEFAULT_INSERT_PROMPT, DEFAULT_SUMMARY_PROMPT
from ragloom.indices.node_vectors import NodeVectorCache
from ragloom.schema import BaseNode, MetadataMode, NodeRelationship, RelatedNodeInfo, TextNode

logger = logging.getLogger(__name__)

__all__ = ["TreeIndex", "GPTTreeIndex", "TreeRetrieverMode", "REQUIRE_TREE_MODES", "DEFAULT_NUM_CHILDREN"]

#: LlamaIndex's default number of children per tree node
DEFAULT_NUM_CHILDREN = 10


class TreeRetrieverMode(str, Enum):
    """Retriever modes of a :class:`TreeIndex` (LlamaIndex's names).

    * ``select_leaf``: from the roots down, the LLM picks the child that leads to the answer
      (:class:`~ragloom.indices.tree.select_leaf_retriever.TreeSelectLeafRetriever`);
    * ``select_leaf_embedding``: the same, picking by embedding similarity;
    * ``all_leaf``: every leaf, in tree order;
    * ``root``: the root summaries.
    """

    SELECT_LEAF = "select_leaf"
    SELECT_LEAF_EMBEDDING = "select_leaf_embedding"
    ALL_LEAF = "all_leaf"
    ROOT = "root"


#: modes that need the tree (``build_tree=True``)
REQUIRE_TREE_MODES = {TreeRetrieverMode.SELECT_LEAF, TreeRetrieverMode.SELECT_LEAF_EMBEDDING, TreeRetrieverMode.ROOT}


class TreeIndex(BaseIndex[IndexGraph]):
    """A tree of summaries over the index's nodes (LlamaIndex's ``TreeIndex``).

    The nodes (chunks) are the leaves.  Built bottom up: every ``num_children`` consecutive nodes get
    a parent whose text is the LLM's summary of theirs (``summary_template``), and so on up until at
    most ``num_children`` nodes are left, the roots.  Later documents are inserted as LlamaIndex's
    ``TreeIndexInserter`` does (the LLM picks the branch, ``insert_prompt``; an over-full node is split
    in two).  See :mod:`ragloom.indices.tree.builder`.  Queries: :meth:`as_retriever`.

    Args:
        nodes, objects, storage_context, transformations, callback_manager, show_progress: see
            :class:`~ragloom.indices.base.BaseIndex`.
        llm: the model that writes summaries and picks branches (default ``Settings.llm``; needed only
            when there is something to summarise or insert).
        summary_template: prompt with ``context_str`` (default
            :data:`~ragloom.prompts.tree_prompts.DEFAULT_SUMMARY_PROMPT`).
        insert_prompt: prompt with ``num_chunks``, ``context_list``, ``new_chunk_text`` (default
            :data:`~ragloom.prompts.tree_prompts.DEFAULT_INSERT_PROMPT`).
        num_children: most children per node, >= 2; default: what a reopened index recorded, else 10.
            A different value given to a reopened index applies to the nodes inserted from then on.
        build_tree: ``False`` keeps the nodes without summaries (only ``all_leaf`` retrieval works);
            default: recorded, else ``True``.
        use_async: accepted for LlamaIndex compatibility; summaries are requested one at a time.

    **Storage.**  The leaves are docstore nodes written by the ingestion engine, like every index's.
    The summaries are derived data of this index: they live in its struct
    (:class:`~ragloom.data_structs.IndexGraph`, in the same SQLite database), are written after the
    leaves' transaction in one transaction of their own, and survive ``persist()`` /
    ``load_index_from_storage``.  Summary ids hash their children's ids
    (:mod:`~ragloom.indices.tree.shape`), so an interrupted update is finished by the next write.

    **Incremental.**  A document whose content and transformations did not change costs nothing on
    ``refresh_ref_docs`` / a new ``insert``: no LLM call.  A *changed* document: its chunks that no
    longer exist leave the tree (summaries left without children go), its new chunks are inserted as
    by ``insert``, chunks it still has (same text, same id) keep their place, and every summary above
    a leaf that left or arrived is re-summarised once; the rest of the tree keeps its summaries.
    ``delete_ref_doc`` works the same way (LlamaIndex raises ``NotImplementedError``).  An index whose
    tree was emptied (every document changed) is rebuilt bottom up.

    Differences from LlamaIndex: summaries are stored in the index struct, not as docstore nodes
    (they are not source documents, and so never show in ``ref_doc_info`` or document listings);
    ancestors are re-summarised once per write call, not after every inserted leaf; prompts are fitted
    to the LLM's window max-min fairly (:mod:`ragloom.indices.tree.utils`); ``all_leaf`` returns the
    leaves only (LlamaIndex returns every node, summaries included).

    Raises:
        ValueError: ``num_children`` < 2, a template without its variables, or an argument this index
            does not know.
    """

    index_struct_cls: ClassVar[Any] = IndexGraph
    retriever_accepts_llm: ClassVar[bool] = True

    def __init__(
        self,
        nodes: Optional[Sequence[BaseNode]] = None,
        objects: Optional[Sequence[Any]] = None,
        index_struct: Optional[IndexGraph] = None,
        llm: Any = None,
        summary_template: Any = None,
        insert_prompt: Any = None,
        num_children: Optional[int] = None,
        build_tree: Optional[bool] = None,
        use_async: bool = False,
        show_progress: bool = False,
        **kwargs: Any,
    ) -> None:
        if num_children is not None and (isinstance(num_children, bool) or not isinstance(num_children, int)
                                         or num_children < 2):
            raise ValueError(f"num_children must be an int >= 2, got {num_children!r}")
        if build_tree is not None and not isinstance(build_tree, bool):
            raise ValueError(f"build_tree must be a bool, got {build_tree!r}")
        self.summary_template = to_prompt(summary_template or DEFAULT_SUMMARY_PROMPT, "summary_template")
        check_vars(self.summary_template, ["context_str"], "summary_template")
        self.insert_prompt = to_prompt(insert_prompt or DEFAULT_INSERT_PROMPT, "insert_prompt")
        check_vars(self.insert_prompt, ["num_chunks", "context_list", "new_chunk_text"], "insert_prompt")
        self._num_children_arg = num_children
        self._build_tree_arg = build_tree
        self._use_async = use_async
        #: query-time node vectors, by (embed model namespace, node id): see TreeSelectLeafEmbeddingRetriever
        self._node_embeddings = NodeVectorCache()  # for the embedding retriever
        super().__init__(nodes=nodes, objects=objects, index_struct=index_struct, llm=llm,
                         show_progress=show_progress, **kwargs)
        struct = self._index_struct
        if (num_children is not None and struct.num_children != num_children) or \
                (build_tree is not None and struct.build_tree != build_tree):
            struct.num_children = num_children if num_children is not None else struct.num_children
            struct.build_tree = build_tree if build_tree is not None else struct.build_tree
            self._save_index_struct()

    def _build_index_struct(self) -> IndexGraph:
        return IndexGraph(
            num_children=self._num_children_arg if self._num_children_arg is not None else DEFAULT_NUM_CHILDREN,
            build_tree=self._build_tree_arg if self._build_tree_arg is not None else True,
        )

    # -- configuration ---------------------------------------------------------------------------
    @property
    def num_children(self) -> int:
        return self._index_struct.num_children

    @property
    def build_tree(self) -> bool:
        return self._index_struct.build_tree

    # -- the tree -------------------------------------------------------------------------------
    def _shape(self) -> TreeShape:
        struct = self._index_struct
        return TreeShape(
            roots=list(struct.root_ids),
            children={k: list(v) for k, v in struct.node_id_to_children_ids.items()},
            texts=dict(struct.summaries),
        )

    def _store_shape(self, shape: TreeShape) -> None:
        """Keep the part of ``shape`` reachable from its roots in the struct (not saved here)."""
        reachable = [n for n in shape.walk() if shape.is_summary(n)]
        struct = self._index_struct
        struct.root_ids = list(shape.roots)
        struct.node_id_to_children_ids = {s: list(shape.children[s]) for s in reachable}
        struct.summaries = {s: shape.texts.get(s, "") for s in reachable}

    def _leaf_texts(self, ids: List[str]) -> Dict[str, str]:
        return {n.node_id: n.get_content(metadata_mode=MetadataMode.LLM) for n in self._get_nodes(ids)}

    def _delete_nodes_from_index(self, node_ids: Sequence[str]) -> None:
        """Nothing here: :meth:`_settle` removes the leaves the index no longer holds after the write,
        so a chunk that a changed document still has (same id) keeps its place in the tree."""

    def _settle(self) -> None:
        """Place the nodes not yet in the tree and re-summarise stale summaries, then save the struct
        (one transaction).  LLM calls happen here, outside any write transaction; what was done before
        an error is kept (see the class docstring)."""
        struct = self._index_struct
        shape = self._shape()
        if not struct.build_tree:
            if shape.roots or shape.children:
                self._store_shape(TreeShape())
                self._save_struct_now()
            return
        ledger = self._node_ids()
        members = set(ledger)
        gone = [leaf for leaf in shape.leaves() if leaf not in members]
        if gone:
            shape.remove(gone)
        placed = set(shape.walk())
        pending = [n for n in ledger if n not in placed]
        if not gone and not pending and not shape.stale():
            return
        try:
            if pending or shape.stale():
                self._grow(shape, pending)
        finally:
            self._store_shape(shape)
            self._save_struct_now()

    def _grow(self, shape: TreeShape, pending: List[str]) -> None:
        from ragloom.indices.tree.builder import TreeBuilder

        builder = TreeBuilder(self.llm, self.num_children, self.summary_template, self.insert_prompt,
                              self._leaf_texts)
        if shape.empty:
            builder.build(shape, pending)
        else:
            for leaf in pending:
                builder.insert(shape, leaf)
        builder.refresh(shape)
        logger.info("tree index %s: %d LLM calls to place %d nodes", self.index_id, builder.llm_calls, len(pending))

    def _save_struct_now(self) -> None:
        with self._storage_context.transaction():
            self._save_index_struct()

    # -- writes: settle the tree after each -----------------------------------------------------------
    def _after_write(self) -> None:
        self._settle()  # also after a failed batch: the documents that were written still join the tree

    def delete_ref_doc(self, ref_doc_id: str, delete_from_docstore: bool = False, **delete_kwargs: Any) -> None:
        """Remove document ``ref_doc_id``'s nodes from the tree and re-summarise what was above them."""
        super().delete_ref_doc(ref_doc_id, delete_from_docstore=delete_from_docstore, **delete_kwargs)
        self._settle()

    def delete_nodes(self, node_ids: List[str], delete_from_docstore: bool = False, **delete_kwargs: Any) -> None:
        """Remove ``node_ids`` from the tree and re-summarise what was above them."""
        super().delete_nodes(node_ids, delete_from_docstore=delete_from_docstore, **delete_kwargs)
        self._settle()

    # -- reading -------------------------------------------------------------------------------------
    def _materialize_struct(self) -> IndexGraph:
        shape = self._shape()
        leaves = shape.leaves()
        placed = set(leaves)
        leaves += [n for n in self._node_ids() if n not in placed]
        depths = shape.depths()
        summaries = sorted((n for n in shape.walk() if shape.is_summary(n)), key=lambda n: -depths[n])
        all_nodes = dict(enumerate(leaves + summaries))
        position = {node: i for i, node in all_nodes.items()}
        roots = {position[r]: r for r in shape.roots}
        return msgspec.structs.replace(self._index_struct, all_nodes=all_nodes, root_nodes=roots)

    def _tree_nodes(self, ids: Sequence[str]) -> List[BaseNode]:
        """Nodes for ``ids``, in order: leaves from the docstore, summaries as ``TextNode`` s (their
        CHILD relationships name their children); ids no longer anywhere are skipped."""
        struct = self._index_struct
        leaves = {n.node_id: n for n in self._get_nodes([i for i in ids if i not in struct.summaries])}
        out: List[BaseNode] = []
        for node_id in ids:
            if node_id in struct.summaries:
                kids = struct.node_id_to_children_ids.get(node_id, [])
                out.append(TextNode(id_=node_id, text=struct.summaries[node_id], relationships={
                    NodeRelationship.CHILD: [RelatedNodeInfo(node_id=k) for k in kids]}))
            elif node_id in leaves:
                out.append(leaves[node_id])
        return out

    def _children_of(self, node_id: Optional[str]) -> List[str]:
        """Child ids of ``node_id`` (``None``: the roots)."""
        struct = self._index_struct
        if node_id is None:
            return list(struct.root_ids)
        return list(struct.node_id_to_children_ids.get(node_id, []))

    def _leaf_list(self) -> List[BaseNode]:
        """Every leaf, in tree order (then any not yet placed)."""
        leaves = self._shape().leaves() if self.build_tree else []
        placed = set(leaves)
        leaves += [n for n in self._node_ids() if n not in placed]
        return self._get_nodes(leaves)

    def as_retriever(self, retriever_mode: Any = TreeRetrieverMode.SELECT_LEAF, embed_model: Any = None,
                     **kwargs: Any) -> Any:
        """A retriever of this index.

        Args:
            retriever_mode: ``"select_leaf"`` (default; ``child_branch_factor``, ``query_template``,
                ``query_template_multiple``, ``llm``), ``"select_leaf_embedding"``
                (``child_branch_factor``, ``embed_model``: default the index's, else
                ``Settings.embed_model``), ``"all_leaf"`` or ``"root"``.
            **kwargs: the retriever's arguments.

        Raises:
            ValueError: unknown ``retriever_mode`` (lists the allowed ones); a mode that needs the tree
                on an index built with ``build_tree=False``; bad retriever arguments.
        """
        from ragloom.indices.tree.all_leaf_retriever import TreeAllLeafRetriever
        from ragloom.indices.tree.select_leaf_embedding_retriever import TreeSelectLeafEmbeddingRetriever
        from ragloom.indices.tree.select_leaf_retriever import TreeSelectLeafRetriever
        from ragloom.indices.tree.tree_root_retriever import TreeRootRetriever

        try:
            mode = TreeRetrieverMode(retriever_mode)
        except ValueError:
            allowed = ", ".join(m.value for m in TreeRetrieverMode)
            raise ValueError(f"retriever_mode must be one of {allowed}, got {retriever_mode!r}") from None
        if mode in REQUIRE_TREE_MODES and not self.build_tree:
            raise ValueError(f"retriever_mode={mode.value!r} needs the tree, but this index was built with "
                             "build_tree=False; use retriever_mode='all_leaf'")
        if mode == TreeRetrieverMode.SELECT_LEAF:
            return TreeSelectLeafRetriever(self, **kwargs)
        if mode == TreeRetrieverMode.SELECT_LEAF_EMBEDDING:
            return TreeSelectLeafEmbeddingRetriever(self, embed_model=embed_model, **kwargs)
        kwargs.pop("llm", None)  # as_query_engine passes its LLM on; these modes call none
        if mode == TreeRetrieverMode.ROOT:
            return TreeRootRetriever(self, **kwargs)
        return TreeAllLeafRetriever(self, **kwargs)


#: LlamaIndex's older name.
GPTTreeIndex = TreeIndex
