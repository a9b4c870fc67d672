"""``PromptHelper``: fit retrieved text into an LLM's context window (LlamaIndex semantics).

All sizes are **tokens of the LLM's tokenizer** (``llm.get_tokenizer()``; ``cl100k_base`` when
none is given).  The room for text in one call is::

    available = context_window - num_output - tokens(prompt with its unfilled variables empty)

- :meth:`PromptHelper.repack` joins text chunks (``"\\n\\n"`` between them) and re-splits the
  result with :class:`~ragloom.node_parser.TokenTextSplitter` (the span engine) into as few
  pieces as fit ``available - padding`` tokens each, cut between words (``separator``), with
  ``chunk_overlap_ratio`` of each piece's budget overlapping the next one.
- :meth:`PromptHelper.truncate` gives each of ``n`` chunks an equal share
  ``available // n - padding`` and cuts each at a token boundary (character offsets from the
  tokenizer: never inside a character), so all of them fit one prompt.

``padding`` (default 5 tokens per piece) absorbs the few tokens by which the tokenization of
a filled prompt can differ from the sum of its parts, and the separators between chunks.
"""

from __future__ import annotations

from typing import Any, List, Optional, Sequence

__all__ = [
    "PromptHelper",
    "DEFAULT_CONTEXT_WINDOW",
    "DEFAULT_NUM_OUTPUTS",
    "DEFAULT_CHUNK_OVERLAP_RATIO",
    "DEFAULT_PADDING",
]

#: LlamaIndex's defaults (a 4k-token model minus a margin; 256 output tokens)
DEFAULT_CONTEXT_WINDOW = 3900
DEFAULT_NUM_OUTPUTS = 256
DEFAULT_CHUNK_OVERLAP_RATIO = 0.1
DEFAULT_PADDING = 5
#: what :meth:`PromptHelper.repack` puts between the chunks it joins
REPACK_JOINER = "\n\n"


def _empty_prompt_text(prompt: Any) -> str:
    """``prompt`` formatted with every variable not yet fixed set to ``""`` (a ``str`` is returned as is)."""
    if isinstance(prompt, str):
        return prompt
    missing = prompt.missing_vars() if hasattr(prompt, "missing_vars") else list(getattr(prompt, "template_vars", []))
    return prompt.format(**{v: "" for v in missing})


