"""Event types and payload keys of the callback system (LlamaIndex's
``llama_index.core.callbacks.schema``).

An *event* is a pair of calls a :class:`~ragloom.callbacks.CallbackManager` sends its handlers:
``on_event_start(event_type, payload, event_id, parent_id)`` when a step begins and
``on_event_end(event_type, payload, event_id)`` when it ends (also when it raises: then the end
payload is ``{EventPayload.EXCEPTION: exc}``).  Payloads are dicts keyed by :class:`EventPayload`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from enum import Enum
from typing import Any, Dict, Optional

__all__ = [
    "BASE_TRACE_EVENT",
    "CBEvent",
    "CBEventType",
    "EventPayload",
    "EventStats",
    "LEAF_EVENTS",
    "TIMESTAMP_FORMAT",
]

#: how :attr:`CBEvent.time` is written (local time, microseconds), as LlamaIndex
TIMESTAMP_FORMAT = "%m/%d/%Y, %H:%M:%S.%f"

#: parent id of events that start outside any other (non-leaf) event
BASE_TRACE_EVENT = "root"


class CBEventType(str, Enum):
    """What kind of step an event reports.  Where ragloom emits each (start payload → end payload):

    - ``CHUNKING``: one per source document a node parser split
      (``CHUNKS: [document text]`` → ``CHUNKS: [chunk texts]``).
    - ``NODE_PARSING``: one per ``get_nodes_from_documents`` / ``parser(nodes)`` call
      (``DOCUMENTS`` → ``NODES``).
    - ``EMBEDDING``: one per batch of texts an embed model computes (``SERIALIZED``,
      ``MODEL_NAME`` → ``CHUNKS``, ``EMBEDDINGS``).
    - ``LLM``: one per public LLM call (``PROMPT`` or ``MESSAGES``, ``ADDITIONAL_KWARGS``,
      ``SERIALIZED`` → ``PROMPT`` + ``COMPLETION`` or ``MESSAGES`` + ``RESPONSE``).
    - ``QUERY``: one per query-engine ``query`` (``QUERY_STR`` → ``RESPONSE``).
    - ``RETRIEVE``: one per retriever ``retrieve`` (``QUERY_STR`` → ``NODES``).
    - ``SYNTHESIZE``: one per synthesizer ``synthesize`` (``QUERY_STR`` → ``RESPONSE``).
    - ``TEMPLATING``: when ``LLM.predict`` / ``LLM.stream`` formats a prompt template
      (``TEMPLATE``, ``TEMPLATE_VARS``, ``SYSTEM_PROMPT``, ``QUERY_WRAPPER_PROMPT``).
    - ``RERANKING``: one per reranking postprocessor call (``NODES``, ``MODEL_NAME``,
      ``QUERY_STR``, ``TOP_K`` → ``NODES``).
    - ``TREE``, ``SUB_QUESTION``, ``FUNCTION_CALL``, ``AGENT_STEP``: for components that do
      those steps.
    - ``EXCEPTION``: an exception that escaped a trace without ending an event.
    """

    CHUNKING = "chunking"
    NODE_PARSING = "node_parsing"
    EMBEDDING = "embedding"
    LLM = "llm"
    QUERY = "query"
    RETRIEVE = "retrieve"
    SYNTHESIZE = "synthesize"
    TREE = "tree"
    SUB_QUESTION = "sub_question"
    TEMPLATING = "templating"
    FUNCTION_CALL = "function_call"
    RERANKING = "reranking"
    EXCEPTION = "exception"
    AGENT_STEP = "agent_step"


class EventPayload(str, Enum):
    """Keys of event payloads (values as LlamaIndex spells them)."""

    DOCUMENTS = "documents"  #: nodes given to a node parser
    CHUNKS = "chunks"  #: texts (chunked, or embedded)
    NODES = "nodes"  #: nodes produced, retrieved or reranked
    PROMPT = "formatted_prompt"  #: the prompt string sent to a completion call
    MESSAGES = "messages"  #: the ChatMessage list sent to a chat call
    COMPLETION = "completion"  #: the CompletionResponse of a completion call
    RESPONSE = "response"  #: a ChatResponse (LLM) or a Response (query, synthesize)
    QUERY_STR = "query_str"  #: the query text
    SUB_QUESTION = "sub_question"  #: a sub-question and its answer
    EMBEDDINGS = "embeddings"  #: list of vectors (list[list[float]])
    TOP_K = "top_k"  #: how many nodes a reranker keeps
    ADDITIONAL_KWARGS = "additional_kwargs"  #: extra keyword arguments of an LLM call
    SERIALIZED = "serialized"  #: a small dict describing the component (class and model name)
    FUNCTION_CALL = "function_call"  #: a tool call requested by the LLM
    FUNCTION_OUTPUT = "function_call_response"  #: what the tool returned
    TOOL = "tool"  #: the tool of a function call
    MODEL_NAME = "model_name"  #: the model an event used
    TEMPLATE = "template"  #: a prompt template's text
    TEMPLATE_VARS = "template_vars"  #: the variables it was formatted with
    SYSTEM_PROMPT = "system_prompt"  #: the LLM's system prompt
    QUERY_WRAPPER_PROMPT = "query_wrapper_prompt"  #: a query wrapper prompt (unused by ragloom's LLMs)
    EXCEPTION = "exception"  #: the exception that ended an event
    #: ragloom addition: the :class:`~ragloom.tokenizers.BaseTokenizer` of the model that did the
    #: work (on ``LLM`` and ``EMBEDDING`` end payloads; ``None`` when the model has none), so
    #: :class:`~ragloom.callbacks.TokenCountingHandler` counts in each model's own tokenizer
    TOKENIZER = "tokenizer"


#: events that never contain other events: they are not pushed on the parent stack
LEAF_EVENTS = (CBEventType.CHUNKING, CBEventType.LLM, CBEventType.EMBEDDING)


@dataclass
class CBEvent:
    """One start or end of an event as a handler stores it.

    Attributes:
        event_type: the :class:`CBEventType`.
        payload: the payload dict (or ``None``).
        time: local time formatted with :data:`TIMESTAMP_FORMAT`; now when not given.
        id_: the event id (the start and end of one event share it); a new uuid4 when not given.
    """

    event_type: CBEventType
    payload: Optional[Dict[Any, Any]] = None
    time: str = ""
    id_: str = ""

    def __post_init__(self) -> None:
        if not self.time:
            self.time = datetime.now().strftime(TIMESTAMP_FORMAT)
        if not self.id_:
            self.id_ = str(uuid.uuid4())


@dataclass
class EventStats:
    """Time statistics of a set of event pairs (seconds)."""

    total_secs: float
    average_secs: float
    total_count: int
