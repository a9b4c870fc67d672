"""The built-in metadata extractors (LlamaIndex's ``llama_index.core.extractors`` names, arguments,
defaults and metadata keys; ragloom's own prompt wording, asking for answers in the text's language):

* :class:`TitleExtractor` — ``document_title``: one title per source document from its first
  ``nodes`` nodes (a candidate per node, then one call combining them), on every node of it;
* :class:`SummaryExtractor` — ``section_summary`` and, on request, ``prev_section_summary`` /
  ``next_section_summary``: the summaries of the node and of its neighbours in the same document;
* :class:`QuestionsAnsweredExtractor` — ``questions_this_excerpt_can_answer``;
* :class:`KeywordExtractor` — ``excerpt_keywords``: by the LLM, or offline (``mode="tfidf"`` /
  ``"textrank"``, :func:`ragloom.keywords.extract_keywords`: Chinese segmented by rjieba).

Neighbours and "first nodes" are taken among the nodes of one call (one ingestion batch, which
holds whole documents), in their order, within the same source document (``ref_doc_id``);
LlamaIndex's ``SummaryExtractor`` takes the previous node in the list even from another document.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

from ragloom.extractors.interface import (
    DEFAULT_NUM_WORKERS,
    Answer,
    ExtractionPlan,
    Outcome,
    PlannedExtractor,
    check_int,
    digest,
    node_text,
    source_of,
)
from ragloom.schema import BaseNode, TextNode

__all__ = [
    "DEFAULT_TITLE_NODE_TEMPLATE",
    "DEFAULT_TITLE_COMBINE_TEMPLATE",
    "DEFAULT_KEYWORD_EXTRACT_TEMPLATE",
    "DEFAULT_QUESTION_GEN_TMPL",
    "DEFAULT_SUMMARY_EXTRACT_TEMPLATE",
    "KEYWORD_MODES",
    "TitleExtractor",
    "SummaryExtractor",
    "QuestionsAnsweredExtractor",
    "KeywordExtractor",
]

#: ``context_str``: the text of one of the document's first nodes.
DEFAULT_TITLE_NODE_TEMPLATE = (
    "Here is a passage from a document:\n"
    "---------------------\n"
    "{context_str}\n"
    "---------------------\n"
    "Propose a short title naming the main subjects, names and themes of this passage, in the "
    "language of the passage. Reply with the title only.\n"
    "Title: "
)
#: ``context_str``: the candidate titles of the document's first nodes, joined by ``", "``.
DEFAULT_TITLE_COMBINE_TEMPLATE = (
    "Candidate titles for passages of one document: {context_str}\n"
    "Write one title for the whole document that covers them, in their language. Reply with the "
    "title only.\n"
    "Title: "
)
#: ``context_str``: the node's content; ``keywords``: how many.
DEFAULT_KEYWORD_EXTRACT_TEMPLATE = (
    "{context_str}\n\n"
    "List {keywords} keywords of the text above that would single it out among similar texts, in "
    "the language of the text, separated by commas.\n"
    "Keywords: "
)
#: ``context_str``: the node's content; ``num_questions``: how many.
DEFAULT_QUESTION_GEN_TMPL = (
    "Text:\n"
    "---------------------\n"
    "{context_str}\n"
    "---------------------\n"
    "Write {num_questions} questions that this text answers specifically and that other texts "
    "would hardly answer. Use the language of the text, one question per line.\n"
)
#: ``context_str``: the node's content.
DEFAULT_SUMMARY_EXTRACT_TEMPLATE = (
    "Section:\n"
    "---------------------\n"
    "{context_str}\n"
    "---------------------\n"
    "Summarize the main topics and entities of this section in a few sentences, in its language.\n"
    "Summary: "
)

#: ``KeywordExtractor(mode=...)``: ``"llm"`` asks the LLM; the others need none.
KEYWORD_MODES = ("llm", "tfidf", "textrank")


def _template(value: Any, name: str, allowed: Sequence[str]) -> str:
    """``value`` (a ``str`` or a ``PromptTemplate``) as template text, after checking it uses
    ``{context_str}`` and no variable outside ``allowed``.

    Raises:
        ValueError: naming ``name``.
    """
    from ragloom.prompts.base import BasePromptTemplate, PromptTemplate

    text = value.get_template() if isinstance(value, BasePromptTemplate) else value
    if not isinstance(text, str):
        raise ValueError(f"{name} must be a str or PromptTemplate, got {type(value).__name__}")
    used = PromptTemplate(text).template_vars
    unknown = [v for v in used if v not in allowed]
    if "context_str" not in used or unknown:
        raise ValueError(f"{name} must contain {{context_str}} and may use only {list(allowed)}; got {used}")
    return text


def _resolve_llm(llm: Any, llm_predictor: Any, who: str, needed: bool = True) -> Any:
    """``llm`` (an LLM or a :func:`ragloom.llms.resolve_llm` specification), else the deprecated
    ``llm_predictor``, else ``Settings.llm`` (as LlamaIndex).

    Raises:
        ValueError: none is set and ``needed``.
    """
    from ragloom.settings import Settings

    chosen = llm if llm is not None else llm_predictor
    if isinstance(chosen, str):
        from ragloom.llms import resolve_llm

        chosen = resolve_llm(chosen)
    chosen = chosen if chosen is not None else Settings.llm
    if chosen is None and needed:
        raise ValueError(
            f"{who} needs an LLM: pass llm=... (e.g. OpenAILike(model=..., api_base=...)) or set Settings.llm "
            "(an LLM or a specification such as 'ollama:<model>'); KeywordExtractor(mode='tfidf' or "
            "'textrank') extracts keywords without one")
    return chosen


def _by_document(context: Sequence[BaseNode]) -> Dict[str, List[int]]:
    """Positions in ``context`` of each source document's nodes, in order."""
    groups: Dict[str, List[int]] = {}
    for i, node in enumerate(context):
        groups.setdefault(source_of(node), []).append(i)
    return groups


