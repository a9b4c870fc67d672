"""Keyword extraction for Chinese, English and mixed text, without a model.

Used by the keyword table indexes (:mod:`ragloom.indices.keyword_table`) and the offline mode of the
metadata ``KeywordExtractor``.  Every function works on :func:`normalize_text` of its input (Unicode
NFKC, lowercase), and every keyword it returns is a substring of that normalised text (a
multi-word keyword is the exact span it covers), so keywords can be highlighted and matched back.

Tokens (:func:`tokenize`):

* runs of CJK characters are segmented into words by **rjieba** (jieba's dictionary and HMM, in
  Rust) with part-of-speech tags; function words (pronouns, prepositions, conjunctions, particles,
  adverbs, numerals, measure words, punctuation — jieba tags ``r p c u* d m q x y e o``), words of
  one character and :data:`CHINESE_STOPWORDS` are dropped.  Only Han characters go to rjieba: a
  run of katakana or of hangul is one word, a run of hiragana (particles, endings) is dropped;
* other text is split into letter/digit words, as :mod:`ragloom.analysis` does; words of one
  character, :data:`ragloom.analysis.ENGLISH_STOPWORDS` and the stems of contractions ("don",
  "isn") are dropped.

Matching keys (:func:`keyword_key`): English words are reduced to their Snowball (Porter2) stem, as
:mod:`ragloom.analysis` does for BM25, so "indexes" finds "indexing"; CJK words are kept whole.
:func:`expand_with_subtokens` adds the words of a phrase and the sub-words jieba's search mode finds
inside a long CJK word (北京大学 → 北京, 大学), so a question about 北京 finds a chunk keyed 北京大学.

Algorithms and sources:

* :func:`simple_extract_keywords`: the most frequent content words (LlamaIndex's
  ``simple_extract_keywords``, with a real segmenter instead of an ASCII regex);
* :func:`rake_extract_keywords`: RAKE — Rose, Engel, Cramer, Cowley, "Automatic keyword extraction
  from individual documents" (2010): candidate phrases are runs of content words between stopwords
  and punctuation, a word scores degree/frequency, a phrase the sum of its words' scores.  For
  Chinese, phrase boundaries are the function words and punctuation found by the segmenter;
* :func:`extract_keywords` ``mode="tfidf"``: term frequency × smoothed inverse document frequency
  over the given texts (``log((1+N)/(1+df)) + 1``, scikit-learn's ``smooth_idf``);
  ``mode="textrank"``: TextRank — Mihalcea & Tarau, "TextRank: Bringing Order into Texts" (2004):
  PageRank (damping 0.85) over a co-occurrence graph of content words within a window of 5 (jieba's
  ``textrank`` settings).

Every function is deterministic: ties are broken by first position in the text.
"""

from __future__ import annotations

import functools
import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Dict, Iterable, List, Optional, Sequence, Set, Tuple

from ragloom.analysis import _CJK, ENGLISH_STOPWORDS

__all__ = [
    "CHINESE_STOPWORDS",
    "normalize_text",
    "tokenize",
    "is_stopword",
    "keyword_key",
    "expand_with_subtokens",
    "simple_extract_keywords",
    "rake_extract_keywords",
    "extract_keywords",
    "extract_keywords_given_response",
]

#: Common Chinese function and filler words that the part-of-speech filter lets through (jieba tags
#: many of them as verbs or nouns), with the directional complements (出来, 起来 …) and speech verbs
#: (说道, 笑道 …) that otherwise top the frequent words of any narrative text.
CHINESE_STOPWORDS = frozenset(
    """我们 你们 他们 她们 它们 咱们 自己 这个 那个 这些 那些 这样 那样 这里 那里 这种 那种 什么 怎么 怎样
    为什么 如何 哪里 哪些 因为 所以 但是 而且 并且 或者 还是 如果 虽然 然后 于是 可是 不过 只是 就是 还有
    以及 以上 以下 之一 之后 之前 之间 其中 其他 其它 一些 一个 一种 一样 一直 一起 已经 正在 可以 可能 能够
    应该 需要 通过 进行 作为 对于 关于 由于 根据 按照 为了 没有 不是 不会 不能 这是 那是 就是说 也是 都是
    还是 有些 有的 所有 任何 每个 各种 许多 很多 非常 比较 特别 更加 最后 目前 现在 当时 同时 时候 此外
    另外 例如 比如 等等 之类 方面 问题 情况 来说 而言 来看 表示 认为 觉得 知道 出现 使用 成为 属于 包括
    出来 进来 起来 过来 回来 下来 上来 出去 进去 过去 回去 上去 下去 说道 笑道 问道 答道 叹道 不得 只得
    不知 如今 今日""".split()
)

