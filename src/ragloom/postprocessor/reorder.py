"""``LongContextReorder``: put the best nodes at the two ends of the context.

Models read the start and the end of a long context better than its middle (Liu et al., "Lost in
the Middle: How Language Models Use Long Contexts", TACL 2024).  This postprocessor keeps every node
and changes only their order.
"""

from __future__ import annotations

from typing import List, Optional

from ragloom.postprocessor.types import BaseNodePostprocessor
from ragloom.schema import NodeWithScore, QueryBundle

__all__ = ["LongContextReorder"]


class LongContextReorder(BaseNodePostprocessor):
    """Reorder nodes so the highest scores sit first and last and the lowest in the middle
    (LlamaIndex's class).

    With nodes ranked r1 (best) … rn, the output is ``r1, r3, r5, …, r6, r4, r2``: the best
    node opens the context, the second best closes it.  Nodes without a score rank below every
    scored node; equal scores keep their retrieval order, so the result is deterministic.
    (LlamaIndex sorts ascending and alternates from the lowest, which puts the best node *last*
    when the count is even and *first* when it is odd; here the best node is always first.)
    """

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        ranked = sorted(
            range(len(nodes)),
            key=lambda i: (nodes[i].score is None, -(nodes[i].score or 0.0), i),
        )
        front = [nodes[i] for i in ranked[0::2]]
        back = [nodes[i] for i in ranked[1::2]]
        return front + back[::-1]
