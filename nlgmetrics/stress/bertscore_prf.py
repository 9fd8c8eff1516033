"""BERTScore precision, recall and F1 as three stress-test metrics, aggregated over references as the paper did.

Why this exists: the paper's summarization anchor ("BERTScore-F fails truncation") is explained in its Figure 5
by precision *rising* as the summary is cut, cancelling the fall of recall. The toolkit's ``bertscore`` reports F1
only and keeps the best reference, so it can neither reproduce the paper's set-up nor show that curve. The
authors' code (blindspot_nlg ``sum_mt/SUM/score.py``) scores each gold summary against each of the ten extra
references and averages P, R and F separately over them (``aggregation="mean"``); ``"max"`` is bert_score's own
multi-reference rule (best P, R and F taken separately).

Same matching as ``baselines.BERTScorer``: greedy cosine matching of unit-normalised token vectors, no idf, no
baseline rescaling (the paper rescales; rescaling is affine per variant and changes no pass/fail). The encoder is
passed in as ``embed``, so this module loads no model and the caller picks encoder and layer.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from nlgmetrics.baselines import bertscore_prf as precision_recall_f1  # the one greedy matching, shared with BERTScorer

VARIANTS = {"bertscore-p": 0, "bertscore-r": 1, "bertscore-f": 2}
AGGREGATIONS = ("mean", "max")
EmbedFn = Callable[[list[str]], Sequence[np.ndarray]]


def aggregate(triples: Sequence[tuple[float, float, float]], how: str) -> tuple[float, float, float]:
    """P, R, F over several references, each variant aggregated on its own (as both the paper and bert_score do)."""
    if how not in AGGREGATIONS:
        raise ValueError(f"unknown aggregation {how!r}; use one of {AGGREGATIONS}")
    if not triples:
        raise ValueError("no reference to aggregate over")
    values = np.asarray(triples, dtype=np.float64)
    return tuple(float(x) for x in (values.mean(axis=0) if how == "mean" else values.max(axis=0)))  # type: ignore


def _unit(vectors: np.ndarray) -> np.ndarray:
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True).clip(1e-12)


class BERTScorePRF:
    """Computes P, R and F once per (hypothesis, references) row and serves them as three metric callables.

    The stress suite calls each metric once over all rows; caching the triple per row means the encoder runs
    once for all three variants. Hypotheses are embedded in chunks and their vectors dropped after scoring, so
    memory stays bounded however many noised texts there are; reference vectors are kept (few, reused).
    """

    def __init__(self, embed: EmbedFn, aggregation: str = "mean", chunk: int = 2048) -> None:
        if aggregation not in AGGREGATIONS:
            raise ValueError(f"unknown aggregation {aggregation!r}; use one of {AGGREGATIONS}")
        if chunk < 1:
            raise ValueError("chunk must be >= 1")
        self.embed, self.aggregation, self.chunk = embed, aggregation, chunk
        self._refs: dict[str, np.ndarray] = {}
        self._rows: dict[tuple[str, tuple[str, ...]], tuple[float, float, float]] = {}

    def _embed(self, texts: list[str]) -> list[np.ndarray]:
        vectors = list(self.embed(texts))
        if len(vectors) != len(texts):
            raise ValueError(f"embed returned {len(vectors)} arrays for {len(texts)} texts")
        return [_unit(np.asarray(v, dtype=np.float32)) for v in vectors]

    def scores(self, hyps: Sequence[str], refs: Sequence) -> np.ndarray:
        """``[n, 3]`` array of (P, R, F) per hypothesis; a reference is a string or a list of strings."""
        if len(hyps) != len(refs):
            raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
        keys = [(h, (r,) if isinstance(r, str) else tuple(r)) for h, r in zip(hyps, refs)]
        if any(not k[1] for k in keys):
            raise ValueError("a hypothesis has an empty list of references")
        new_refs = list(dict.fromkeys(t for _, rs in keys for t in rs if t not in self._refs))
        if new_refs:
            self._refs.update(zip(new_refs, self._embed(new_refs)))
        todo = list(dict.fromkeys(k for k in keys if k not in self._rows))
        for start in range(0, len(todo), self.chunk):
            part = todo[start : start + self.chunk]
            texts = list(dict.fromkeys(h for h, _ in part))
            vectors = dict(zip(texts, self._embed(texts)))
            for hyp, ref_texts in part:
                triples = [precision_recall_f1(vectors[hyp], self._refs[r]) for r in ref_texts]
                self._rows[hyp, ref_texts] = aggregate(triples, self.aggregation)
        return np.asarray([self._rows[k] for k in keys], dtype=np.float64).reshape(len(keys), 3)

    def metric(self, variant: str) -> Callable[[list[str], list, "list[str] | None"], list[float]]:
        """The stress-suite metric ``fn(hyps, refs, srcs) -> list[float]`` of one variant (bertscore-p/-r/-f)."""
        if variant not in VARIANTS:
            raise ValueError(f"unknown BERTScore variant {variant!r}; use one of {', '.join(VARIANTS)}")
        column = VARIANTS[variant]
        return lambda hyps, refs, srcs=None: [float(x) for x in self.scores(hyps, refs)[:, column]]
