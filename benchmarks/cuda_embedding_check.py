"""CUDA checks of the local embedding path (run on a machine with an NVIDIA GPU).

Checks, each printed as a line and gathered into one JSON line at the end:

1. device auto-detection picks ``cuda`` and the model runs in fp16;
2. the adaptive default batch size on CUDA (capped from free memory);
3. fp16-on-GPU vectors agree with fp32 vectors of the same weights (cosine);
4. throughput of ragloom's ingest-time embedding vs the raw ``SentenceTransformer.encode``
   call on the same texts, same batch size, same fp16 model (target ≤ 1.10x);
5. out-of-memory recovery with a *real* CUDA OOM: the process is limited to a small
   fraction of the GPU's memory and asked for a batch that cannot fit; ragloom must
   halve the batch, finish, keep the smaller size, and return the same vectors.

    python benchmarks/cuda_embedding_check.py --model PATH --texts texts.json

``--model`` is a sentence-transformers folder (e.g. the bundled all-MiniLM-L6-v2, or an
fp16 copy of it); ``--texts`` a JSON list of strings (chunks of real documents).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np


def _cos_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    b = b / np.linalg.norm(b, axis=1, keepdims=True)
    return (a * b).sum(axis=1)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True)
    ap.add_argument("--texts", required=True)
    ap.add_argument("--n", type=int, default=0, help="use the first N texts (0 = all)")
    args = ap.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from ragloom.embeddings import HuggingFaceEmbedding

    texts = json.load(open(args.texts, encoding="utf-8"))
    if args.n:
        texts = texts[: args.n]
    out: dict = {"texts": len(texts), "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}

    # 1-2. device, precision, adaptive batch size
    emb = HuggingFaceEmbedding(model_name=args.model)
    out["device"] = emb.device
    dtype = next(emb.model.parameters()).dtype
    out["dtype"] = str(dtype)
    out["default_batch_size"] = emb.embed_batch_size
    print(f"device={emb.device} dtype={dtype} default embed_batch_size={emb.embed_batch_size}", flush=True)

    # 3. fp16 vs fp32 agreement on 512 texts
    sample = texts[:512]
    v16 = emb.get_text_embedding_batch_array(sample)
    ref = SentenceTransformer(args.model, device="cuda").float()
    v32 = ref.encode(sample, batch_size=64, normalize_embeddings=True, convert_to_numpy=True)
    cos = _cos_rows(v16.astype(np.float64), v32.astype(np.float64))
    out["fp16_vs_fp32_cos_min"] = float(cos.min())
    out["fp16_vs_fp32_cos_mean"] = float(cos.mean())
    print(f"fp16 vs fp32 cosine: min {cos.min():.5f} mean {cos.mean():.5f}", flush=True)
    del ref
    torch.cuda.empty_cache()

    # 4. throughput: ragloom vs raw encode, same model object and batch size, best of 3
    raw_model = emb.model
    bs = emb.embed_batch_size
    emb.get_text_embedding_batch_array(texts[:1024])  # warm-up
    torch.cuda.synchronize()

    def timed(fn):
        best = float("inf")
        for _ in range(3):
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            best = min(best, time.perf_counter() - t0)
        return best

    t_raw = timed(lambda: raw_model.encode(texts, batch_size=bs, normalize_embeddings=True, convert_to_numpy=True))
    t_rag = timed(lambda: emb.get_text_embedding_batch_array(texts))
    out.update(raw_encode_s=round(t_raw, 3), ragloom_s=round(t_rag, 3), ratio=round(t_rag / t_raw, 3),
               ragloom_texts_per_s=round(len(texts) / t_rag, 1))
    print(f"throughput: raw encode {t_raw:.2f}s, ragloom {t_rag:.2f}s, ratio {t_rag / t_raw:.3f} "
          f"({len(texts) / t_rag:.0f} texts/s, batch {bs})", flush=True)

    # 5. real OOM recovery
    reference = emb.get_text_embedding_batch_array(texts[:2048])
    free, total = torch.cuda.mem_get_info()
    used = torch.cuda.memory_reserved()
    # allow what is held now plus 1 GiB for activations: a batch of 2048 texts of up to 256
    # tokens needs ~12 GiB, a batch of 64 well under 1 GiB
    fraction = min(0.99, (used + 2**30) / total)
    torch.cuda.empty_cache()
    torch.cuda.set_per_process_memory_fraction(fraction)
    oom = HuggingFaceEmbedding(model_name=args.model, embed_batch_size=2048)
    long_texts = texts[:2048]
    t0 = time.perf_counter()
    try:
        got = oom.get_text_embedding_batch_array(long_texts)
        ok = bool(np.allclose(got, reference, atol=2e-2)) and got.shape == reference.shape
        cos = _cos_rows(got.astype(np.float64), reference.astype(np.float64))
        out.update(oom_recovered=ok, oom_final_batch_size=oom.embed_batch_size,
                   oom_cos_min=float(cos.min()), oom_seconds=round(time.perf_counter() - t0, 2))
        print(f"OOM recovery: ok={ok} final batch {oom.embed_batch_size} cos min {cos.min():.5f}", flush=True)
    except Exception as exc:  # report, don't hide
        out.update(oom_recovered=False, oom_error=f"{type(exc).__name__}: {exc}"[:300])
        print(f"OOM recovery FAILED: {type(exc).__name__}: {exc}", flush=True)
    finally:
        torch.cuda.set_per_process_memory_fraction(1.0)
    out["memory_fraction_used_for_oom_test"] = round(fraction, 4)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