#: what is left of English contractions split at the apostrophe ("don't" -> "don", "t")
_CONTRACTION_PARTS = frozenset(
    "aren couldn didn doesn don hadn hasn haven isn mightn mustn needn shan shouldn wasn weren won wouldn".split()
)

#: jieba part-of-speech tags of function words (dropped): pronoun, preposition, conjunction,
#: particles, adverb, numeral, measure word, punctuation/unknown, modal, interjection, onomatopoeia
_FUNCTION_TAGS = ("r", "p", "c", "u", "d", "m", "q", "x", "y", "e", "o")

_WORD_RE = re.compile(rf"[{_CJK}]+|[^\W_{_CJK}]+", re.UNICODE)
_CJK_RE = re.compile(rf"[{_CJK}]")
#: a CJK run split by script: hiragana, katakana, hangul, or anything else of ``_CJK`` (Han)
_SCRIPT_RE = re.compile(r"[\u3040-\u309f]+|[\u30a0-\u30ff]+|[\uac00-\ud7af]+|[^\u3040-\u30ff\uac00-\ud7af]+")
#: what may separate two words of one phrase: spaces and tabs only
_PHRASE_GAP_RE = re.compile(r"[ \t]*")
_MAX_PHRASE_WORDS = 4
_TEXTRANK_WINDOW = 5
_TEXTRANK_DAMPING = 0.85
_TEXTRANK_ITERATIONS = 30


@dataclass(frozen=True)
class _Token:
    """One word of the normalised text: ``text == norm[start:end]``; ``keep``: a content word."""

    text: str
    start: int
    end: int
    cjk: bool
    keep: bool


def normalize_text(text: str) -> str:
    """``text`` in Unicode NFKC, lowercased: the text every keyword is a substring of.

    Raises:
        ValueError: ``text`` is not a ``str``.
    """
    if not isinstance(text, str):
        raise ValueError(f"text must be a str, got {type(text).__name__}")
    return unicodedata.normalize("NFKC", text).lower()


@functools.lru_cache(maxsize=1)
def _stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("english")


def _cjk_words(run: str) -> List[Tuple[str, str]]:
    """``(word, part-of-speech tag)`` of a run of CJK characters, in order (they concatenate to ``run``)."""
    import rjieba

    return [(w, t) for w, t in rjieba.tag(run)]


def _tokens(norm: str) -> List[_Token]:
    out: List[_Token] = []
    for match in _WORD_RE.finditer(norm):
        run, pos = match.group(), match.start()
        if not _CJK_RE.match(run):
            keep = len(run) > 1 and run not in ENGLISH_STOPWORDS and run not in _CONTRACTION_PARTS
            out.append(_Token(run, pos, match.end(), False, keep))
            continue
        for script in _SCRIPT_RE.finditer(run):
            out.extend(_script_tokens(script.group(), pos + script.start()))
    return out


