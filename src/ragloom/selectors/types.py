"""Selector types (LlamaIndex ``llama_index.core.base.base_selector`` names): :class:`BaseSelector`,
:class:`SelectorResult`, :class:`SingleSelection`.

A selector picks, for a query, one or more of a list of *choices* (each a
:class:`~ragloom.tools.ToolMetadata` or a plain description string).  Indices are 0-based in
results, whatever the numbering shown to an LLM.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from dataclasses import dataclass, field
from typing import List, Sequence, Union

from ragloom.prompts.mixin import PromptMixin
from ragloom.schema import QueryBundle, QueryType
from ragloom.tools.types import ToolMetadata

__all__ = ["BaseSelector", "SelectorResult", "SingleSelection", "MetadataType", "QueryType"]

MetadataType = Union[str, ToolMetadata]


@dataclass
class SingleSelection:
    """One chosen choice: its 0-based ``index`` in the choices and the selector's ``reason``."""

    index: int
    reason: str = ""


@dataclass
class SelectorResult:
    """What a selector chose: ``selections`` in the selector's order of preference."""

    selections: List[SingleSelection] = field(default_factory=list)

    @property
    def inds(self) -> List[int]:
        """The 0-based indices of every selection."""
        return [s.index for s in self.selections]

    @property
    def reasons(self) -> List[str]:
        return [s.reason for s in self.selections]

    def _only(self) -> SingleSelection:
        if len(self.selections) != 1:
            raise ValueError(
                f"this result has {len(self.selections)} selections; .ind and .reason need exactly one "
                "(use .inds / .reasons)"
            )
        return self.selections[0]

    @property
    def ind(self) -> int:
        """The 0-based index of the only selection.

        Raises:
            ValueError: there is not exactly one selection.
        """
        return self._only().index

    @property
    def reason(self) -> str:
        """The reason of the only selection.

        Raises:
            ValueError: there is not exactly one selection.
        """
        return self._only().reason


def to_tool_metadata(choices: Sequence[MetadataType]) -> List[ToolMetadata]:
    """``choices`` as :class:`ToolMetadata` (a string is the description of an unnamed tool).

    Raises:
        ValueError: ``choices`` is empty, or an item is neither a ``str`` nor a ``ToolMetadata``.
    """
    out: List[ToolMetadata] = []
    for i, choice in enumerate(choices):
        if isinstance(choice, ToolMetadata):
            out.append(choice)
        elif isinstance(choice, str):
            out.append(ToolMetadata(description=choice))
        else:
            raise ValueError(f"choices[{i}] must be a str or ToolMetadata, got {type(choice).__name__}")
    if not out:
        raise ValueError("choices must hold at least one choice")
    return out


def _to_query_bundle(query: QueryType) -> QueryBundle:
    # imported here: ragloom.query_engine imports the selectors (its routers use them)
    from ragloom.query_engine.base import to_query_bundle

    return to_query_bundle(query)


class BaseSelector(PromptMixin):
    """Base class of selectors; subclasses implement :meth:`_select` (and may override :meth:`_aselect`)."""

    def select(self, choices: Sequence[MetadataType], query: QueryType) -> SelectorResult:
        """Choose among ``choices`` (``ToolMetadata`` or description strings) for ``query``.

        Returns:
            a :class:`SelectorResult` with at least one selection, every index in
            ``range(len(choices))``.

        Raises:
            ValueError: no choices, a choice or the query of the wrong type, or (LLM selectors)
                an answer with no usable choice.
        """
        return self._select(to_tool_metadata(choices), _to_query_bundle(query))

    async def aselect(self, choices: Sequence[MetadataType], query: QueryType) -> SelectorResult:
        """As :meth:`select`, async."""
        return await self._aselect(to_tool_metadata(choices), _to_query_bundle(query))

    @abstractmethod
    def _select(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult: ...

    async def _aselect(self, choices: Sequence[ToolMetadata], query: QueryBundle) -> SelectorResult:
        """Default: :meth:`_select` in a worker thread."""
        return await asyncio.to_thread(self._select, choices, query)
