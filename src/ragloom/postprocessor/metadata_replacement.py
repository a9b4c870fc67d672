"""``MetadataReplacementPostProcessor``: replace each node's text by one of its metadata
values — with ``SentenceWindowNodeParser``, the sentence retrieved by embedding is swapped
for its surrounding window before the LLM sees it."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import msgspec

from ragloom.postprocessor.types import BaseNodePostprocessor
from ragloom.schema import NodeWithScore, QueryBundle

__all__ = ["MetadataReplacementPostProcessor"]


class MetadataReplacementPostProcessor(BaseNodePostprocessor):
    """Set each node's content to ``node.metadata[target_metadata_key]``.

    Nodes without the key keep their text.  Returns new ``NodeWithScore`` objects holding
    copies of the nodes (the retrieved nodes, which may be shared with a docstore or a
    vector store, are not modified); scores and order are unchanged.  The copies keep the
    original ``start_char_idx``/``end_char_idx`` (those of the sentence, not the window).

    Args:
        target_metadata_key: the metadata key whose value becomes the text
            (``"window"``, the default key of ``SentenceWindowNodeParser``).

    Raises:
        ValueError: an empty ``target_metadata_key``.
    """

    def __init__(self, target_metadata_key: str = "window") -> None:
        if not target_metadata_key:
            raise ValueError("target_metadata_key must be a non-empty string")
        self.target_metadata_key = target_metadata_key

    def to_config(self) -> Dict[str, Any]:
        return {"class_name": self.class_name(), "target_metadata_key": self.target_metadata_key}

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        out: List[NodeWithScore] = []
        key = self.target_metadata_key
        for nws in nodes:
            node = nws.node
            value = node.metadata.get(key)
            if value is None:
                out.append(NodeWithScore(node=node, score=nws.score))
                continue
            new = msgspec.structs.replace(node, metadata=dict(node.metadata), relationships=dict(node.relationships))
            new.set_content(value if isinstance(value, str) else str(value))
            out.append(NodeWithScore(node=new, score=nws.score))
        return out


