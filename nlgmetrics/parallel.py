"""Scoring in several processes (``--devices N``) with exactly the scores of one process.

Why processes and not a distributed sampler: a Scorer maps (hypothesis, references, source) items to one float
each, so contiguous shards scored independently and concatenated in order are the whole job; there is no
gradient or metric state to reduce. Each process loads its own model copy (``cuda:i`` for process i when the
user asks for CUDA, else CPU), scores its shard and sends back plain floats.

Same scores as one process, bit for bit, because every model-facing batcher of the toolkit pads each text to a
length fixed by its own token count (``nlgmetrics.modelroles.batching.bucketed_batches``), never by its
neighbours in the batch; each process keeps the thread count of the parent (on CPU, intra-op thread
counts can move float sums in the last bits); every head on one vector per text (the NLI classifier, SEScore's
regressor) runs on batches filled to a multiple of 8 rows (``nlgmetrics.modelroles.batching.filled_rows``), since
a head on 1 to 3 vectors rounded differently from the same rows among 8 (a 1-in-8 test failure, traced to this);
and ``import nlgmetrics`` puts MKL in its strict reproducible mode (``MKL_CBWR=AUTO,STRICT``), which on the CPU
of earlier sessions alone was enough and on an AMD EPYC is not.
On CUDA, cuBLAS picks kernels by shape too: identical there is not tested here. Scorers whose score of an item
depends on the other items (the set-level min-max normalisation of ``menli+<metric>``) are split by the caller
into per-item parts first.
"""

from __future__ import annotations

import math
import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from nlgmetrics import truncation

Builder = Callable[[int, str | None], Any]  # (process index, device) -> Scorer; must be picklable


def shard_bounds(n: int, parts: int) -> list[tuple[int, int]]:
    """Contiguous, near-equal ``[start, stop)`` slices of ``n`` items; never an empty slice."""
    parts = max(1, min(parts, n))
    size = math.ceil(n / parts) if n else 0
    return [(start, min(start + size, n)) for start in range(0, n, size)] if n else []


def process_devices(device: str | None, processes: int) -> list[str | None]:
    """The device of each process: ``cuda:i`` for CUDA requests (or auto with GPUs present), else CPU.

    A process per GPU is what users with several GPUs want; asking for more CUDA processes than GPUs is an error
    rather than two processes silently sharing one card.
    """
    import torch

    wants_cuda = device is not None and str(device).startswith("cuda")
    auto = device in (None, "auto")
    if wants_cuda or (auto and torch.cuda.is_available()):
        available = torch.cuda.device_count()
        if available < processes:
            raise ValueError(f"--devices {processes} asks for {processes} GPUs but {available} are visible")
        return [f"cuda:{i}" for i in range(processes)]
    return ["cpu"] * processes


def _score_shard(
    build: Builder, index: int, device: str | None, threads: int, hyps: list, refs: list | None, srcs: list | None
) -> tuple[list[float], dict, str]:
    """Runs in a worker process: build the scorer, score one shard, return scores, truncation counts, signature."""
    import torch

    torch.set_num_threads(threads)
    scorer = build(index, device)
    with truncation.track_truncation() as counts:
        scores = scorer.score(hyps, refs, srcs)
    return [float(s) for s in scores], counts, scorer.signature()


def _signature_of(build: Builder) -> str:
    """Runs in a worker process: build one CPU copy of the scorer and return its signature."""
    return build(0, "cpu").signature()


def _spawn_context():
    return multiprocessing.get_context("spawn")  # fork would copy torch's thread pools and CUDA state


@dataclass
class ProcessScorer:
    """A Scorer that scores contiguous shards in ``processes`` spawned processes and concatenates them.

    ``build(index, device)`` runs inside each process (models are never pickled); ``signature`` is the wrapped
    scorer's, since the scores are the same: taken from the scoring workers, or, when asked before scoring (score
    caches keyed by it, stored combination ranges checked against it), from one short-lived process. Either way
    the parent never holds a model copy beside the N it started.
    """

    build: Builder
    processes: int
    device: str | None
    name: str = "metric"
    signature_text: str | None = None

    def score(self, hyps: Sequence[str], refs: Sequence[Any] | None, srcs: Sequence[str] | None = None) -> list[float]:
        import torch

        bounds = shard_bounds(len(hyps), self.processes)
        if not bounds:
            return []
        devices = process_devices(self.device, len(bounds))
        threads = torch.get_num_threads()
        with ProcessPoolExecutor(max_workers=len(bounds), mp_context=_spawn_context()) as pool:
            futures = [
                pool.submit(
                    _score_shard,
                    self.build,
                    index,
                    devices[index],
                    threads,
                    list(hyps[a:b]),
                    None if refs is None else list(refs[a:b]),
                    None if srcs is None else list(srcs[a:b]),
                )
                for index, (a, b) in enumerate(bounds)
            ]
            results = [future.result() for future in futures]
        scores: list[float] = []
        signatures = {signature for _, _, signature in results}
        if len(signatures) != 1:  # e.g. a model folder changed while the processes loaded it
            raise RuntimeError(f"the {len(bounds)} processes scored with different models: {sorted(signatures)}")
        self.signature_text = signatures.pop()
        for shard_scores, counts, _ in results:
            scores.extend(shard_scores)
            for where, entry in counts.items():
                truncation.note(where, entry["truncated"], entry["of"], entry["limit"])
        return scores

    def signature(self) -> str:
        if self.signature_text is None:  # asked before scoring: one CPU copy, in a process that then exits
            with ProcessPoolExecutor(max_workers=1, mp_context=_spawn_context()) as pool:
                self.signature_text = pool.submit(_signature_of, self.build).result()
        return self.signature_text
