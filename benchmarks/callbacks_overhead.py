"""What callback instrumentation costs when nobody listens (and, for scale, when a handler does).

Each instrumented entry point is timed three ways, in the same process, on the same inputs:

* ``absent``: the code the public method wraps, called directly — the path as if there were no
  instrumentation: the parser's own ``get_nodes_from_documents`` (the ``__wrapped__`` function),
  ``retriever._retrieve(bundle)`` after the same empty-query check, the embed model with its
  per-batch hook ``_embed_batch`` replaced by the bare ``np.asarray(compute(texts))``, and
  ``MockLLM.complete.__wrapped__``;
* ``idle``: the public method with the default empty ``Settings.callback_manager`` (what every
  user without callbacks runs: resolve the manager, see no handler, call through);
* ``debug``: the public method with ``Settings.callback_manager = CallbackManager([LlamaDebugHandler()])``
  (payloads built, uuids, timestamps, events stored) — for scale only.

Workloads (small, so the whole run takes well under a minute on 2 shared cores):

* ``node_parser``: ``--calls`` (2,000) ``SentenceSplitter(chunk_size=64).get_nodes_from_documents([doc])``
  on a ~600-character document;
* ``retriever``: ``--calls`` ``VectorIndexRetriever.retrieve(QueryBundle(q, embedding=v))`` (dense
  mode, top 2) over an in-memory SQLite index of ``examples/data`` built with the bundled model;
  the query vector is given, so the model does not run and the retrieval itself is timed;
* ``embedding``: ``get_text_embedding_batch_array`` of ``--texts`` (64) node texts with the
  bundled model (batches of its ``embed_batch_size``), ``--embed-reps`` (4) times;
* ``llm``: ``--calls`` ``MockLLM().complete(prompt)`` (the cheapest LLM: the wrapper's share is
  largest there).

In each of ``--rounds`` (5) rounds the three variants take turns in blocks of 50 calls (one batch
for the embedding), after one untimed block each; the median over rounds of the mean per-call
CPU time (µs, ``time.process_time``: every thread of this process, less disturbed than wall time
by other jobs on a shared machine) is reported, with ``idle - absent`` as the overhead.  Prints a
table and one JSON line;
writes ``callbacks_overhead.txt`` to ``--results-dir`` (default ``benchmarks/results``; ``-``
writes nothing).

The cost of the check alone (``component.callback_manager.handlers`` on a retriever with no
manager of its own: a property, a ``ContextVar.get``, the Settings attribute) is printed too
(``timeit``, best of 5 × 100,000).

    python benchmarks/callbacks_overhead.py [--calls 2000] [--texts 64] [--embed-reps 4] [--rounds 5]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import platform
import statistics
import sys
import time
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any, Callable, Dict, List

import numpy as np

HERE = Path(__file__).resolve().parent
#: calls per turn when the variants take turns (see :func:`_measure`)
BLOCK = 50
EXAMPLES = HERE.parent / "examples" / "data"

DOC_TEXT = (
    "Green tea is brewed with water well below boiling. Pour at about 80 degrees and steep for two "
    "minutes. Longer steeping draws out bitter tannins, so taste early. A flat bicycle tire is fixed "
    "by finding the puncture, roughing the tube around it and gluing a patch over it. Let the glue "
    "dry before pressing the patch down. Check the tire for the thorn or glass that caused it, or the "
    "new tube will go flat again. Inflate slowly and watch that the bead seats evenly on the rim. "
    "Pandas eat bamboo for most of the day and sleep between meals."
)


def _measure(variants: Dict[str, Callable[[], Any]], calls: int, rounds: int, block: int) -> Dict[str, float]:
    """Median over ``rounds`` of each variant's mean µs per call over ``calls`` calls.

    Within a round the variants take turns in blocks of ``block`` calls (the order rotating each
    block), so a slow spell of this shared machine falls on all of them alike.  Each variant runs
    one block untimed first (one-off loads: tiktoken's ranks for the LLM's tokenizer)."""
    names = list(variants)
    for n in names:
        for _ in range(block):
            variants[n]()
    samples: Dict[str, List[float]] = {n: [] for n in names}
    for _ in range(rounds):
        spent = {n: 0.0 for n in names}
        done = 0
        turn = 0
        while done < calls:
            size = min(block, calls - done)
            order = names[turn % len(names):] + names[: turn % len(names)]
            for n in order:
                fn = variants[n]
                t0 = time.process_time()
                for _ in range(size):
                    fn()
                spent[n] += time.process_time() - t0
            done += size
            turn += 1
        for n in names:
            samples[n].append(spent[n] / calls * 1e6)
    return {n: statistics.median(v) for n, v in samples.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--texts", type=int, default=64)
    ap.add_argument("--embed-reps", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--results-dir", default=str(HERE / "results"))
    args = ap.parse_args()

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from ragloom import Settings, SimpleDirectoryReader, VectorStoreIndex
    from ragloom.callbacks import CallbackManager, LlamaDebugHandler
    from ragloom.llms.base import MockLLM
    from ragloom.node_parser import SentenceSplitter
    from ragloom.retrievers.base import _check_not_empty
    from ragloom.schema import Document, MetadataMode, QueryBundle

    idle_cm = Settings.callback_manager  # the default: empty
    debug = LlamaDebugHandler(print_trace_on_end=False)
    debug_cm = CallbackManager([debug])

    def with_debug(run: Callable[[], Any]) -> Callable[[], Any]:
        def go() -> Any:
            Settings.callback_manager = debug_cm
            try:
                return run()
            finally:
                Settings.callback_manager = idle_cm
                if len(debug.sequential_events) > 10_000:
                    debug.flush_event_logs()

        return go

    results: Dict[str, Dict[str, float]] = {}
    calls = args.calls

    # node parser ------------------------------------------------------------------------------
    splitter = SentenceSplitter(chunk_size=64, chunk_overlap=8)
    doc = Document(text=DOC_TEXT, id_="bench-doc")
    raw_parse = type(splitter).get_nodes_from_documents.__wrapped__  # type: ignore[attr-defined]
    n_nodes = len(splitter.get_nodes_from_documents([doc]))
    results["node_parser"] = _measure({
        "absent": lambda: raw_parse(splitter, [doc]),
        "idle": lambda: splitter.get_nodes_from_documents([doc]),
        "debug": with_debug(lambda: splitter.get_nodes_from_documents([doc])),
    }, calls, args.rounds, BLOCK)

    # retriever over a small real index ----------------------------------------------------------
    docs = SimpleDirectoryReader(input_dir=str(EXAMPLES)).load_data()
    t0 = time.perf_counter()
    index = VectorStoreIndex.from_documents(docs)
    build_s = time.perf_counter() - t0
    retriever = index.as_retriever(similarity_top_k=2, vector_store_query_mode="default")
    query = "How hot should the water be for green tea?"
    bundle = QueryBundle(query_str=query, embedding=index.embed_model.get_query_embedding(query))

    def raw_retrieve() -> Any:
        _check_not_empty(bundle)
        return retriever._retrieve(bundle)

    results["retriever"] = _measure({
        "absent": raw_retrieve,
        "idle": lambda: retriever.retrieve(bundle),
        "debug": with_debug(lambda: retriever.retrieve(bundle)),
    }, calls, args.rounds, BLOCK)

    # embedding a batch ----------------------------------------------------------------------------
    model = index.embed_model
    nodes = splitter.get_nodes_from_documents(docs)
    texts = [n.get_content(MetadataMode.EMBED) for n in nodes]
    texts = (texts * (args.texts // max(1, len(texts)) + 1))[: args.texts]
    reps = args.embed_reps

    def embed_absent() -> Any:
        model._embed_batch = lambda batch, compute: np.asarray(compute(batch), dtype=np.float32)
        try:
            return model.get_text_embedding_batch_array(texts)
        finally:
            del model._embed_batch

    results["embedding"] = _measure({
        "absent": embed_absent,
        "idle": lambda: model.get_text_embedding_batch_array(texts),
        "debug": with_debug(lambda: model.get_text_embedding_batch_array(texts)),
    }, reps, args.rounds, 1)

    # LLM ------------------------------------------------------------------------------------------
    llm = MockLLM(max_tokens=8)
    raw_complete = type(llm).complete.__wrapped__  # type: ignore[attr-defined]
    prompt = "Answer briefly: " + query
    results["llm"] = _measure({
        "absent": lambda: raw_complete(llm, prompt),
        "idle": lambda: llm.complete(prompt),
        "debug": with_debug(lambda: llm.complete(prompt)),
    }, calls, args.rounds, BLOCK)

    import timeit

    check_us = min(timeit.repeat(lambda: retriever.callback_manager.handlers, number=100_000, repeat=5)) * 10
    empty_us = min(timeit.repeat(lambda: None, number=100_000, repeat=5)) * 10

    # report ---------------------------------------------------------------------------------------
    out = io.StringIO()
    with redirect_stdout(out):
        print(f"$ python benchmarks/callbacks_overhead.py --calls {calls} --texts {args.texts} "
              f"--embed-reps {reps} --rounds {args.rounds}")
        print(f"python {platform.python_version()}, {os.cpu_count()} CPUs, load average at end "
              f"{[round(x, 2) for x in os.getloadavg()]}; index of {len(docs)} documents built in {build_s:.2f} s; "
              f"median of {args.rounds} rounds, CPU µs per call (process_time)")
        print(f"{'workload':<44}{'absent':>12}{'idle':>12}{'idle-absent':>13}{'overhead':>10}{'debug':>12}")
        labels = {
            "node_parser": f"node_parser ({calls} calls, {n_nodes} nodes each)",
            "retriever": f"retriever ({calls} calls, dense top 2)",
            "embedding": f"embedding ({reps} batches of {len(texts)} texts)",
            "llm": f"llm MockLLM.complete ({calls} calls)",
        }
        record: Dict[str, Any] = {"benchmark": "callbacks_overhead", "calls": calls, "texts": len(texts),
                                  "rounds": args.rounds}
        for name, r in results.items():
            diff = r["idle"] - r["absent"]
            share = diff / r["absent"] * 100 if r["absent"] else 0.0
            print(f"{labels[name]:<44}{r['absent']:>12.2f}{r['idle']:>12.2f}{diff:>13.2f}{share:>9.1f}%{r['debug']:>12.2f}")
            record[name] = {k: round(v, 3) for k, v in r.items()} | {"idle_minus_absent_us": round(diff, 3),
                                                                        "overhead_pct": round(share, 2)}
        print("(idle: the default empty Settings.callback_manager; debug: a LlamaDebugHandler recording every "
              "event; differences within a few % are timing noise on this shared machine)")
        print(f"the check alone, retriever.callback_manager.handlers: {check_us:.3f} µs per call "
              f"(an empty lambda call: {empty_us:.3f} µs)")
        record["check_us"] = round(check_us, 4)
        print(json.dumps(record))
    text = out.getvalue()
    sys.stdout.write(text)
    if args.results_dir != "-":
        dest = Path(args.results_dir)
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "callbacks_overhead.txt").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
