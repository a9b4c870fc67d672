"""Graph extractors of :class:`~ragloom.indices.property_graph.PropertyGraphIndex` (LlamaIndex's
``property_graph.transformations``; only ``SimpleLLMPathExtractor`` is provided)."""

from ragloom.indices.property_graph.transformations.simple_llm import SimpleLLMPathExtractor

__all__ = ["SimpleLLMPathExtractor"]