def _script_tokens(piece: str, pos: int) -> List[_Token]:
    """The tokens of one run of a single CJK script starting at ``pos``: Han text is segmented by
    rjieba; a run of katakana (loanwords, names) or of hangul (Korean writes spaces between words) is
    one word, a run of hiragana (particles, inflections) a function word."""
    first = piece[0]
    if "\u30a0" <= first <= "\u30ff" or "\uac00" <= first <= "\ud7af":
        return [_Token(piece, pos, pos + len(piece), True, len(piece) > 1)]
    if "\u3040" <= first <= "\u309f":
        return [_Token(piece, pos, pos + len(piece), True, False)]
    out = []
    offset = 0
    for word, tag in _cjk_words(piece):
        if piece[offset : offset + len(word)] != word:  # the segmenter must return the run's own characters
            raise RuntimeError(f"rjieba returned {word!r}, not a piece of {piece!r}")
        keep = len(word) > 1 and word not in CHINESE_STOPWORDS and not tag.startswith(_FUNCTION_TAGS)
        out.append(_Token(word, pos + offset, pos + offset + len(word), True, keep))
        offset += len(word)
    return out


def tokenize(text: str, filter_stopwords: bool = True) -> List[str]:
    """The words of ``text`` (normalised), in order; with ``filter_stopwords`` only content words
    (see the module docstring).

    Raises:
        ValueError: ``text`` is not a ``str``.
    """
    return [t.text for t in _tokens(normalize_text(text)) if t.keep or not filter_stopwords]


def is_stopword(word: str) -> bool:
    """Whether ``word`` (normalised) is an English or Chinese stopword, or shorter than two characters."""
    w = normalize_text(word).strip()
    return len(w) < 2 or w in ENGLISH_STOPWORDS or w in _CONTRACTION_PARTS or w in CHINESE_STOPWORDS


def keyword_key(keyword: str) -> str:
    """The key under which ``keyword`` is matched: its words (normalised, stopwords dropped), English
    ones stemmed, joined by single spaces; ``""`` when nothing is left.  ``keyword_key("Indexes")
    == keyword_key("indexing") == "index"``; ``keyword_key("自然语言处理") == "自然语言 处理"``."""
    return " ".join(_term_keys([t for t in _tokens(normalize_text(keyword)) if t.keep]))


def _subwords(word: str) -> List[str]:
    """The shorter words jieba's search mode finds inside a long CJK word (北京大学 → 北京, 大学)."""
    import rjieba

    if len(word) < 3:
        return []
    return [w for w in rjieba.cut_for_search(word) if len(w) > 1 and w != word and w in word]


def expand_with_subtokens(keywords: Iterable[str]) -> List[str]:
    """``keywords`` (normalised) followed by their content words and the sub-words of their CJK words,
    without repeats, in first-seen order (LlamaIndex's ``expand_tokens_with_subtokens``, segmenting
    Chinese)."""
    out: Dict[str, None] = {}
    for keyword in keywords:
        norm = normalize_text(keyword).strip()
        if not norm:
            continue
        out.setdefault(norm)
        for tok in _tokens(norm):
            if tok.keep:
                out.setdefault(tok.text)
                if tok.cjk:
                    for sub in _subwords(tok.text):
                        if not is_stopword(sub):
                            out.setdefault(sub)
    return list(out)


def _term_keys(tokens: Sequence[_Token]) -> List[str]:
    """The matching key of each token: the Snowball stem of an English word, a CJK word itself."""
    latin = [t.text for t in tokens if not t.cjk]
    stems = iter(_stemmer().stemWords(latin)) if latin else iter(())
    return [t.text if t.cjk else next(stems) for t in tokens]


@dataclass
class _Terms:
    """Content words grouped by key (English inflections together): count, first position and the
    surface form shown for each key (its most frequent form, the first on ties)."""

    counts: Dict[str, float]
    first: Dict[str, int]
    surface: Dict[str, str]
    keys: List[str]  # the key of each token, in order


def _terms(tokens: Sequence[_Token]) -> _Terms:
    keys = _term_keys(tokens)
    counts: Dict[str, float] = {}
    first: Dict[str, int] = {}
    forms: Dict[str, Dict[str, int]] = {}
    for tok, key in zip(tokens, keys, strict=True):
        counts[key] = counts.get(key, 0) + 1
        first.setdefault(key, tok.start)
        seen = forms.setdefault(key, {})
        seen[tok.text] = seen.get(tok.text, 0) + 1
    surface = {k: max(f, key=lambda w, f=f: f[w]) for k, f in forms.items()}  # type: ignore[misc]
    return _Terms(counts, first, surface, keys)


