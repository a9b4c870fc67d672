"""Shared invariant checks for every node parser (ARCHITECTURE.md, "The span engine").

Import in a parser's tests::

    from invariants import assert_invariants   # tests/node_parser is on sys.path via conftest

Each flag turns on one invariant; a parser's test states which ones its contract promises.
"""

from __future__ import annotations

from typing import Iterable, List, Optional, Sequence

from ragloom.schema import BaseNode, Document, MetadataMode, NodeRelationship


def assert_invariants(
    parser,
    doc: Document,
    *,
    tokenizer=None,
    chunk_size: Optional[int] = None,
    exact_offsets: bool = True,
    coverage: bool = True,
    ordered: bool = True,
    nodes: Optional[Sequence[BaseNode]] = None,
) -> List[BaseNode]:
    """Run ``parser`` on ``doc`` (unless ``nodes`` are given) and assert the chosen invariants.

    - ``exact_offsets``: ``doc.text[n.start_char_idx:n.end_char_idx] == n.text`` (the stripped
      text lies exactly at the offsets);
    - ``chunk_size`` (with ``tokenizer``): ``get_content(EMBED)`` and ``get_content(LLM)`` of every
      node count ≤ ``chunk_size`` tokens;
    - ``coverage``: the union of spans covers every non-whitespace character of ``doc.text``;
    - ``ordered``: spans start in non-decreasing order;
    - always: SOURCE points at the document, and a second run gives the same ids and texts.
    Returns the nodes.
    """
    if nodes is None:
        nodes = parser.get_nodes_from_documents([doc])
    text = doc.text
    covered = bytearray(len(text))
    last_start = -1
    for n in nodes:
        src = n.relationships.get(NodeRelationship.SOURCE)
        assert src is not None and src.node_id == doc.id_, f"node {n.node_id} has no SOURCE → {doc.id_}"
        a, b = n.start_char_idx, n.end_char_idx
        if exact_offsets or coverage or ordered:
            assert a is not None and b is not None and 0 <= a <= b <= len(text), (a, b, len(text))
        if exact_offsets:
            assert text[a:b] == n.text, f"offsets {a}:{b} do not hold the node text"
        if ordered:
            assert a >= last_start, "spans out of order"
            last_start = a
        if coverage:
            covered[a:b] = b"\x01" * (b - a)
        if chunk_size is not None and tokenizer is not None:
            for mode in (MetadataMode.EMBED, MetadataMode.LLM):
                c = tokenizer.count(n.get_content(mode))
                assert c <= chunk_size, f"node {n.node_id}: {c} tokens > {chunk_size} in {mode.value} mode"
    if coverage:
        missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
        assert not missing, f"uncovered characters at {missing[:10]}: {[text[i] for i in missing[:10]]}"
    again = parser.get_nodes_from_documents([doc])
    assert [n.node_id for n in again] == [n.node_id for n in nodes], "ids are not deterministic"
    assert [n.get_content() for n in again] == [n.get_content() for n in nodes], "output is not deterministic"
    return list(nodes)


def texts_of(nodes: Iterable[BaseNode]) -> List[str]:
    return [n.get_content(MetadataMode.NONE) for n in nodes]