def _neighbours(context: Sequence[BaseNode]) -> List[tuple]:
    """``(previous, next)`` position of each node of ``context`` in the same document (or ``None``)."""
    out: List[tuple] = [(None, None)] * len(context)
    for members in _by_document(context).values():
        for k, i in enumerate(members):
            out[i] = (members[k - 1] if k > 0 else None, members[k + 1] if k + 1 < len(members) else None)
    return out


class TitleExtractor(PlannedExtractor):
    """``document_title``: a title for each source document, on all its nodes (LlamaIndex's).

    For each document with nodes to process, the LLM proposes a title for each of its first
    ``nodes`` nodes (``node_template``, ``context_str`` = the node's text), then combines the
    candidates (``combine_template``, ``context_str`` = the candidates joined by ``", "``): at most
    ``nodes + 1`` calls per document, candidates concurrently.  A node's cache key includes the text
    of its document's first ``nodes`` nodes, so editing one of them re-titles the document.

    Args:
        llm: the LLM (default ``Settings.llm``).
        nodes: how many of each document's first nodes to read (>= 1, default 5).
        node_template, combine_template: the two prompts (``{context_str}``).
        num_workers, and the fields of :class:`~ragloom.extractors.BaseExtractor`.

    Raises:
        ValueError: ``nodes`` < 1, a template without ``{context_str}``, no LLM.
    """

    is_text_node_only: bool = False
    nodes: int = 5
    node_template: str = DEFAULT_TITLE_NODE_TEMPLATE
    combine_template: str = DEFAULT_TITLE_COMBINE_TEMPLATE

    def __init__(
        self,
        llm: Any = None,
        llm_predictor: Any = None,
        nodes: int = 5,
        node_template: str = DEFAULT_TITLE_NODE_TEMPLATE,
        combine_template: str = DEFAULT_TITLE_COMBINE_TEMPLATE,
        num_workers: int = DEFAULT_NUM_WORKERS,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            llm=_resolve_llm(llm, llm_predictor, "TitleExtractor"),
            nodes=check_int(nodes, "nodes", 1),
            node_template=_template(node_template, "node_template", ("context_str",)),
            combine_template=_template(combine_template, "combine_template", ("context_str",)),
            num_workers=num_workers,
            **kwargs,
        )

    def _first(self, context: Sequence[BaseNode]) -> Dict[str, List[int]]:
        return {doc: members[: self.nodes] for doc, members in _by_document(context).items()}

    def dependencies(self, nodes: Sequence[BaseNode]) -> List[str]:
        """The texts of the node's document's first ``nodes`` nodes."""
        first = {doc: digest(node_text(nodes[i]) for i in members) for doc, members in self._first(nodes).items()}
        return [first[source_of(n)] for n in nodes]

    def plan(self, targets: List[int], context: List[BaseNode]) -> ExtractionPlan:
        first = self._first(context)
        docs = list(dict.fromkeys(source_of(context[t]) for t in targets))
        owners = [d for d in docs for _ in first[d]]
        answers = yield [self._prompt(self.node_template, context_str=node_text(context[i]))
                         for d in docs for i in first[d]]
        failed: Dict[str, BaseException] = {}
        candidates: Dict[str, List[str]] = {d: [] for d in docs}
        for doc, answer in zip(owners, answers, strict=True):
            if isinstance(answer, BaseException):
                failed.setdefault(doc, answer)
            elif answer.strip():
                candidates[doc].append(answer.strip())
        ready = [d for d in docs if d not in failed]
        combined = yield [self._prompt(self.combine_template, context_str=", ".join(candidates[d])) for d in ready]
        titles: Dict[str, Outcome] = dict(failed)
        for doc, answer in zip(ready, combined, strict=True):
            titles[doc] = answer if isinstance(answer, BaseException) else _meta("document_title", answer)
        return [titles[source_of(context[t])] for t in targets]


