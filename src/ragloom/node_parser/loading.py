"""Rebuild a node parser from the ``to_config()`` an index recorded.

An index records the configuration of the parsers that built it, so that reopening it
(``load_index_from_storage``) re-chunks nothing: document fingerprints include that configuration,
and a different default parser would make every document look changed.  Only configurations that
fully determine the parser can be rebuilt (the span-engine splitters and the file-type router, with
a tokenizer that can be found again by name); anything else returns ``None`` and the caller decides.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional

__all__ = ["node_parser_from_config", "transformations_from_config"]

_COMMON = ("chunk_size", "chunk_overlap", "include_metadata", "include_prev_next_rel")


def _tokenizer(name: Any, embed_model: Any) -> Any:
    """The tokenizer called ``name``: the embed model's own, the bundled default, or a tiktoken
    encoding (``"tiktoken:cl100k_base"``); ``None`` when it cannot be found again."""
    from ragloom.tokenizers import get_default_tokenizer, get_tokenizer

    own = embed_model.get_tokenizer() if embed_model is not None else None
    if own is not None and own.name == name:
        return own
    if name == get_default_tokenizer().name:
        return get_default_tokenizer()
    if isinstance(name, str) and name.startswith("tiktoken:"):
        return get_tokenizer(name.split(":", 1)[1])
    return None


def _sentence(cfg: Dict[str, Any], tok: Any) -> Any:
    from ragloom.node_parser import SentenceSplitter

    if cfg.get("chunking_tokenizer_fn") is not None:
        return None  # a function cannot be rebuilt from its name
    return SentenceSplitter(
        tokenizer=tok, separator=cfg["separator"], paragraph_separator=cfg["paragraph_separator"],
        secondary_chunking_regex=cfg["secondary_chunking_regex"], backup_separators=cfg["backup_separators"],
        **{k: cfg[k] for k in _COMMON},
    )


def _token(cfg: Dict[str, Any], tok: Any) -> Any:
    from ragloom.node_parser import TokenTextSplitter

    return TokenTextSplitter(tokenizer=tok, separator=cfg["separator"], backup_separators=cfg["backup_separators"],
                             **{k: cfg[k] for k in _COMMON})


def _router(cfg: Dict[str, Any], tok: Any) -> Any:
    from ragloom.node_parser import SimpleFileNodeParser

    parser = SimpleFileNodeParser(
        tokenizer=tok,
        code_chunk_lines=cfg["code_chunk_lines"],
        code_chunk_lines_overlap=cfg["code_chunk_lines_overlap"],
        code_max_chars=cfg["code_max_chars"], line_numbers=cfg["line_numbers"], html_tags=cfg["html_tags"],
        formats=cfg["formats"], **{k: cfg[k] for k in _COMMON},
    )
    return parser


_BUILDERS: Dict[str, Callable[[Dict[str, Any], Any], Any]] = {
    "SentenceSplitter": _sentence,
    "TokenTextSplitter": _token,
    "SimpleFileNodeParser": _router,
}


def node_parser_from_config(config: Dict[str, Any], embed_model: Any = None) -> Optional[Any]:
    """The node parser whose ``to_config()`` is ``config``, or ``None`` if it cannot be rebuilt.

    The result is checked: its own ``to_config()`` must equal ``config`` (so its nodes and ids are
    the ones the index holds).  ``embed_model`` lends its tokenizer when the recorded name is its own.
    """
    cfg = {k: v for k, v in config.items() if k != "fingerprinted"}
    build = _BUILDERS.get(str(cfg.get("class_name")))
    if build is None:
        return None
    tok = _tokenizer(cfg.get("tokenizer"), embed_model)
    if tok is None:
        return None
    try:
        parser = build(cfg, tok)
    except (KeyError, TypeError, ValueError):
        return None
    return parser if parser is not None and parser.to_config() == cfg else None


def transformations_from_config(recorded: Dict[str, Any], embed_model: Any = None) -> Optional[List[Any]]:
    """The transformations an index recorded in its ``node_parser`` field (``{"transformations":
    [config, ...]}`` — ``ragloom index`` writes its parser and its junk filter so — or one parser's
    config), or ``None`` when any of them cannot be rebuilt."""
    if not recorded:
        return None
    configs = recorded.get("transformations") if "transformations" in recorded else [recorded]
    if not isinstance(configs, list) or not configs:
        return None
    out = []
    for cfg in configs:
        if isinstance(cfg, dict) and cfg.get("class_name") == "JunkFilter":  # ragloom index's junk step
            from ragloom.ingestion.junk import JunkFilter

            step = JunkFilter()
            if step.to_config() != cfg:
                return None
            out.append(step)
            continue
        parser = node_parser_from_config(cfg, embed_model) if isinstance(cfg, dict) else None
        if parser is None:
            return None
        out.append(parser)
    return out
