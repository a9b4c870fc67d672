"""``SimpleLLMPathExtractor``: knowledge triplets of a chunk, by an LLM (LlamaIndex's)."""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Sequence, Tuple

from ragloom.graph_stores.types import KG_NODES_KEY, KG_RELATIONS_KEY, EntityNode, Relation
from ragloom.indices.property_graph.utils import default_parse_triplets_fn
from ragloom.prompts.base import check_vars, to_prompt
from ragloom.prompts.graph_prompts import DEFAULT_KG_TRIPLET_EXTRACT_PROMPT
from ragloom.schema import BaseNode, MetadataMode, TransformComponent

__all__ = ["SimpleLLMPathExtractor"]


class SimpleLLMPathExtractor(TransformComponent):
    """Asks the LLM for ``(subject, relation, object)`` triplets of each node and records them as
    :class:`~ragloom.graph_stores.types.EntityNode` / :class:`~ragloom.graph_stores.types.Relation`
    lists in the node's metadata under ``"nodes"`` and ``"relations"`` (LlamaIndex's protocol of
    graph extractors; each entity and relation carries the node's metadata as its properties).
    :class:`~ragloom.indices.property_graph.PropertyGraphIndex` runs it on a copy of each node, so the
    stored nodes keep their metadata clean.

    Args:
        llm: the model (default ``Settings.llm``, resolved when first needed).
        extract_prompt: prompt (or ``str``) with ``text`` and optionally ``max_knowledge_triplets``;
            default :data:`~ragloom.prompts.graph_prompts.DEFAULT_KG_TRIPLET_EXTRACT_PROMPT`.  Fitted to
            the LLM's window (the text is cut when it does not fit).
        parse_fn: ``fn(answer) -> [(subject, relation, object)]`` (default
            :func:`~ragloom.indices.property_graph.utils.default_parse_triplets_fn`).
        max_paths_per_chunk: triplets kept per node, >= 1 (default 10).
        num_workers, show_progress: accepted for LlamaIndex compatibility (nodes are done one at a
            time).

    Raises:
        ValueError: ``max_paths_per_chunk`` < 1, a prompt without ``text``, a ``parse_fn`` that is not
            callable.
    """

    llm: Any
    extract_prompt: Any
    parse_fn: Callable[[str], List[Tuple[str, str, str]]]
    max_paths_per_chunk: int
    num_workers: int
    show_progress: bool

    def __init__(self, llm: Any = None, extract_prompt: Any = None,
                 parse_fn: Callable[[str], List[Tuple[str, str, str]]] = default_parse_triplets_fn,
                 max_paths_per_chunk: int = 10, num_workers: int = 4, show_progress: bool = False) -> None:
        if isinstance(max_paths_per_chunk, bool) or not isinstance(max_paths_per_chunk, int) or max_paths_per_chunk < 1:
            raise ValueError(f"max_paths_per_chunk must be an int >= 1, got {max_paths_per_chunk!r}")
        if not callable(parse_fn):
            raise ValueError("parse_fn must be a callable answer -> [(subject, relation, object)]")
        prompt = to_prompt(extract_prompt or DEFAULT_KG_TRIPLET_EXTRACT_PROMPT, "extract_prompt")
        check_vars(prompt, ["text"], "extract_prompt")
        super().__init__(llm=llm, extract_prompt=prompt, parse_fn=parse_fn, max_paths_per_chunk=max_paths_per_chunk,
                         num_workers=num_workers, show_progress=show_progress)

    @classmethod
    def class_name(cls) -> str:
        return "SimpleLLMPathExtractor"

    def to_config(self) -> Dict[str, Any]:
        """Class, prompt text, parser and ``max_paths_per_chunk`` (what decides the triplets; the LLM's
        identity is not part of it)."""
        fn = self.parse_fn
        return {"class_name": self.class_name(), "extract_prompt": self.extract_prompt.get_template(),
                "parse_fn": f"{getattr(fn, '__module__', '')}.{getattr(fn, '__qualname__', repr(fn))}",
                "max_paths_per_chunk": self.max_paths_per_chunk}

    def extract(self, node: BaseNode) -> List[Tuple[str, str, str]]:
        """The triplets of ``node`` (its LLM view), at most ``max_paths_per_chunk``."""
        from ragloom.indices.tree.utils import fill_prompt, prompt_helper_for
        from ragloom.response_synthesizers.base import llm_or_default

        llm = llm_or_default(self.llm)
        prompt = self.extract_prompt
        if "max_knowledge_triplets" in prompt.template_vars:
            prompt = prompt.partial_format(max_knowledge_triplets=self.max_paths_per_chunk)
        filled = fill_prompt(prompt_helper_for(llm), llm, prompt, "text",
                             [node.get_content(metadata_mode=MetadataMode.LLM)], lambda texts: texts[0])
        try:
            triplets = list(self.parse_fn(str(llm.predict(filled))))
        except ValueError:
            triplets = []
        return [(str(s), str(r), str(o)) for s, r, o in triplets][: self.max_paths_per_chunk]

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[BaseNode]:
        """``nodes`` with the extracted entities and relations added to the lists in their metadata."""
        out = list(nodes)
        for node in out:
            metadata = {k: v for k, v in node.metadata.items() if k not in (KG_NODES_KEY, KG_RELATIONS_KEY)}
            entities = list(node.metadata.get(KG_NODES_KEY, []))
            relations = list(node.metadata.get(KG_RELATIONS_KEY, []))
            for subj, rel, obj in self.extract(node):
                s, o = EntityNode(name=subj, properties=dict(metadata)), EntityNode(name=obj, properties=dict(metadata))
                entities += [s, o]
                relations.append(Relation(label=rel, source_id=s.id, target_id=o.id, properties=dict(metadata)))
            node.metadata[KG_NODES_KEY] = entities
            node.metadata[KG_RELATIONS_KEY] = relations
        return out
