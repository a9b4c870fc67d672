"""Response synthesizers: turn a query and retrieved nodes into an answer with an LLM.

``get_response_synthesizer(llm=..., response_mode="compact")`` gives one of :class:`Refine`,
:class:`CompactAndRefine`, :class:`TreeSummarize`, :class:`SimpleSummarize`,
:class:`Accumulate`, :class:`CompactAccumulate`, :class:`Generation`, :class:`NoText`,
:class:`ContextOnly`; ``synth.synthesize(query, nodes)`` returns a
:class:`~ragloom.base.response.Response`.
"""

from ragloom.response_synthesizers.accumulate import Accumulate, CompactAccumulate
from ragloom.response_synthesizers.base import BaseSynthesizer
from ragloom.response_synthesizers.factory import get_response_synthesizer
from ragloom.response_synthesizers.no_text import ContextOnly, Generation, NoText
from ragloom.response_synthesizers.refine import CompactAndRefine, Refine
from ragloom.response_synthesizers.simple_summarize import SimpleSummarize
from ragloom.response_synthesizers.tree_summarize import TreeSummarize
from ragloom.response_synthesizers.type import ResponseMode

__all__ = [
    "BaseSynthesizer",
    "ResponseMode",
    "get_response_synthesizer",
    "Refine",
    "CompactAndRefine",
    "TreeSummarize",
    "SimpleSummarize",
    "Accumulate",
    "CompactAccumulate",
    "Generation",
    "NoText",
    "ContextOnly",
]