def _meta(key: str, answer: str) -> Dict[str, Any]:
    """``{key: answer stripped}``, or ``{}`` for an empty answer."""
    text = answer.strip()
    return {key: text} if text else {}


class _PerNodeExtractor(PlannedExtractor):
    """One prompt per (text) node, its answer under :attr:`_key`."""

    _key = ""

    def _node_prompt(self, node: BaseNode) -> str:
        raise NotImplementedError

    def plan(self, targets: List[int], context: List[BaseNode]) -> ExtractionPlan:
        asked = [t for t in targets if isinstance(context[t], TextNode) or not self.is_text_node_only]
        answers = yield [self._node_prompt(context[t]) for t in asked]
        got: Dict[int, Answer] = dict(zip(asked, answers, strict=True))
        out: List[Outcome] = []
        for t in targets:
            answer = got.get(t, "")
            out.append(answer if isinstance(answer, BaseException) else _meta(self._key, answer))
        return out


class QuestionsAnsweredExtractor(_PerNodeExtractor):
    """``questions_this_excerpt_can_answer``: questions the node answers (LlamaIndex's).

    One call per node (``prompt_template`` with ``context_str`` = the node's content in
    ``metadata_mode``, ``num_questions``).  With ``embedding_only`` (default) the key is hidden from
    the LLM's view (added to ``excluded_llm_metadata_keys``): the questions help retrieval and would
    only repeat the text to the LLM.  Like every extracted key it is embedded only if it fits the
    embed budget (see :mod:`ragloom.extractors.interface`).

    Args:
        llm: the LLM (default ``Settings.llm``).
        questions: how many questions to ask for (>= 1, default 5).
        prompt_template: ``{context_str}`` and ``{num_questions}``.
        embedding_only: see above.

    Raises:
        ValueError: ``questions`` < 1, a bad template, no LLM.
    """

    _key = "questions_this_excerpt_can_answer"
    questions: int = 5
    prompt_template: str = DEFAULT_QUESTION_GEN_TMPL
    embedding_only: bool = True

    def __init__(
        self,
        llm: Any = None,
        llm_predictor: Any = None,
        questions: int = 5,
        prompt_template: str = DEFAULT_QUESTION_GEN_TMPL,
        embedding_only: bool = True,
        num_workers: int = DEFAULT_NUM_WORKERS,
        **kwargs: Any,
    ) -> None:
        super().__init__(
            llm=_resolve_llm(llm, llm_predictor, "QuestionsAnsweredExtractor"),
            questions=check_int(questions, "questions", 1),
            prompt_template=_template(prompt_template, "prompt_template", ("context_str", "num_questions")),
            embedding_only=bool(embedding_only),
            num_workers=num_workers,
            **kwargs,
        )

    def _node_prompt(self, node: BaseNode) -> str:
        return self._prompt(self.prompt_template, context_str=node.get_content(self.metadata_mode),
                            num_questions=self.questions)

    def _llm_hidden_keys(self, meta: Dict[str, Any]) -> List[str]:
        return [self._key] if self.embedding_only and self._key in meta else []