class PromptHelper:
    """Token budgeting for prompts (LlamaIndex's ``PromptHelper``).

    Args:
        context_window: tokens the model accepts, prompt and answer together; >= 1.
        num_output: tokens reserved for the answer; 0 <= num_output < context_window.
        chunk_overlap_ratio: overlap between consecutive pieces of :meth:`repack`, as a
            fraction of the piece size; in [0, 1).
        chunk_size_limit: cap on the size of one piece (tokens); None or >= 1.
        tokenizer: what sizes are measured in: a :class:`~ragloom.tokenizers.Tokenizer`, a
            name (``"cl100k_base"``, ``"gpt-4o"``), a path to ``tokenizer.json`` or a
            ``Callable[[str], list]``; default ``cl100k_base`` (as :meth:`LLM.get_tokenizer`).
        separator: the word separator :meth:`repack` prefers to cut at.

    Raises:
        ValueError: an argument is out of the range given above.
    """

    def __init__(
        self,
        context_window: int = DEFAULT_CONTEXT_WINDOW,
        num_output: int = DEFAULT_NUM_OUTPUTS,
        chunk_overlap_ratio: float = DEFAULT_CHUNK_OVERLAP_RATIO,
        chunk_size_limit: Optional[int] = None,
        tokenizer: Any = None,
        separator: str = " ",
    ) -> None:
        if isinstance(context_window, bool) or not isinstance(context_window, int) or context_window < 1:
            raise ValueError(f"context_window must be an int >= 1 (tokens), got {context_window!r}")
        if isinstance(num_output, bool) or not isinstance(num_output, int) or not 0 <= num_output < context_window:
            raise ValueError(
                f"num_output must be an int in [0, context_window={context_window}) (tokens), got {num_output!r}"
            )
        if not isinstance(chunk_overlap_ratio, (int, float)) or not 0.0 <= float(chunk_overlap_ratio) < 1.0:
            raise ValueError(f"chunk_overlap_ratio must be in [0, 1), got {chunk_overlap_ratio!r}")
        if chunk_size_limit is not None and (
            isinstance(chunk_size_limit, bool) or not isinstance(chunk_size_limit, int) or chunk_size_limit < 1
        ):
            raise ValueError(f"chunk_size_limit must be None or an int >= 1 (tokens), got {chunk_size_limit!r}")
        if not isinstance(separator, str) or not separator:
            raise ValueError(f"separator must be a non-empty str, got {separator!r}")
        from ragloom.tokenizers import get_tokenizer

        self.context_window = context_window
        self.num_output = num_output
        self.chunk_overlap_ratio = float(chunk_overlap_ratio)
        self.chunk_size_limit = chunk_size_limit
        self.separator = separator
        self._tokenizer = get_tokenizer("cl100k_base" if tokenizer is None else tokenizer)

    @classmethod
    def from_llm_metadata(
        cls,
        llm_metadata: Any,
        chunk_overlap_ratio: float = DEFAULT_CHUNK_OVERLAP_RATIO,
        chunk_size_limit: Optional[int] = None,
        tokenizer: Any = None,
        separator: str = " ",
    ) -> "PromptHelper":
        """A helper for a model described by ``llm_metadata`` (its ``context_window`` and ``num_output``).

        ``num_output`` is capped at ``context_window - 1``.
        """
        window = int(llm_metadata.context_window)
        num_output = min(int(llm_metadata.num_output), max(0, window - 1))
        return cls(
            context_window=window,
            num_output=num_output,
            chunk_overlap_ratio=chunk_overlap_ratio,
            chunk_size_limit=chunk_size_limit,
            tokenizer=tokenizer,
            separator=separator,
        )

    @classmethod
    def from_llm(cls, llm: Any, **kwargs: Any) -> "PromptHelper":
        """``from_llm_metadata(llm.metadata, tokenizer=llm.get_tokenizer(), **kwargs)``."""
        kwargs.setdefault("tokenizer", llm.get_tokenizer())
        return cls.from_llm_metadata(llm.metadata, **kwargs)

    # -- sizes -------------------------------------------------------------------------
    @property
    def tokenizer(self) -> Any:
        return self._tokenizer

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in this helper's tokenizer."""
        return self._tokenizer.count(text) if text else 0

    def prompt_tokens(self, prompt: Any, llm: Any = None) -> int:
        """Tokens a prompt takes before any text is put in it.

        ``prompt`` is a template (its variables not fixed by ``partial_format`` count as empty)
        or a ``str``; with ``llm``, its ``system_prompt`` is counted too.
        """
        n = self.count_tokens(_empty_prompt_text(prompt))
        system = getattr(llm, "system_prompt", None) if llm is not None else None
        if system:
            n += self.count_tokens(system + "\n\n")
        return n

    def _get_available_context_size(self, num_prompt_tokens: int) -> int:
        """``context_window - num_output - num_prompt_tokens``.

        Raises:
            ValueError: the prompt alone does not fit (the message says by how many tokens).
        """
        room = self.context_window - self.num_output
        available = room - num_prompt_tokens
        if available < 0:
            raise ValueError(
                f"the prompt alone takes {num_prompt_tokens} tokens, {-available} more than the {room} available "
                f"(context_window={self.context_window} - num_output={self.num_output}); shorten the prompt or "
                "the query, or use a model with a larger context window"
            )
        return available

    def _get_available_chunk_size(
        self, prompt: Any, num_chunks: int = 1, padding: int = DEFAULT_PADDING, llm: Any = None
    ) -> int:
        """Tokens each of ``num_chunks`` pieces of text may take in ``prompt``.

        Raises:
            ValueError: bad ``num_chunks``/``padding``; the prompt alone exceeds the window; or
                no token is left per chunk.
        """
        if isinstance(num_chunks, bool) or not isinstance(num_chunks, int) or num_chunks < 1:
            raise ValueError(f"num_chunks must be an int >= 1, got {num_chunks!r}")
        if isinstance(padding, bool) or not isinstance(padding, int) or padding < 0:
            raise ValueError(f"padding must be an int >= 0 (tokens), got {padding!r}")
        available = self._get_available_context_size(self.prompt_tokens(prompt, llm=llm))
        size = available // num_chunks - padding
        if self.chunk_size_limit is not None:
            size = min(size, self.chunk_size_limit)
        if size < 1:
            raise ValueError(
                f"no room for text: {available} tokens are left after the prompt, which gives {num_chunks} "
                f"chunk(s) {size} tokens each after padding={padding}; use fewer chunks or a larger context window"
            )
        return size

    def get_text_splitter_given_prompt(
        self, prompt: Any, num_chunks: int = 1, padding: int = DEFAULT_PADDING, llm: Any = None
    ) -> Any:
        """A :class:`~ragloom.node_parser.TokenTextSplitter` whose chunks fit ``prompt`` ``num_chunks`` at a time.

        Raises:
            ValueError: as :meth:`_get_available_chunk_size`.
        """
        from ragloom.node_parser import TokenTextSplitter

        size = self._get_available_chunk_size(prompt, num_chunks, padding, llm=llm)
        overlap = min(int(self.chunk_overlap_ratio * size), size - 1)
        return TokenTextSplitter(
            chunk_size=size,
            chunk_overlap=overlap,
            separator=self.separator,
            tokenizer=self._tokenizer,
        )

    # -- fitting text --------------------------------------------------------------------
    def repack(
        self, prompt: Any, text_chunks: Sequence[str], padding: int = DEFAULT_PADDING, llm: Any = None
    ) -> List[str]:
        """Join ``text_chunks`` and re-split them into as few pieces as fit ``prompt`` one at a time.

        Chunks are stripped, empty ones dropped, and joined with ``"\\n\\n"``; each returned
        piece is at most ``context_window - num_output - prompt tokens - padding`` tokens
        (and ``chunk_size_limit``).  Returns ``[]`` when there is no text.

        Raises:
            ValueError: the prompt alone exceeds the window (says by how many tokens).
        """
        combined = REPACK_JOINER.join(c.strip() for c in text_chunks if c and c.strip())
        splitter = self.get_text_splitter_given_prompt(prompt, 1, padding, llm=llm)
        if not combined:
            return []
        return splitter.split_text(combined)

    def truncate(
        self, prompt: Any, text_chunks: Sequence[str], padding: int = DEFAULT_PADDING, llm: Any = None
    ) -> List[str]:
        """Cut each of ``text_chunks`` to an equal share of the room, so all fit ``prompt`` together.

        The share is ``(context_window - num_output - prompt tokens) // len(text_chunks) - padding``
        tokens (capped by ``chunk_size_limit``); a chunk over it keeps its first tokens, cut at
        a token boundary by character offsets (never inside a character) and right-stripped.
        Returns one string per chunk, in order.

        Raises:
            ValueError: the prompt alone exceeds the window, or too many chunks for one token each.
        """
        if not text_chunks:
            return []
        size = self._get_available_chunk_size(prompt, len(text_chunks), padding, llm=llm)
        return [self.truncate_text(chunk, size) for chunk in text_chunks]

    def truncate_text(self, text: str, max_tokens: int) -> str:
        """The longest prefix of ``text`` that ends at a token boundary and is <= ``max_tokens`` tokens.

        Raises:
            ValueError: ``max_tokens`` < 0.
        """
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 0:
            raise ValueError(f"max_tokens must be an int >= 0, got {max_tokens!r}")
        tok = self._tokenizer
        if not text or tok.count(text) <= max_tokens:
            return text
        from ragloom.node_parser.text.engine import make_sizers

        sizer = make_sizers(tok, [text])[0]
        budget = max_tokens
        while budget > 0:
            end = sizer.limit(0, budget)
            piece = text[:end].rstrip()
            # a prefix re-tokenized on its own can take a token more than in the whole text
            if tok.count(piece) <= max_tokens:
                return piece
            budget -= 1
        return ""
