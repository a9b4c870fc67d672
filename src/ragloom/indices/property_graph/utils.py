"""LlamaIndex's ``property_graph.utils``: the default triplet parser of the path extractors."""

from __future__ import annotations

from typing import List, Tuple

from ragloom.indices.knowledge_graph.utils import DEFAULT_MAX_OBJECT_LENGTH, parse_triplets

__all__ = ["default_parse_triplets_fn"]


def default_parse_triplets_fn(response: str, max_length: int = DEFAULT_MAX_OBJECT_LENGTH) -> List[Tuple[str, str, str]]:
    """The triplets of an LLM answer: :func:`~ragloom.indices.knowledge_graph.utils.parse_triplets`
    (tolerant of numbering, several triplets per line, Chinese brackets and commas; keeps the model's
    spelling, where LlamaIndex capitalises every part)."""
    return parse_triplets(response, max_length=max_length)