class SummaryExtractor(PlannedExtractor):
    """``section_summary`` / ``prev_section_summary`` / ``next_section_summary`` (LlamaIndex's).

    Each needed node is summarized once (``prompt_template``, ``context_str`` = its content in
    ``metadata_mode``); a node gets its own summary (``"self"``) and those of the previous and next
    node *of the same document* (``"prev"``, ``"next"``).  A node's cache key includes the
    neighbours it shows, so editing a node re-extracts its neighbours too; their summaries come from
    the kept LLM answers, so the edit costs one call.  Under the embed budget, ``section_summary``
    is embedded first, then ``prev_…``, then ``next_…``.

    Args:
        llm: the LLM (default ``Settings.llm``).
        summaries: any of ``"self"``, ``"prev"``, ``"next"`` (default ``["self"]``).
        prompt_template: ``{context_str}``.

    Raises:
        ValueError: an unknown entry in ``summaries``, a bad template, no LLM.
    """

    summaries: List[str] = ["self"]
    prompt_template: str = DEFAULT_SUMMARY_EXTRACT_TEMPLATE

    def __init__(
        self,
        llm: Any = None,
        llm_predictor: Any = None,
        summaries: Optional[List[str]] = None,
        prompt_template: str = DEFAULT_SUMMARY_EXTRACT_TEMPLATE,
        num_workers: int = DEFAULT_NUM_WORKERS,
        **kwargs: Any,
    ) -> None:
        chosen = ["self"] if summaries is None else summaries
        if isinstance(chosen, str) or not all(s in ("self", "prev", "next") for s in chosen):
            raise ValueError(f"summaries must be a list of 'self', 'prev' and 'next', got {summaries!r}")
        super().__init__(
            llm=_resolve_llm(llm, llm_predictor, "SummaryExtractor"),
            summaries=list(dict.fromkeys(chosen)),
            prompt_template=_template(prompt_template, "prompt_template", ("context_str",)),
            num_workers=num_workers,
            **kwargs,
        )

    def _sources(self, i: int, around: Sequence[tuple]) -> List[tuple]:
        """``(metadata key, position)`` pairs node ``i`` shows, in budget priority."""
        prev, nxt = around[i]
        pairs = []
        if "self" in self.summaries:
            pairs.append(("section_summary", i))
        if "prev" in self.summaries and prev is not None:
            pairs.append(("prev_section_summary", prev))
        if "next" in self.summaries and nxt is not None:
            pairs.append(("next_section_summary", nxt))
        return pairs

    def dependencies(self, nodes: Sequence[BaseNode]) -> List[str]:
        """The neighbours shown (their text and content metadata, as :attr:`BaseNode.hash`)."""
        around = _neighbours(nodes)
        return [digest(f"{key}={nodes[p].hash}" for key, p in self._sources(i, around) if p != i)
                for i in range(len(nodes))]

    def plan(self, targets: List[int], context: List[BaseNode]) -> ExtractionPlan:
        around = _neighbours(context)
        needed = list(dict.fromkeys(p for t in targets for _, p in self._sources(t, around)))
        asked = [p for p in needed if isinstance(context[p], TextNode)]
        answers = yield [self._prompt(self.prompt_template, context_str=context[p].get_content(self.metadata_mode))
                         for p in asked]
        summary: Dict[int, Answer] = dict(zip(asked, answers, strict=True))
        out: List[Outcome] = []
        for t in targets:
            meta: Dict[str, Any] = {}
            error: Optional[BaseException] = None
            for key, p in self._sources(t, around):
                answer = summary.get(p, "")
                if isinstance(answer, BaseException):
                    error = error or answer
                else:
                    meta.update(_meta(key, answer))
            out.append(error if error is not None else meta)
        return out