def _check_max(max_keywords: Optional[int], name: str = "max_keywords") -> None:
    if max_keywords is not None and (not isinstance(max_keywords, int) or isinstance(max_keywords, bool)
                                     or max_keywords < 1):
        raise ValueError(f"{name} must be an int >= 1 or None, got {max_keywords!r}")


def _ranked(scores: Dict[str, float], first: Dict[str, int], limit: Optional[int]) -> List[str]:
    order = sorted(scores, key=lambda w: (-scores[w], first[w]))
    return order if limit is None else order[:limit]


def simple_extract_keywords(text: str, max_keywords: Optional[int] = None, filter_stopwords: bool = True) -> List[str]:
    """The most frequent words of ``text`` (normalised; content words only with ``filter_stopwords``),
    most frequent first, at most ``max_keywords`` (all when ``None``).  English inflections count
    together (same stem) and show as their most frequent form.

    Returns a ranked ``list`` (LlamaIndex returns a ``set``; the LlamaIndex-path wrapper in
    :mod:`ragloom.indices.keyword_table.utils` does too).

    Raises:
        ValueError: ``text`` is not a ``str``; ``max_keywords`` is not an int >= 1 or ``None``.
    """
    _check_max(max_keywords)
    terms = _terms([t for t in _tokens(normalize_text(text)) if t.keep or not filter_stopwords])
    return [terms.surface[k] for k in _ranked(terms.counts, terms.first, max_keywords)]


def _phrases(norm: str, tokens: Sequence[_Token]) -> List[List[_Token]]:
    """RAKE's candidate phrases: runs of content words separated only by spaces (or nothing, in
    CJK text), cut at stopwords, punctuation, line breaks and every :data:`_MAX_PHRASE_WORDS` words."""
    phrases: List[List[_Token]] = []
    current: List[_Token] = []
    for tok in tokens:
        joined = bool(current) and _PHRASE_GAP_RE.fullmatch(norm[current[-1].end : tok.start]) is not None
        if not tok.keep or not joined or len(current) >= _MAX_PHRASE_WORDS:
            if current:
                phrases.append(current)
            current = []
        if tok.keep:
            current.append(tok)
    if current:
        phrases.append(current)
    return phrases


def rake_extract_keywords(text: str, max_keywords: Optional[int] = None,
                          expand_with_subtokens: bool = True) -> List[str]:
    """RAKE keyphrases of ``text`` (see the module docstring), best first: at most ``max_keywords``
    phrases (all when ``None``), each the exact span of the normalised text it covers, then — with
    ``expand_with_subtokens``, as LlamaIndex — the words of those phrases not yet listed (so the list
    may be longer than ``max_keywords``).

    Raises:
        ValueError: ``text`` is not a ``str``; ``max_keywords`` is not an int >= 1 or ``None``.
    """
    _check_max(max_keywords)
    norm = normalize_text(text)
    phrases = _phrases(norm, _tokens(norm))
    freq: Dict[str, int] = {}
    degree: Dict[str, int] = {}
    for phrase in phrases:
        for tok in phrase:
            freq[tok.text] = freq.get(tok.text, 0) + 1
            degree[tok.text] = degree.get(tok.text, 0) + len(phrase)
    scores: Dict[str, float] = {}
    first: Dict[str, int] = {}
    words_of: Dict[str, List[str]] = {}
    for phrase in phrases:
        span = norm[phrase[0].start : phrase[-1].end]
        if span not in scores:
            scores[span] = sum(degree[t.text] / freq[t.text] for t in phrase)
            first[span] = phrase[0].start
            words_of[span] = [t.text for t in phrase]
    top = _ranked(scores, first, max_keywords)
    if not expand_with_subtokens:
        return top
    out = dict.fromkeys(top)
    for span in top:
        for word in words_of[span]:
            out.setdefault(word)
    return list(out)


