"""Core data types: documents, nodes, relationships and query objects.

The names, fields and methods follow LlamaIndex (``llama_index.core.schema``) so
that scripts port by changing imports.

Why ``msgspec.Struct`` and not pydantic: an ingestion run creates one object per
chunk, and corpora reach millions of chunks.  ``msgspec`` structs are slotted C
objects: constructing one costs ~0.1 µs instead of ~2 µs for a pydantic v2 model,
they use a fraction of the memory (no per-instance ``__dict__``), and
``msgspec.json`` encodes and decodes them 5-10x faster than pydantic, which
matters for the docstore.  Types are validated when decoding JSON, not on every
construction (the hot path of a splitter).
"""

from __future__ import annotations

import copy
import datetime
import decimal
import hashlib
import json
import uuid
from abc import ABC, abstractmethod
from enum import Enum
from typing import Any, Collection, Dict, FrozenSet, List, Optional, Sequence, Set, Type, TypeVar, Union

import msgspec

__all__ = [
    "MetadataMode",
    "NodeRelationship",
    "ObjectType",
    "RelatedNodeInfo",
    "BaseNode",
    "TextNode",
    "Document",
    "NodeWithScore",
    "QueryBundle",
    "TransformComponent",
    "DEFAULT_METADATA_TMPL",
    "DEFAULT_TEXT_NODE_TMPL",
]

DEFAULT_METADATA_TMPL = "{key}: {value}"
DEFAULT_TEXT_NODE_TMPL = "{metadata_str}\n\n{content}"


class MetadataMode(str, Enum):
    """Which metadata a consumer sees: everything, the embed model's view, the LLM's view, or none."""

    ALL = "all"
    EMBED = "embed"
    LLM = "llm"
    NONE = "none"


class NodeRelationship(str, Enum):
    """Relationship of a node to another node (values match LlamaIndex's, so stored JSON is compatible)."""

    SOURCE = "1"
    PREVIOUS = "2"
    NEXT = "3"
    PARENT = "4"
    CHILD = "5"


class ObjectType(str, Enum):
    TEXT = "1"
    IMAGE = "2"
    INDEX = "3"
    DOCUMENT = "4"


def _new_id() -> str:
    return str(uuid.uuid4())


#: Values :meth:`BaseNode.model_dump` keeps as Python objects in ``mode="python"`` (pydantic does too).
_PYTHON_DUMP_TYPES = (
    bytes, bytearray, datetime.datetime, datetime.date, datetime.time, datetime.timedelta, uuid.UUID, decimal.Decimal,
)
#: LlamaIndex's field aliases (``model_dump(by_alias=True)``).
_DUMP_ALIASES = {"metadata": "extra_info", "metadata_separator": "metadata_seperator"}


def _key_set(name: str, keys: Collection[str]) -> FrozenSet[str]:
    """``keys`` (a collection of top-level key names) as a set; ``ValueError`` for a string or a dict."""
    if isinstance(keys, (str, bytes, dict)):
        raise ValueError(f"{name} must be a collection of top-level key names such as {{'embedding'}}, got {keys!r}")
    return frozenset(keys)


def metadata_json(metadata: Dict[str, Any]) -> bytes:
    """The metadata part of :attr:`BaseNode.hash`: ``metadata`` as JSON (UTF-8 bytes) with sorted keys.

    UTF-8 has no form for a lone surrogate (``"\\udc80"``, from a file name decoded with
    ``surrogateescape``, say), which ``msgspec`` refuses; metadata holding one is written by the
    standard library's ``json`` instead, with the surrogates encoded as ``surrogatepass`` (as the
    text half of the hash encodes them).  Those bytes are never valid UTF-8, so they never equal the
    form of metadata without surrogates, whose bytes (and so hashes) are ``msgspec``'s as before.
    The ingestion engine replaces such surrogates before it hashes or stores anything.

    Raises:
        TypeError: a value has no JSON form (a custom object), or (with a surrogate) a key is not a
            string.
        msgspec.EncodeError: a value ``msgspec`` cannot encode (an int beyond 64 bits, say).
    """
    try:
        return msgspec.json.encode(metadata, order="sorted")
    except UnicodeEncodeError:
        text = json.dumps(metadata, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                          default=msgspec.to_builtins)
        return text.encode("utf-8", "surrogatepass")


