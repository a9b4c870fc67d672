"""``BaseExtractor``: a transformation that adds metadata to nodes (LlamaIndex's
``llama_index.core.extractors.interface``).

An extractor is a :class:`~ragloom.schema.TransformComponent`: in an
:class:`~ragloom.ingestion.IngestionPipeline` (or ``VectorStoreIndex.from_documents(...,
transformations=[...])``) it runs between the node parser and the embed model.  Its public API is
LlamaIndex's: :meth:`BaseExtractor.extract` / :meth:`~BaseExtractor.aextract` return one metadata
``dict`` per node; :meth:`~BaseExtractor.process_nodes` / ``__call__`` merge them into
``node.metadata``.  A custom extractor implements ``extract`` or ``aextract``.

What ragloom adds (see :class:`BaseExtractor` for the details):

* **Cached per node, with what the output depends on.**  In a pipeline each node's result is kept
  in the :class:`~ragloom.ingestion.IngestionCache` under a key of the node, the extractor's
  configuration (its LLM's class and model name included) and :meth:`BaseExtractor.cache_contexts`:
  a title depends on the first nodes of the document, a ``prev``/``next`` summary on the
  neighbours, so changing a neighbour re-extracts exactly the nodes that show it.  The LLM's answers
  are kept too, by prompt, so a re-extracted node re-asks only the prompts that changed.  An
  unchanged re-run makes no LLM call.
* **Concurrent, bounded, in order.**  The LLM calls of one step run ``num_workers`` at a time
  (threads over ``LLM.predict``; ``aextract`` uses ``LLM.apredict`` under a semaphore); answers
  come back in input order.  Retrying a failed request is the LLM transport's job (e.g.
  ``OpenAILike(max_retries=...)``); ``max_retries`` here (default 0) adds attempts of a failed call.
* **One document's failure stays its own.**  A failed call makes its document fail with a
  :class:`~ragloom.errors.DocumentError` (a ``ValueError``): the ingestion engine reports it in
  ``IngestionStats.failed`` and writes the other documents.  ``raise_on_error=False`` keeps such
  nodes without this extractor's metadata instead (not cached, so the next run tries again).
* **The embedded text still fits the embed model.**  Splitters size chunks with the metadata they
  see; metadata added afterwards could push a chunk over the embed model's input limit, where it
  would be silently truncated.  After merging, each key this extractor added is embedded only if
  the node's embed view (``get_content(MetadataMode.EMBED)``) still fits
  :meth:`BaseExtractor.embed_budget` (the embed model's ``max_text_tokens`` in its own tokenizer);
  a key that does not fit is added to the node's ``excluded_embed_metadata_keys`` (its value is
  kept whole in ``node.metadata`` and in the LLM's view) and one warning per step says how many
  nodes lost which key.  Values are never cut and no document fails for this.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Dict, Generator, Iterable, List, Optional, Sequence, Tuple, Union

import msgspec

from ragloom.errors import DocumentError
from ragloom.schema import BaseNode, MetadataMode, TextNode, TransformComponent

logger = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_NODE_TEXT_TEMPLATE",
    "DEFAULT_NUM_WORKERS",
    "BaseExtractor",
    "EmbedBudget",
    "ExtractionPlan",
]

#: Template given to the nodes an extractor processes (``disable_template_rewrite=False``), so the
#: embed model and the LLM see the metadata as context of the excerpt (ragloom's wording; the
#: variables are LlamaIndex's).
DEFAULT_NODE_TEXT_TEMPLATE = "Context:\n{metadata_str}\n\nExcerpt:\n{content}"

#: LLM calls in flight at once per extractor (LlamaIndex's default).
DEFAULT_NUM_WORKERS = 4

#: Answer of one LLM call: its text, or the exception it failed with.
Answer = Union[str, BaseException]
#: Result for one node: its metadata, or the exception that made its extraction fail.
Outcome = Union[Dict[str, Any], BaseException]
#: A built-in extractor's work as a generator: it yields lists of prompts, receives their answers
#: (same order) and returns one :data:`Outcome` per target node.  A sync and an async driver run it.
ExtractionPlan = Generator[List[str], List[Answer], List[Outcome]]

#: Fields that change how an extraction runs, not its result: left out of ``to_config()``.
_RUN_FIELDS = ("show_progress", "num_workers", "in_place", "max_retries", "retry_backoff", "raise_on_error")


@dataclass(frozen=True)
class EmbedBudget:
    """What the embed view of a node must fit: at most ``max_tokens`` tokens of ``tokenizer``
    (a :class:`~ragloom.tokenizers.Tokenizer`: the embed model's own, special tokens excluded)."""

    tokenizer: Any
    max_tokens: int

    def count(self, text: str) -> int:
        """Tokens of ``text``."""
        return int(self.tokenizer.count(text))

    @property
    def identity(self) -> str:
        """``"<tokenizer name>:<max_tokens>"``: part of every extractor cache key."""
        return f"{self.tokenizer.name}:{self.max_tokens}"


def source_of(node: BaseNode) -> str:
    """The document ``node`` belongs to: its ``ref_doc_id``, or its own id when it has none (as the
    ingestion engine groups sources)."""
    return node.ref_doc_id or node.id_


def node_text(node: BaseNode) -> str:
    """The node's text without metadata."""
    return node.get_content(MetadataMode.NONE)


def digest(parts: Iterable[str]) -> str:
    """sha256 (hex) of ``parts`` joined by NUL bytes."""
    h = hashlib.sha256()
    for part in parts:
        h.update(part.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()


def llm_identity(llm: Any) -> Optional[Dict[str, Any]]:
    """What identifies an LLM's answers in configurations and cache keys: class, model name and
    system prompt (``None`` without an LLM).  Sampling settings such as ``temperature`` are not part
    of it: changing them does not re-extract."""
    if llm is None:
        return None
    return {"class_name": type(llm).__name__, "model_name": llm.metadata.model_name,
            "system_prompt": llm.system_prompt}


def check_int(value: Any, name: str, low: int) -> int:
    """``value`` if it is an ``int >= low`` (not a bool), else ``ValueError`` naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"{name} must be an int >= {low}, got {value!r}")
    return value


class _Answers:
    """LLM answers by prompt, kept in an :class:`~ragloom.ingestion.IngestionCache` (the pipeline's)
    under keys of the LLM's identity and the prompt, so a node re-extracted because a neighbour
    changed re-asks only the prompts that changed, and a document retried alone after another one
    failed re-asks nothing."""

    def __init__(self, cache: Any, collection: Optional[str], llm: Any) -> None:
        self.cache = cache
        self.collection = collection
        self._prefix = msgspec.json.encode(llm_identity(llm), order="sorted")

    def _key(self, prompt: str) -> str:
        h = hashlib.sha256(b"ragloom-extractor-answer\x00" + self._prefix + b"\x00")
        h.update(prompt.encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    def get(self, prompts: Sequence[str]) -> Dict[str, str]:
        keys = {self._key(p): p for p in prompts}
        found = self.cache.get_many(list(keys), collection=self.collection)
        return {keys[k]: node_text(nodes[0]) for k, nodes in found.items() if nodes}

    def put(self, answers: Dict[str, str]) -> None:
        self.cache.put_many({self._key(p): [TextNode(id_=self._key(p), text=a)] for p, a in answers.items()},
                            collection=self.collection)


class BaseExtractor(TransformComponent):
    """Base class of metadata extractors (LlamaIndex's fields and methods).

    Fields (keyword arguments of every extractor):
        is_text_node_only: only :class:`~ragloom.schema.TextNode` inputs get metadata (default
            ``True``).
        show_progress: a progress bar over the LLM calls when an extractor is called directly
            (in a pipeline, the run's ``show_progress`` decides).
        metadata_mode: which metadata the prompts show with a node's text (default
            ``MetadataMode.LLM``: what the LLM sees at query time.  LlamaIndex's default ``ALL``
            also shows keys hidden from both views, such as file sizes and dates; those are not
            part of the cache key, so with ``ALL`` a changed file date does not re-extract).
        node_text_template: the ``text_template`` given to processed nodes (``{metadata_str}``
            and ``{content}``), unless ``disable_template_rewrite``.
        disable_template_rewrite: keep each node's own ``text_template``.
        in_place: change the given nodes (default); ``False`` returns changed copies.
        num_workers: LLM calls in flight at once (>= 1, default 4).
        max_retries: extra attempts of a failed LLM call, ``retry_backoff * 2**attempt`` seconds
            apart (default 0: the transport has already retried what can be retried).
        retry_backoff: seconds (>= 0).
        raise_on_error: a failed extraction raises :class:`~ragloom.errors.DocumentError` for its
            document (default); ``False`` logs it and leaves those nodes without this extractor's
            metadata.

    Deliberate differences from LlamaIndex: ``metadata_mode`` defaults to ``LLM`` (above); answers
    are stripped and an empty answer adds no key; the embed budget (module docstring); per-node
    caching with dependencies (:meth:`cache_contexts`); failures per document.

    Raises:
        ValueError: a field out of range (named in the message).
    """

    is_text_node_only: bool = True
    show_progress: bool = True
    metadata_mode: MetadataMode = MetadataMode.LLM
    node_text_template: str = DEFAULT_NODE_TEXT_TEMPLATE
    disable_template_rewrite: bool = False
    in_place: bool = True
    num_workers: int = DEFAULT_NUM_WORKERS
    max_retries: int = 0
    retry_backoff: float = 1.0
    raise_on_error: bool = True

    def __init__(self, **data: Any) -> None:
        super().__init__(**data)
        check_int(self.num_workers, "num_workers", 1)
        check_int(self.max_retries, "max_retries", 0)
        if isinstance(self.retry_backoff, bool) or not isinstance(self.retry_backoff, (int, float)) \
                or self.retry_backoff < 0:
            raise ValueError(f"retry_backoff must be a number of seconds >= 0, got {self.retry_backoff!r}")
        try:
            self.metadata_mode = MetadataMode(self.metadata_mode)
        except ValueError:
            raise ValueError(f"metadata_mode must be one of {[m.value for m in MetadataMode]}, "
                             f"got {self.metadata_mode!r}") from None
        template = self.node_text_template
        if not isinstance(template, str) or template.count("{content}") != 1:
            raise ValueError(f"node_text_template must be a str with '{{content}}' exactly once, got {template!r}")
        try:
            template.format(content="", metadata_str="")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(f"node_text_template may use only {{metadata_str}} and {{content}}: {exc}") from None

    @classmethod
    def class_name(cls) -> str:
        return "MetadataExtractor" if cls is BaseExtractor else cls.__name__

    def to_config(self) -> Dict[str, Any]:
        """What decides the extracted metadata: the fields, the LLM's identity (:func:`llm_identity`),
        without the fields that only change how it runs (``num_workers``, ``show_progress``,
        ``in_place``, retries, ``raise_on_error``)."""
        cfg = super().to_config()
        for name in _RUN_FIELDS:
            cfg.pop(name, None)
        if "llm" in cfg:
            cfg["llm"] = llm_identity(getattr(self, "llm", None))
        return cfg

    # -- LlamaIndex's API --------------------------------------------------------------------
    async def aextract(self, nodes: Sequence[BaseNode]) -> List[Dict[str, Any]]:
        """One metadata ``dict`` per node, in order (a subclass implements this or :meth:`extract`).

        Raises:
            DocumentError: (built-in extractors) an LLM call failed, with ``raise_on_error``.
            NotImplementedError: the subclass implements neither method.
        """
        if type(self).extract is BaseExtractor.extract:
            raise NotImplementedError(f"{type(self).__name__} must implement extract() or aextract()")
        return await asyncio.to_thread(self.extract, nodes)

    def extract(self, nodes: Sequence[BaseNode]) -> List[Dict[str, Any]]:
        """Blocking :meth:`aextract`."""
        if type(self).aextract is BaseExtractor.aextract:
            raise NotImplementedError(f"{type(self).__name__} must implement extract() or aextract()")
        from ragloom.response_synthesizers.base import run_async

        return list(run_async(self.aextract(list(nodes))))

    def process_nodes(
        self,
        nodes: Sequence[BaseNode],
        excluded_embed_metadata_keys: Optional[List[str]] = None,
        excluded_llm_metadata_keys: Optional[List[str]] = None,
        **kwargs: Any,
    ) -> List[BaseNode]:
        """Extract and merge into ``node.metadata``; returns the nodes (the same objects with
        ``in_place``).  ``excluded_*_metadata_keys`` are added to every node's exclusions.  The keys
        added then go through the embed budget of ``embed_model=`` (keyword; default
        ``Settings.embed_model``).  Other keyword arguments (a pipeline's ``show_progress`` …)
        are accepted.

        Raises:
            DocumentError: an extraction failed, with ``raise_on_error``.
        """
        nodes = list(nodes)
        show = bool(kwargs.get("show_progress", self.show_progress))
        budget = self.embed_budget(kwargs.get("embed_model"))
        outcomes = self._outcomes(list(range(len(nodes))), nodes, None, show)
        return self._finish(nodes, outcomes, budget, excluded_embed_metadata_keys, excluded_llm_metadata_keys)[0]

    async def aprocess_nodes(
        self,
        nodes: Sequence[BaseNode],
        excluded_embed_metadata_keys: Optional[List[str]] = None,
        excluded_llm_metadata_keys: Optional[List[str]] = None,
        **kwargs: Any,
    ) -> List[BaseNode]:
        """Async :meth:`process_nodes` (LLM calls through ``LLM.apredict``)."""
        nodes = list(nodes)
        show = bool(kwargs.get("show_progress", self.show_progress))
        budget = await asyncio.to_thread(self.embed_budget, kwargs.get("embed_model"))
        outcomes = await self._aoutcomes(list(range(len(nodes))), nodes, show)
        return self._finish(nodes, outcomes, budget, excluded_embed_metadata_keys, excluded_llm_metadata_keys)[0]

    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[BaseNode]:
        """:meth:`process_nodes`, so extractors chain with parsers and embed models."""
        return self.process_nodes(nodes, **kwargs)

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[BaseNode]:
        return await self.aprocess_nodes(nodes, **kwargs)

    # -- the ingestion engine's protocol -------------------------------------------------------
    def embed_budget(self, embed_model: Any = None) -> Optional[EmbedBudget]:
        """What the embed view of processed nodes must fit: ``embed_model``'s ``max_text_tokens``
        in its ``get_tokenizer()`` (default ``Settings.embed_model``, the model that embeds nodes
        written without one in the pipeline); ``None`` (no check) when the model states no limit
        or no tokenizer.  The ingestion engine passes the first embed model after the extractor."""
        if embed_model is None:
            from ragloom.settings import Settings

            embed_model = Settings.embed_model
        limit = embed_model.max_text_tokens
        tok = embed_model.get_tokenizer()
        if limit is None or tok is None:
            return None
        from ragloom.tokenizers import get_tokenizer

        return EmbedBudget(get_tokenizer(tok), int(limit))

    def cache_contexts(self, nodes: Sequence[BaseNode], budget: Optional[EmbedBudget]) -> List[str]:
        """Per node of ``nodes`` (one step's nodes, in order): what its output depends on besides
        the node itself and :meth:`to_config` — the embed budget and :meth:`dependencies` — for
        its cache key (:func:`~ragloom.ingestion.cache.node_transform_key`)."""
        tag = budget.identity if budget is not None else "unlimited"
        return [f"{tag}\x00{dep}" for dep in self.dependencies(nodes)]

    def dependencies(self, nodes: Sequence[BaseNode]) -> List[str]:
        """Per node: a digest of the *other* nodes of ``nodes`` its metadata depends on (``""``:
        none).  The default is none; an extractor whose output for a node reads other nodes must
        override it (a custom one that does not is cached as if it did not)."""
        return [""] * len(nodes)

    def run_step(
        self,
        nodes: Sequence[BaseNode],
        context_nodes: Sequence[BaseNode],
        budget: Optional[EmbedBudget],
        show_progress: bool = False,
        cache: Any = None,
        cache_collection: Optional[str] = None,
    ) -> Tuple[List[BaseNode], List[bool]]:
        """Process ``nodes`` (objects taken from ``context_nodes``) with ``context_nodes`` as their
        surroundings (their documents' other nodes); returns the outputs in order and, per output,
        whether it may be cached (``False`` for one kept without metadata after a failure).  LLM
        answers are kept in ``cache`` (an ``IngestionCache``) by prompt when given.

        Raises:
            DocumentError: an extraction failed, with ``raise_on_error``.
            ValueError: a node of ``nodes`` is not in ``context_nodes``.
        """
        position = {id(n): i for i, n in enumerate(context_nodes)}
        missing = [n.id_ for n in nodes if id(n) not in position]
        if missing:
            raise ValueError(f"nodes {missing[:3]} are not among context_nodes")
        targets = [position[id(n)] for n in nodes]
        answers = _Answers(cache, cache_collection, self._llm()) if cache is not None else None
        outcomes = self._outcomes(targets, list(context_nodes), answers, show_progress)
        return self._finish(list(nodes), outcomes, budget, None, None)

    # -- running -------------------------------------------------------------------------------
    def _llm(self) -> Any:
        """The LLM this extractor calls, or ``None``."""
        return None

    def _outcomes(self, targets: List[int], context: List[BaseNode], answers: Optional[_Answers],
                  show: bool) -> List[Outcome]:
        """One :data:`Outcome` per target (a position in ``context``); a custom extractor's
        :meth:`extract` on the target nodes."""
        return self._checked(self.extract([context[i] for i in targets]), len(targets))

    async def _aoutcomes(self, targets: List[int], context: List[BaseNode], show: bool) -> List[Outcome]:
        return self._checked(await self.aextract([context[i] for i in targets]), len(targets))

    def _checked(self, dicts: Sequence[Outcome], n: int) -> List[Outcome]:
        out: List[Outcome] = list(dicts)
        if len(out) != n:
            raise RuntimeError(f"{type(self).__name__}.extract returned {len(out)} dicts for {n} nodes")
        return out

    def _settle(self, nodes: Sequence[BaseNode],
                outcomes: Sequence[Outcome]) -> Tuple[List[Dict[str, Any]], List[bool]]:
        """The metadata per node and whether it succeeded; raises for the first failure with
        ``raise_on_error``."""
        failed = [(n, o) for n, o in zip(nodes, outcomes, strict=True) if isinstance(o, BaseException)]
        if failed and self.raise_on_error:
            node, exc = failed[0]
            raise DocumentError(source_of(node), f"{self.class_name()} failed: {exc}") from exc
        if failed:
            logger.warning("%s: extraction failed for %d of %d nodes (documents %s); they get none of its metadata "
                           "and are not cached: %s", self.class_name(), len(failed), len(nodes),
                           sorted({source_of(n) for n, _ in failed})[:5], failed[0][1])
        dicts = [{} if isinstance(o, BaseException) else dict(o) for o in outcomes]
        return dicts, [not isinstance(o, BaseException) for o in outcomes]

    def _finish(
        self,
        nodes: List[BaseNode],
        outcomes: Sequence[Outcome],
        budget: Optional[EmbedBudget],
        excluded_embed: Optional[List[str]],
        excluded_llm: Optional[List[str]],
    ) -> Tuple[List[BaseNode], List[bool]]:
        """Merge the metadata, exclusions and template into each node, then fit the embed budget."""
        dicts, ok = self._settle(nodes, outcomes)
        left_out: Dict[str, int] = {}
        out: List[BaseNode] = []
        for node, meta in zip(nodes, dicts, strict=True):
            if self.is_text_node_only and not isinstance(node, TextNode):
                out.append(node)
                continue
            new, dropped = self._merge(node, meta, budget, excluded_embed, excluded_llm)
            for key in dropped:
                left_out[key] = left_out.get(key, 0) + 1
            out.append(new)
        if left_out and budget is not None:
            logger.warning(
                "%s: %s left out of the embedded text of some nodes (%s of %d): with them the text would exceed "
                "the embed model's %d tokens. The values stay in node.metadata (and the LLM's view unless "
                "excluded there); lower the splitter's chunk_size to leave room for them.",
                self.class_name(), sorted(left_out), ", ".join(f"{k}: {v}" for k, v in sorted(left_out.items())),
                len(nodes), budget.max_tokens)
        return out, ok

    def _llm_hidden_keys(self, meta: Dict[str, Any]) -> List[str]:
        """Keys of ``meta`` to hide from the LLM's view (``QuestionsAnsweredExtractor(embedding_only=True)``)."""
        return []

    def _merge(self, node: BaseNode, meta: Dict[str, Any], budget: Optional[EmbedBudget],
               excluded_embed: Optional[List[str]], excluded_llm: Optional[List[str]]) -> Tuple[BaseNode, List[str]]:
        """``node`` (or a copy) with ``meta`` merged; returns it and the added keys left out of its
        embed view for the budget.  New containers are assigned (never mutated), because chunks of
        one document may share their metadata and exclusion lists."""
        target = node if self.in_place else node.copy()
        old_template = target.text_template if isinstance(target, TextNode) else None
        target.metadata = {**target.metadata, **meta}
        target.excluded_embed_metadata_keys = _union(target.excluded_embed_metadata_keys, excluded_embed or ())
        target.excluded_llm_metadata_keys = _union(target.excluded_llm_metadata_keys,
                                                   [*(excluded_llm or ()), *self._llm_hidden_keys(meta)])
        if isinstance(target, TextNode) and not self.disable_template_rewrite:
            target.text_template = self.node_text_template
        if budget is None:
            return target, []
        return target, _fit(target, list(meta), old_template, budget)


def _union(keys: Sequence[str], more: Iterable[str]) -> List[str]:
    out = list(keys)
    out.extend(k for k in dict.fromkeys(more) if k not in out)
    return out


def _fit(node: BaseNode, added: List[str], old_template: Optional[str], budget: EmbedBudget) -> List[str]:
    """Make ``node``'s embed view fit ``budget``: embed the keys of ``added`` (in order: the
    extractor's priority) that fit, exclude the others; if even none fits with the new template,
    restore ``old_template``.  Returns the keys excluded here.  A node already over budget before
    the extractor stays so (with none of the added keys embedded)."""
    limit = budget.max_tokens

    def fits() -> bool:
        return budget.count(node.get_content(MetadataMode.EMBED)) <= limit

    if fits():
        return []
    base = list(node.excluded_embed_metadata_keys)
    candidates = [k for k in added if k not in base]
    node.excluded_embed_metadata_keys = base + candidates
    if isinstance(node, TextNode) and old_template is not None and node.text_template != old_template and not fits():
        node.text_template = old_template
    kept: List[str] = []
    for key in candidates:
        node.excluded_embed_metadata_keys = base + [k for k in candidates if k != key and k not in kept]
        if fits():
            kept.append(key)
    dropped = [k for k in candidates if k not in kept]
    node.excluded_embed_metadata_keys = base + dropped
    return dropped


class PlannedExtractor(BaseExtractor):
    """Base of the built-in extractors: the work is an :data:`ExtractionPlan` (prompts in stages,
    then metadata), run by a thread driver (:meth:`extract`, the pipeline) or an asyncio driver
    (:meth:`aextract`), both ``num_workers`` calls at a time, answers in order."""

    llm: Any = None

    def _llm(self) -> Any:
        return self.llm

    def plan(self, targets: List[int], context: List[BaseNode]) -> ExtractionPlan:
        """The work for the nodes ``context[t]`` for ``t`` in ``targets``, reading the others of
        ``context`` as their surroundings."""
        raise NotImplementedError

    def extract(self, nodes: Sequence[BaseNode]) -> List[Dict[str, Any]]:
        nodes = list(nodes)
        outcomes = self._outcomes(list(range(len(nodes))), nodes, None, self.show_progress)
        return self._settle(nodes, outcomes)[0]

    async def aextract(self, nodes: Sequence[BaseNode]) -> List[Dict[str, Any]]:
        nodes = list(nodes)
        outcomes = await self._aoutcomes(list(range(len(nodes))), nodes, self.show_progress)
        return self._settle(nodes, outcomes)[0]

    def _prompt(self, template: str, **values: Any) -> str:
        from ragloom.prompts.base import PromptTemplate

        return PromptTemplate(template).format(**values)

    # -- drivers ---------------------------------------------------------------------------------
    def _outcomes(self, targets: List[int], context: List[BaseNode], answers: Optional[_Answers],
                  show: bool) -> List[Outcome]:
        plan = self.plan(targets, context)
        try:
            prompts = next(plan)
            while True:
                prompts = plan.send(self._ask(prompts, answers, show))
        except StopIteration as done:
            return self._checked(done.value, len(targets))

    async def _aoutcomes(self, targets: List[int], context: List[BaseNode], show: bool) -> List[Outcome]:
        plan = self.plan(targets, context)
        try:
            prompts = next(plan)
            while True:
                unique = list(dict.fromkeys(prompts))
                got = dict(zip(unique, await self._acall_all(unique, show), strict=True))
                prompts = plan.send([got[p] for p in prompts])
        except StopIteration as done:
            return self._checked(done.value, len(targets))

    def _ask(self, prompts: List[str], answers: Optional[_Answers], show: bool) -> List[Answer]:
        """Answers to ``prompts`` in order: each distinct prompt once, kept answers first."""
        unique = list(dict.fromkeys(prompts))
        got: Dict[str, Answer] = dict(answers.get(unique)) if answers is not None and unique else {}
        todo = [p for p in unique if p not in got]
        if todo:
            results = self._call_all(todo, show)
            got.update(zip(todo, results, strict=True))
            if answers is not None:
                answers.put({p: a for p, a in zip(todo, results, strict=True) if isinstance(a, str)})
        return [got[p] for p in prompts]

    def _bar(self, total: int, show: bool) -> Any:
        if not show or total == 0:
            return None
        from tqdm.auto import tqdm

        return tqdm(total=total, desc=self.class_name(), unit="call")

    def _call_all(self, prompts: List[str], show: bool) -> List[Answer]:
        """``LLM.predict`` over ``prompts`` on up to ``num_workers`` threads; answers in order."""
        bar = self._bar(len(prompts), show)
        try:
            workers = min(self.num_workers, len(prompts))
            if workers <= 1:
                out = []
                for p in prompts:
                    out.append(self._call_one(p))
                    if bar is not None:
                        bar.update(1)
                return out
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="ragloom-extractor") as pool:
                futures = [pool.submit(self._call_one, p) for p in prompts]
                if bar is not None:
                    for fut in futures:
                        fut.add_done_callback(lambda _f: bar.update(1))
                return [f.result() for f in futures]
        finally:
            if bar is not None:
                bar.close()

    def _call_one(self, prompt: str) -> Answer:
        for attempt in range(self.max_retries + 1):
            try:
                return self.llm.predict(prompt)
            except Exception as exc:  # an LLM failure is this node's outcome, not the run's
                if attempt >= self.max_retries:
                    return exc
                time.sleep(self.retry_backoff * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    async def _acall_all(self, prompts: List[str], show: bool) -> List[Answer]:
        """``LLM.apredict`` over ``prompts``, at most ``num_workers`` at a time; answers in order."""
        gate = asyncio.Semaphore(self.num_workers)
        bar = self._bar(len(prompts), show)

        async def one(prompt: str) -> Answer:
            async with gate:
                for attempt in range(self.max_retries + 1):
                    try:
                        answer: Answer = await self.llm.apredict(prompt)
                        break
                    except Exception as exc:
                        answer = exc
                        if attempt < self.max_retries:
                            await asyncio.sleep(self.retry_backoff * 2**attempt)
            if bar is not None:
                bar.update(1)
            return answer

        try:
            return list(await asyncio.gather(*(one(p) for p in prompts)))
        finally:
            if bar is not None:
                bar.close()