def extract_keywords(texts: Sequence[str], mode: str = "tfidf", top_n: int = 10) -> List[List[str]]:
    """The ``top_n`` keywords of each of ``texts`` (one ranked list per text, best first).

    Args:
        texts: the corpus; with ``"tfidf"`` a word common to many of them ranks lower.
        mode: ``"tfidf"`` (term frequency × smoothed inverse document frequency over ``texts``) or
            ``"textrank"`` (per text, PageRank over word co-occurrence; ``texts`` are independent).
        top_n: keywords per text (>= 1).

    Raises:
        ValueError: ``mode`` is not ``"tfidf"`` / ``"textrank"``, ``top_n`` < 1, or a text is not a ``str``.
    """
    if mode not in ("tfidf", "textrank"):
        raise ValueError(f"mode must be 'tfidf' or 'textrank', got {mode!r}")
    _check_max(top_n, "top_n")
    docs = [_terms([t for t in _tokens(normalize_text(text)) if t.keep]) for text in texts]
    if mode == "textrank":
        return [[doc.surface[k] for k in _textrank(doc, top_n)] for doc in docs]
    df: Dict[str, int] = {}
    for doc in docs:
        for key in doc.counts:
            df[key] = df.get(key, 0) + 1
    n = len(docs)
    out = []
    for doc in docs:
        total = len(doc.keys)
        scores = {k: (c / total) * (math.log((1 + n) / (1 + df[k])) + 1.0) for k, c in doc.counts.items()}
        out.append([doc.surface[k] for k in _ranked(scores, doc.first, top_n)])
    return out


def _textrank(doc: _Terms, top_n: int) -> List[str]:
    """TextRank keys of one text, best first."""
    words = list(doc.counts)
    if not words:
        return []
    edges: Dict[str, Dict[str, float]] = {w: {} for w in words}
    for i, key in enumerate(doc.keys):
        for other in doc.keys[i + 1 : i + _TEXTRANK_WINDOW]:
            if other != key:
                edges[key][other] = edges[key].get(other, 0.0) + 1.0
                edges[other][key] = edges[other].get(key, 0.0) + 1.0
    out_weight = {w: sum(edges[w].values()) for w in words}
    rank = {w: 1.0 for w in words}
    for _ in range(_TEXTRANK_ITERATIONS):
        rank = {
            w: (1 - _TEXTRANK_DAMPING) + _TEXTRANK_DAMPING * sum(
                weight / out_weight[v] * rank[v] for v, weight in edges[w].items())
            for w in words
        }
    return _ranked(rank, doc.first, top_n)


_SPLIT_RE = re.compile(r"[,，、;；\n|]+")
_BULLET_RE = re.compile(r"^\s*(?:[-*•]+|\d+[.)、])\s*")


def extract_keywords_given_response(response: str, lowercase: bool = True, start_token: str = "") -> List[str]:
    """The keywords an LLM listed in ``response`` (LlamaIndex's function of this name): the text after
    ``start_token`` (e.g. ``"KEYWORDS:"``, found anywhere, case-insensitively; the whole response when
    absent), split at commas (also ``，`` ``、`` ``;`` and line breaks), bullets, numbers and quotes
    stripped, normalised when ``lowercase`` (NFKC + lowercase), then :func:`expand_with_subtokens`
    (without stopwords).  Tolerates markdown, bullets and Chinese punctuation, which LlamaIndex's
    plain comma split does not."""
    body = response
    if start_token:
        found = body.lower().find(start_token.lower())
        if found >= 0:
            body = body[found + len(start_token):]
    keywords = []
    for piece in _SPLIT_RE.split(body):
        kw = _BULLET_RE.sub("", piece).strip().strip("\"'`*[]()“”‘’「」《》 .。:：").strip()
        if not kw:
            continue
        kw = normalize_text(kw) if lowercase else kw
        if not is_stopword(kw):
            keywords.append(kw)
    if not lowercase:
        return list(dict.fromkeys(keywords))
    return [k for k in expand_with_subtokens(keywords) if not is_stopword(k)]


def keyword_set(keywords: Iterable[str]) -> Set[str]:
    """``set`` of the keys (:func:`keyword_key`) of ``keywords``, empty keys left out."""
    return {k for k in map(keyword_key, keywords) if k}