class RelatedNodeInfo(msgspec.Struct, kw_only=True):
    """A pointer from one node to another: its id, type, (copied) metadata and hash."""

    node_id: str
    node_type: Optional[str] = None
    metadata: Dict[str, Any] = {}
    hash: Optional[str] = None


RelatedNodeType = Union[RelatedNodeInfo, List[RelatedNodeInfo]]


class BaseNode(msgspec.Struct, kw_only=True, tag_field="class_name"):
    """Base of every node.

    Fields (LlamaIndex names): ``id_``, ``embedding`` (``list[float]`` of the embed
    model's dimension, or ``None``), ``metadata``, ``excluded_embed_metadata_keys``,
    ``excluded_llm_metadata_keys``, ``relationships``, ``metadata_template``,
    ``metadata_separator``.
    """

    id_: str = msgspec.field(default_factory=_new_id)
    embedding: Optional[List[float]] = None
    metadata: Dict[str, Any] = {}
    excluded_embed_metadata_keys: List[str] = []
    excluded_llm_metadata_keys: List[str] = []
    relationships: Dict[NodeRelationship, Union[RelatedNodeInfo, List[RelatedNodeInfo]]] = {}
    metadata_template: str = DEFAULT_METADATA_TMPL
    metadata_separator: str = "\n"

    # -- identity -----------------------------------------------------------------
    @classmethod
    def class_name(cls) -> str:
        return cls.__name__

    def get_type(self) -> str:
        return ObjectType.TEXT.value

    @property
    def node_id(self) -> str:
        return self.id_

    @node_id.setter
    def node_id(self, value: str) -> None:
        self.id_ = value

    # -- content ------------------------------------------------------------------
    @abstractmethod
    def get_content(self, metadata_mode: MetadataMode = MetadataMode.NONE) -> str: ...

    @abstractmethod
    def set_content(self, value: Any) -> None: ...

    def _visible_metadata(self, mode: MetadataMode) -> Dict[str, Any]:
        if mode == MetadataMode.NONE:
            return {}
        excluded: set[str] = set()
        if mode == MetadataMode.EMBED:
            excluded = set(self.excluded_embed_metadata_keys)
        elif mode == MetadataMode.LLM:
            excluded = set(self.excluded_llm_metadata_keys)
        return {k: v for k, v in self.metadata.items() if k not in excluded}

    def get_metadata_str(self, mode: MetadataMode = MetadataMode.ALL) -> str:
        """Render the metadata visible in ``mode`` with ``metadata_template`` joined by ``metadata_separator``."""
        visible = self._visible_metadata(MetadataMode(mode))
        return self.metadata_separator.join(
            self.metadata_template.format(key=k, value=str(v)) for k, v in visible.items()
        )

    @property
    def content_metadata(self) -> Dict[str, Any]:
        """Metadata that affects content: every key not excluded from *both* the embed and the LLM view.

        Keys hidden from both (file dates, for example) are bookkeeping; they do not
        enter :attr:`hash`, so touching a file does not make it "changed".
        """
        both = set(self.excluded_embed_metadata_keys) & set(self.excluded_llm_metadata_keys)
        return {k: v for k, v in self.metadata.items() if k not in both}

    @property
    def hash(self) -> str:
        """SHA-256 (hex) of the text and :attr:`content_metadata`."""
        h = hashlib.sha256()
        h.update(self.get_content(MetadataMode.NONE).encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
        h.update(metadata_json(self.content_metadata))
        return h.hexdigest()

    # -- relationships --------------------------------------------------------------
    def _single_rel(self, rel: NodeRelationship) -> Optional[RelatedNodeInfo]:
        info = self.relationships.get(rel)
        if info is None:
            return None
        if isinstance(info, list):
            raise ValueError(f"relationship {rel.name} holds a list; expected a single node")
        return info

    @property
    def source_node(self) -> Optional[RelatedNodeInfo]:
        return self._single_rel(NodeRelationship.SOURCE)

    @property
    def prev_node(self) -> Optional[RelatedNodeInfo]:
        return self._single_rel(NodeRelationship.PREVIOUS)

    @property
    def next_node(self) -> Optional[RelatedNodeInfo]:
        return self._single_rel(NodeRelationship.NEXT)

    @property
    def parent_node(self) -> Optional[RelatedNodeInfo]:
        return self._single_rel(NodeRelationship.PARENT)

    @property
    def child_nodes(self) -> Optional[List[RelatedNodeInfo]]:
        info = self.relationships.get(NodeRelationship.CHILD)
        if info is None:
            return None
        if not isinstance(info, list):
            raise ValueError("relationship CHILD must hold a list")
        return info

    @property
    def ref_doc_id(self) -> Optional[str]:
        """Id of the document this node came from (its SOURCE relationship), or ``None``."""
        src = self.source_node
        return src.node_id if src is not None else None

    def as_related_node_info(self) -> RelatedNodeInfo:
        return RelatedNodeInfo(
            node_id=self.id_, node_type=self.get_type(), metadata=dict(self.metadata), hash=self.hash
        )

    def get_embedding(self) -> List[float]:
        if self.embedding is None:
            raise ValueError(f"node {self.id_} has no embedding")
        return self.embedding

    # -- serialisation --------------------------------------------------------------
    def to_dict(self) -> Dict[str, Any]:
        """Plain-JSON-types dict including ``class_name``; inverse of :meth:`from_dict`."""
        return msgspec.to_builtins(self)

    def to_json(self) -> str:
        return msgspec.json.encode(self).decode("utf-8")

    @classmethod
    def from_dict(cls, data: Dict[str, Any]) -> "BaseNode":
        data = dict(data)
        data.setdefault("class_name", cls.class_name())
        for name, alias in _DUMP_ALIASES.items():  # LlamaIndex's aliases (model_dump(by_alias=True))
            if alias in data and name not in data:
                data[name] = data.pop(alias)
        return msgspec.convert(data, type=_decode_type(cls))

    @classmethod
    def from_json(cls, data: Union[str, bytes]) -> "BaseNode":
        return msgspec.json.decode(data, type=_decode_type(cls))

    def copy(self) -> "BaseNode":
        return msgspec.structs.replace(self)

    # -- pydantic-style methods (LlamaIndex nodes are pydantic models) --------------------
    def model_dump(
        self,
        *,
        mode: str = "python",
        include: Optional[Collection[str]] = None,
        exclude: Optional[Collection[str]] = None,
        by_alias: bool = False,
        exclude_none: bool = False,
    ) -> Dict[str, Any]:
        """The node as a dict with LlamaIndex's keys: every field (``id_``, ``embedding``,
        ``metadata``, ``excluded_embed_metadata_keys``, ``excluded_llm_metadata_keys``,
        ``relationships``, ``metadata_template``, ``metadata_separator``, and for text nodes
        ``text``, ``mimetype``, ``start_char_idx``, ``end_char_idx``, ``text_template``) plus
        ``class_name``.  ``relationships`` is keyed by the relationship's value (``"1"`` for
        SOURCE …), each entry a dict with ``node_id``, ``node_type``, ``metadata``, ``hash`` and
        ``class_name: "RelatedNodeInfo"``, as pydantic dumps LlamaIndex's nodes.
        :meth:`from_dict` reads it back.

        Args:
            mode: ``"python"`` (metadata values such as ``datetime`` stay objects) or ``"json"``
                (JSON types only, as :meth:`model_dump_json` writes them).
            include / exclude: top-level keys to keep / drop (nested include/exclude specs,
                which pydantic also takes, are not supported).
            by_alias: use LlamaIndex's aliases ``extra_info`` (for ``metadata``) and
                ``metadata_seperator`` (sic, for ``metadata_separator``).
            exclude_none: drop top-level keys whose value is ``None``.

        Differences from LlamaIndex: a ragloom ``Document`` is a text node, so its dump has
        ``text`` (as LlamaIndex's does) but no ``text_resource``/``image_resource``/
        ``audio_resource``/``video_resource``; ``exclude_unset``/``exclude_defaults``/
        ``round_trip`` are not taken (``TypeError``).

        Raises:
            ValueError: ``mode`` is not ``"python"`` or ``"json"``; ``include``/``exclude`` is a
                string or a dict (give a collection of key names).
            TypeError: a metadata value (``mode="json"``: also a value with no JSON form) that
                cannot be converted, as :meth:`to_dict`.
        """
        if mode == "json":
            data: Dict[str, Any] = msgspec.json.decode(msgspec.json.encode(self))
        elif mode == "python":
            data = msgspec.to_builtins(self, builtin_types=_PYTHON_DUMP_TYPES)
        else:
            raise ValueError(f"mode must be 'python' or 'json', got {mode!r}")
        for value in (data.get("relationships") or {}).values():
            for info in value if isinstance(value, list) else [value]:
                info["class_name"] = "RelatedNodeInfo"
        if include is not None:
            keep = _key_set("include", include)
            data = {k: v for k, v in data.items() if k in keep}
        if exclude is not None:
            drop = _key_set("exclude", exclude)
            data = {k: v for k, v in data.items() if k not in drop}
        if exclude_none:
            data = {k: v for k, v in data.items() if v is not None}
        if by_alias:
            data = {_DUMP_ALIASES.get(k, k): v for k, v in data.items()}
        return data

    def model_dump_json(
        self,
        *,
        indent: Optional[int] = None,
        include: Optional[Collection[str]] = None,
        exclude: Optional[Collection[str]] = None,
        by_alias: bool = False,
        exclude_none: bool = False,
    ) -> str:
        """:meth:`model_dump` (``mode="json"``) as a JSON string, non-ASCII characters written as
        they are (as pydantic does); ``indent`` spaces per level (``None``: one line).

        Raises:
            ValueError: ``indent`` is not ``None`` or an int >= 0; as :meth:`model_dump`.
        """
        if indent is not None and (isinstance(indent, bool) or not isinstance(indent, int) or indent < 0):
            raise ValueError(f"indent must be None or an int >= 0, got {indent!r}")
        data = self.model_dump(mode="json", include=include, exclude=exclude, by_alias=by_alias,
                               exclude_none=exclude_none)
        raw = msgspec.json.encode(data)
        if indent:
            raw = msgspec.json.format(raw, indent=indent)
        return raw.decode("utf-8")

    def model_copy(self, *, update: Optional[Dict[str, Any]] = None, deep: bool = False) -> "BaseNode":
        """A copy of the node, with the fields in ``update`` replaced (not validated, as in
        pydantic).  ``deep=False`` shares mutable values (``metadata``, ``relationships``,
        ``embedding``) with this node; ``deep=True`` copies them too (``copy.deepcopy``).

        Raises:
            TypeError: a key of ``update`` that is not a field of this node type.
        """
        node = copy.deepcopy(self) if deep else self
        return msgspec.structs.replace(node, **(update or {}))

    def dict(self, **kwargs: Any) -> Dict[str, Any]:
        """:meth:`model_dump` (LlamaIndex's older name for it); same arguments."""
        return self.model_dump(**kwargs)

    def json(self, **kwargs: Any) -> str:
        """:meth:`model_dump_json` (LlamaIndex's older name for it); same arguments."""
        return self.model_dump_json(**kwargs)

    def __str__(self) -> str:
        text = self.get_content(MetadataMode.NONE)
        if len(text) > 350:
            text = text[:347] + "..."
        return f"Node ID: {self.id_}\nText: {text}"


class TextNode(BaseNode, kw_only=True, tag="TextNode"):
    """A chunk of text with character offsets into its source document.

    ``start_char_idx``/``end_char_idx`` are character (not byte) offsets such that
    ``document.text[start_char_idx:end_char_idx] == node.text`` for nodes made by
    ragloom's splitters.
    """

    text: str = ""
    mimetype: str = "text/plain"
    start_char_idx: Optional[int] = None
    end_char_idx: Optional[int] = None
    text_template: str = DEFAULT_TEXT_NODE_TMPL

    def get_content(self, metadata_mode: MetadataMode = MetadataMode.NONE) -> str:
        """Text as seen by a consumer: ``text_template`` filled with the visible metadata, or the bare text."""
        if metadata_mode == MetadataMode.NONE:  # the bare text, without rendering the metadata
            return self.text
        metadata_str = self.get_metadata_str(MetadataMode(metadata_mode)).strip()
        if not metadata_str:
            return self.text
        return self.text_template.format(content=self.text, metadata_str=metadata_str).strip()

    def set_content(self, value: str) -> None:
        self.text = value

    def get_text(self) -> str:
        return self.get_content(MetadataMode.NONE)

    def get_node_info(self) -> Dict[str, Any]:
        return {"start": self.start_char_idx, "end": self.end_char_idx}


_D = TypeVar("_D")


class _DocumentMeta(type(msgspec.Struct)):  # type: ignore[misc]
    """Lets ``Document(...)`` take LlamaIndex's older argument names (decoding stored documents
    does not pass through here)."""

    def __call__(cls: Type[_D], *args: Any, **kwargs: Any) -> _D:
        for old, new in (("doc_id", "id_"), ("extra_info", "metadata")):
            if old in kwargs:
                if new in kwargs:
                    raise ValueError(f"give one of {old}= and {new}= (they name the same field), not both")
                kwargs[new] = kwargs.pop(old)
        return super().__call__(*args, **kwargs)  # type: ignore[misc]


class Document(TextNode, metaclass=_DocumentMeta, kw_only=True, tag="Document"):
    """A whole source text (a file, a PDF page, a record) before splitting.

    Readers give documents stable ids (the file path by default), so re-reading a
    folder yields the same ids.

    As in LlamaIndex, ``Document(doc_id=...)`` sets ``id_`` and ``Document(extra_info=...)``
    sets ``metadata`` (older names); :attr:`doc_id` reads and sets ``id_``.  Unlike LlamaIndex
    (which logs a warning and keeps ``id_``), giving both names of one field raises
    ``ValueError``.
    """

    def get_type(self) -> str:
        return ObjectType.DOCUMENT.value

    @property
    def doc_id(self) -> str:
        return self.id_

    @doc_id.setter
    def doc_id(self, value: str) -> None:
        self.id_ = value

    def get_doc_id(self) -> str:
        return self.id_

    @classmethod
    def example(cls) -> "Document":
        return cls(
            text="ragloom turns a folder of documents into a searchable index.", metadata={"filename": "README.md"}
        )


_NODE_TYPES: Dict[str, type] = {}


def register_node_type(cls: type) -> type:
    """Register a node subclass so JSON holding its ``class_name`` decodes to it."""
    _NODE_TYPES[cls.__name__] = cls
    return cls


register_node_type(TextNode)
register_node_type(Document)


def _decode_type(cls: type) -> Any:
    if cls is BaseNode or cls not in _NODE_TYPES.values():
        types = tuple(_NODE_TYPES.values())
        return Union[types]
    subs = tuple(t for t in _NODE_TYPES.values() if issubclass(t, cls))
    return Union[subs] if len(subs) > 1 else subs[0]


def node_from_json(data: Union[str, bytes]) -> BaseNode:
    """Decode any registered node type from JSON produced by :meth:`BaseNode.to_json`."""
    return msgspec.json.decode(data, type=_decode_type(BaseNode))


class NodeWithScore(msgspec.Struct, kw_only=True):
    """A retrieved node and its similarity score (higher is more similar; ``None`` if unscored)."""

    node: BaseNode
    score: Optional[float] = None

    def get_score(self, raise_error: bool = False) -> float:
        if self.score is None:
            if raise_error:
                raise ValueError("score is not set")
            return 0.0
        return self.score

    @property
    def node_id(self) -> str:
        return self.node.node_id

    @property
    def id_(self) -> str:
        return self.node.id_

    @property
    def text(self) -> str:
        return self.node.get_content(MetadataMode.NONE)

    @property
    def metadata(self) -> Dict[str, Any]:
        return self.node.metadata

    def get_content(self, metadata_mode: MetadataMode = MetadataMode.NONE) -> str:
        return self.node.get_content(metadata_mode)

    def get_text(self) -> str:
        return self.text

    def __str__(self) -> str:
        return f"{self.node}\nScore: {self.get_score():.4f}"


class QueryBundle(msgspec.Struct):
    """A query: its string, optional precomputed ``embedding`` (``list[float]``) and strings to embed instead.

    The fields are LlamaIndex's, in its order, so ``QueryBundle("what is X?")`` works as there
    (``query_str``, ``image_path``, ``custom_embedding_strs``, ``embedding``).
    """

    query_str: str
    image_path: Optional[str] = None
    custom_embedding_strs: Optional[List[str]] = None
    embedding: Optional[List[float]] = None

    @property
    def embedding_strs(self) -> List[str]:
        if self.custom_embedding_strs is None:
            return [self.query_str] if self.query_str else []
        return self.custom_embedding_strs

    def __str__(self) -> str:
        return self.query_str


QueryType = Union[str, QueryBundle]


def _config_value(value: Any) -> Any:
    """``value`` if it is plain JSON data (recursively), else its type's qualified name."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_config_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _config_value(v) for k, v in value.items()}
    return f"<{type(value).__qualname__}>"


class TransformComponent(ABC):
    """A step of an ingestion pipeline: takes nodes, returns nodes (``list[BaseNode]``).

    Splitters, metadata extractors and embed models are transform components, so
    they chain in :class:`~ragloom.ingestion.IngestionPipeline`.

    As in LlamaIndex (where it is a pydantic model), a subclass may declare its settings as
    annotated class attributes and take them as keyword arguments: ``class Tagger(TransformComponent):
    tag: str = "x"`` then ``Tagger(tag="y")``.  Its public attributes are its :meth:`to_config`, so
    changing one re-runs the step (ingestion cache keys and document fingerprints include it).
    """

    def __init__(self, **data: Any) -> None:
        """Set the declared (annotated) fields given as keyword arguments.

        Raises:
            TypeError: a keyword that is not a declared field.
        """
        fields: Dict[str, Any] = {}
        for cls in reversed(type(self).__mro__):
            fields.update(getattr(cls, "__annotations__", {}))
        for key, value in data.items():
            if key not in fields or key.startswith("_"):
                raise TypeError(f"{type(self).__name__} has no field {key!r} (declared: {sorted(fields)})")
            setattr(self, key, value)

    @abstractmethod
    def __call__(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[BaseNode]: ...

    async def acall(self, nodes: Sequence[BaseNode], **kwargs: Any) -> List[BaseNode]:
        return self.__call__(nodes, **kwargs)

    @classmethod
    def class_name(cls) -> str:
        return cls.__name__

    def to_config(self) -> Dict[str, Any]:
        """Configuration that determines the output (used in node ids, cache keys and document
        fingerprints): the class name and every public attribute, declared field defaults included.
        Values that are not JSON types (str, int, float, bool, None, lists and dicts of them) enter by
        type name only, so an object's address never makes a digest differ between runs; override
        this method when such a value decides the output."""
        cfg: Dict[str, Any] = {"class_name": self.class_name()}
        names: Set[str] = set()
        for cls in type(self).__mro__:
            names.update(k for k in getattr(cls, "__annotations__", {}) if not k.startswith("_"))
        names.update(k for k in vars(self) if not k.startswith("_"))
        for name in sorted(names):
            value = getattr(self, name, None)
            if not callable(value) or isinstance(value, type):
                cfg[name] = _config_value(value)
        return cfg


class IndexNode(TextNode, kw_only=True, tag="IndexNode"):
    """A text node that stands for something else: another index, retriever, query engine or
    node, named by ``index_id`` (LlamaIndex's ``IndexNode``).

    Retrieved like any text node (its ``text`` is typically a summary of what it points to);
    :class:`~ragloom.retrievers.RecursiveRetriever` then follows ``index_id`` to the object
    registered under that id, or to ``obj`` when none is.

    ``obj`` is kept in memory as given.  When the node is serialised (stored in a docstore or a
    vector store) ``obj`` must be JSON-serialisable — ``None``, a node, or plain JSON values; a
    node decodes back to a node.  A live retriever or query engine cannot be stored: register it
    under ``index_id`` in ``RecursiveRetriever(retriever_dict=…/query_engine_dict=…)`` instead
    (serialising such a node raises ``TypeError`` from msgspec).
    """

    index_id: str
    obj: Any = None

    def __post_init__(self) -> None:
        obj = self.obj
        if isinstance(obj, dict) and obj.get("class_name") in _NODE_TYPES:
            self.obj = msgspec.convert(obj, type=_decode_type(BaseNode))

    def get_type(self) -> str:
        return ObjectType.INDEX.value

    @classmethod
    def from_text_node(cls, node: TextNode, index_id: str) -> "IndexNode":
        """An ``IndexNode`` with every field of ``node`` (same id, text, metadata, relationships)
        plus ``index_id``."""
        fields = {f: getattr(node, f) for f in TextNode.__struct_fields__}
        return cls(**fields, index_id=index_id)


register_node_type(IndexNode)
__all__.append("IndexNode")
