"""Prompt fitting and answer parsing shared by the tree builder and the tree retrievers.

**Every prompt fits the model.**  :func:`fill_prompt` puts several texts into one prompt variable so
that the whole prompt plus the model's ``num_output`` stays within its ``context_window``, counted in
the LLM's own tokenizer (:class:`~ragloom.indices.prompt_helper.PromptHelper` built from the LLM).
When the texts do not fit, the room is shared *max-min fair*: texts shorter than an equal share keep
all their tokens and what they leave is shared by the longer ones, each cut at a token boundary.
(LlamaIndex gives every text the same share, ``PromptHelper.truncate``, so a short text wastes part
of its share while a long one is cut.)  The filled prompt is then counted again and the budget
shrunk until it fits, since a joined text can tokenize a little differently from its parts.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Sequence

from ragloom.indices.prompt_helper import DEFAULT_PADDING, PromptHelper

__all__ = ["fill_prompt", "fair_shares", "numbered_text", "extract_choice_numbers", "prompt_helper_for"]

#: attempts :func:`fill_prompt` makes to shrink the texts until the filled prompt fits
_FIT_ATTEMPTS = 8


def prompt_helper_for(llm: Any) -> PromptHelper:
    """A :class:`PromptHelper` measuring in ``llm``'s tokenizer, with its window and output budget."""
    return PromptHelper.from_llm(llm)


def fair_shares(sizes: Sequence[int], budget: int) -> List[int]:
    """Max-min fair caps: ``caps[i] <= sizes[i]``, ``sum(caps) <= budget``; a size under an equal
    share of what is left is kept whole, the others share the rest equally (rounded down).

    >>> fair_shares([10, 100, 100], 110)
    [10, 50, 50]
    """
    caps = [0] * len(sizes)
    left = max(0, budget)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for k, i in enumerate(order):
        share = left // (len(sizes) - k)
        caps[i] = min(sizes[i], share)
        left -= caps[i]
    return caps


def _room(helper: PromptHelper, prompt: Any, llm: Any) -> int:
    """Tokens left for text in ``prompt`` (context window - output - the empty prompt)."""
    used = helper.prompt_tokens(prompt, llm=llm)
    room = helper.context_window - helper.num_output - used
    if room < 0:
        raise ValueError(
            f"the prompt alone takes {used} tokens, {-room} more than the "
            f"{helper.context_window - helper.num_output} available (context_window={helper.context_window} - "
            f"num_output={helper.num_output}); shorten the prompt or use a model with a larger context window"
        )
    return room


def fill_prompt(
    helper: PromptHelper,
    llm: Any,
    prompt: Any,
    variable: str,
    texts: Sequence[str],
    render: Callable[[List[str]], str],
    padding: int = DEFAULT_PADDING,
) -> str:
    """``prompt`` formatted with ``variable = render(fitted texts)``, fitting the model's window.

    ``prompt``: a template whose other variables are already fixed (``partial_format``).  Each text
    gets a max-min fair share (:func:`fair_shares`) of the room, minus ``padding`` tokens each for
    separators; the filled prompt is re-counted (with the LLM's ``system_prompt``) and the shares
    shrunk until ``tokens(prompt) + num_output <= context_window``.

    Raises:
        ValueError: the prompt alone does not fit, or there is less than one token per text.
    """
    room = _room(helper, prompt, llm)
    sizes = [helper.count_tokens(t) for t in texts]
    limit = helper.context_window - helper.num_output
    reserve = padding * len(texts)
    for _ in range(_FIT_ATTEMPTS):
        budget = room - reserve
        if budget < len(texts):
            raise ValueError(
                f"no room for {len(texts)} texts in the prompt: {room} tokens are left after it "
                f"(context_window={helper.context_window}, num_output={helper.num_output}); use a model "
                "with a larger context window, or fewer children per tree node (num_children)"
            )
        caps = fair_shares(sizes, budget)
        fitted = [t if size <= cap else helper.truncate_text(t, cap)
                  for t, size, cap in zip(texts, sizes, caps, strict=True)]
        filled = prompt.format(**{variable: render(fitted)})
        over = helper.prompt_tokens(filled, llm=llm) - limit
        if over <= 0:
            return str(filled)
        reserve += over + len(texts)
    raise ValueError(f"could not fit {len(texts)} texts into the prompt within context_window={helper.context_window}")


def numbered_text(texts: Sequence[str]) -> str:
    """``"(1) first\\n\\n(2) second ..."``: each text on one line (its line breaks become spaces)."""
    return "\n\n".join(f"({i}) {' '.join(t.split())}" for i, t in enumerate(texts, 1))


_ANSWER = re.compile(r"(?:answer|答案|选择)\s*[:：]", re.IGNORECASE)
_NUMBER = re.compile(r"\d+")


def extract_choice_numbers(response: str, num_choices: int, n: int = 1) -> List[int]:
    """Up to ``n`` distinct choice numbers in ``1..num_choices`` from an LLM's answer, in the order
    given.

    Read from the line after the last ``ANSWER:`` (also ``答案：``) when there is one with a valid
    number, else from the whole answer; numbers out of range are skipped (LlamaIndex takes the first
    ``n`` numbers of the answer, in range or not, and gives up on one out of range).
    """
    def valid(text: str) -> List[int]:
        out: List[int] = []
        for match in _NUMBER.findall(text):
            value = int(match)
            if 1 <= value <= num_choices and value not in out:
                out.append(value)
        return out

    marks = list(_ANSWER.finditer(response))
    if marks:
        line = response[marks[-1].end():].lstrip().split("\n", 1)[0]
        found = valid(line)
        if found:
            return found[:n]
    return valid(response)[:n]


def texts_by_id(ids: Sequence[str], known: Dict[str, str], fetch: Callable[[List[str]], Dict[str, str]]) -> List[str]:
    """The texts of ``ids``: from ``known`` (summaries), the rest through ``fetch`` (leaves)."""
    missing = [i for i in ids if i not in known]
    fetched = fetch(missing) if missing else {}
    return [known[i] if i in known else fetched.get(i, "") for i in ids]