class KeywordExtractor(_PerNodeExtractor):
    """``excerpt_keywords``: keywords of each node, comma-separated (LlamaIndex's).

    Modes:
        * ``"llm"`` (default, LlamaIndex's): one call per node (``prompt_template``, ``context_str``
          = the node's content in ``metadata_mode``, ``keywords``); the answer as given.
        * ``"tfidf"``: offline, no LLM: term frequency × smoothed inverse document frequency over
          the nodes of the same document (so a node's keywords are what sets it apart from the
          rest of its document; a node's cache key includes the texts of its document's nodes).
        * ``"textrank"``: offline: TextRank over each node's own text.

      Offline modes read the node's text without metadata, segment Chinese with rjieba and drop
      stopwords (:func:`ragloom.keywords.extract_keywords`); the keywords are normalised (NFKC,
      lowercase) substrings of the text.

    Args:
        llm: the LLM for ``mode="llm"`` (default ``Settings.llm``; not needed offline).
        keywords: how many keywords (>= 1, default 5).
        prompt_template: ``{context_str}`` and ``{keywords}`` (``"llm"`` mode).
        mode: one of :data:`KEYWORD_MODES`.

    Raises:
        ValueError: ``keywords`` < 1, an unknown ``mode``, a bad template, ``mode="llm"`` without an LLM.
    """

    _key = "excerpt_keywords"
    keywords: int = 5
    prompt_template: str = DEFAULT_KEYWORD_EXTRACT_TEMPLATE
    mode: str = "llm"

    def __init__(
        self,
        llm: Any = None,
        llm_predictor: Any = None,
        keywords: int = 5,
        prompt_template: str = DEFAULT_KEYWORD_EXTRACT_TEMPLATE,
        num_workers: int = DEFAULT_NUM_WORKERS,
        mode: str = "llm",
        **kwargs: Any,
    ) -> None:
        if mode not in KEYWORD_MODES:
            raise ValueError(f"mode must be one of {list(KEYWORD_MODES)}, got {mode!r}")
        super().__init__(
            llm=_resolve_llm(llm, llm_predictor, "KeywordExtractor(mode='llm')", needed=mode == "llm"),
            keywords=check_int(keywords, "keywords", 1),
            prompt_template=_template(prompt_template, "prompt_template", ("context_str", "keywords")),
            num_workers=num_workers,
            mode=mode,
            **kwargs,
        )

    def to_config(self) -> Dict[str, Any]:
        cfg = super().to_config()
        if self.mode != "llm":  # offline keywords depend on neither the LLM nor the prompt
            cfg.pop("llm", None)
            cfg.pop("prompt_template", None)
        return cfg

    def _node_prompt(self, node: BaseNode) -> str:
        return self._prompt(self.prompt_template, context_str=node.get_content(self.metadata_mode),
                            keywords=self.keywords)

    def dependencies(self, nodes: Sequence[BaseNode]) -> List[str]:
        """With ``"tfidf"``, the texts of the node's document's nodes."""
        if self.mode != "tfidf":
            return super().dependencies(nodes)
        docs = {doc: digest(node_text(nodes[i]) for i in members) for doc, members in _by_document(nodes).items()}
        return [docs[source_of(n)] for n in nodes]

    def plan(self, targets: List[int], context: List[BaseNode]) -> ExtractionPlan:
        if self.mode == "llm":
            return (yield from super().plan(targets, context))
        return self._offline(targets, context)

    def _offline(self, targets: List[int], context: List[BaseNode]) -> List[Outcome]:
        from ragloom.keywords import extract_keywords

        wanted = [t for t in targets if isinstance(context[t], TextNode) or not self.is_text_node_only]
        found: Dict[int, List[str]] = {}
        if self.mode == "textrank":
            found = dict(zip(wanted, extract_keywords([node_text(context[t]) for t in wanted], "textrank",
                                                      self.keywords), strict=True))
        else:
            groups = _by_document(context)
            for doc in dict.fromkeys(source_of(context[t]) for t in wanted):
                members = groups[doc]
                ranked = extract_keywords([node_text(context[i]) for i in members], "tfidf", self.keywords)
                found.update(zip(members, ranked, strict=True))
        return [_meta(self._key, ", ".join(found.get(t, []))) for t in targets]
