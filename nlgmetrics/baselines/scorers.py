"""Baseline metrics behind the common Scorer shape: sentence BLEU, chrF, BERTScore-F1 and embedding cosine.

They run side by side with the trained metrics in every protocol, so a number for MENLI, SEScore or MARS
always comes with its peers measured on the same rows in the same run.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence
from urllib.parse import quote

import numpy as np

from nlgmetrics.baselines.embedding import mean_pooled, token_embeddings
from nlgmetrics.inputs import check_pairs
from nlgmetrics.metaeval.compare import CorpusStatistic
from nlgmetrics.modelroles.precision import DEFAULT_PRECISION, check_precision
from nlgmetrics.modelroles.resolve import DEFAULT_ENCODER
from nlgmetrics.signature import Signature


def _refs_per_hyp(hyps: Sequence[str], refs: Sequence[str] | Sequence[Sequence[str]]) -> list[list[str]]:
    """Accept one reference per hypothesis or a list of references per hypothesis (the shared input policy)."""
    return check_pairs(hyps, refs, hyp_name="hypotheses", ref_name="references")[1]


@dataclass
class SacreBleuScorer:
    """Sentence-level BLEU (effective order, as sacrebleu recommends for segments) or chrF."""

    name: str = "bleu"

    def __post_init__(self) -> None:
        if self.name not in ("bleu", "chrf"):
            raise ValueError(f"unknown sacrebleu metric '{self.name}'; use bleu or chrf")

    def _metric(self):
        import sacrebleu

        return sacrebleu.BLEU(effective_order=True) if self.name == "bleu" else sacrebleu.CHRF()

    def score(self, hyps: Sequence[str], refs: Sequence, srcs: Sequence[str] | None = None) -> list[float]:
        metric = self._metric()
        return [float(metric.sentence_score(h, r).score) for h, r in zip(hyps, _refs_per_hyp(hyps, refs))]

    def signature(self) -> str:
        metric = self._metric()
        metric.corpus_score(["x"], [["x"]])  # sacrebleu fills its signature only after one evaluation
        signature = metric.get_signature()
        signature.info["nrefs"] = "var"
        return str(Signature(self.name, (str(signature),), version_key="nlgmetrics"))

    def corpus_statistic(
        self,
        systems: Mapping[str, Sequence[str]],
        references: Sequence[Sequence[str]],
    ) -> tuple[CorpusStatistic, str]:
        """Corpus BLEU/chrF of several systems as sufficient statistics, and the corpus metric's signature.

        ``references`` are sacrebleu's reference streams (one list per reference set, aligned with every system).
        The corpus metric is sacrebleu's default ``BLEU()`` / ``CHRF()``, i.e. what ``sacrebleu`` prints for a
        system (not this scorer's sentence BLEU with effective order). Statistics come from sacrebleu's own
        ``_extract_corpus_statistics`` and scores from its ``_compute_score_from_stats``, the two methods its
        ``--paired-bs`` test uses, so a resample's score is sacrebleu's formula, not a re-implementation.
        """
        import sacrebleu

        kind = sacrebleu.BLEU if self.name == "bleu" else sacrebleu.CHRF
        metric = kind(references=references)  # references tokenised once, cached for every system
        stats = {
            name: np.asarray(metric._extract_corpus_statistics(hyps, None), dtype=np.int64)
            for name, hyps in systems.items()
        }
        # nrefs known from the cache
        signature = str(Signature(self.name, ("corpus", str(metric.get_signature())), version_key="nlgmetrics"))
        statistic = CorpusStatistic(
            stats,
            lambda summed: float(metric._compute_score_from_stats(summed).score),
            f"corpus {self.name} (sacrebleu corpus_score)",
        )
        return statistic, signature


def item_chunks(hyps: Sequence[str], ref_lists: Sequence[Sequence[str]], max_texts: int) -> list[tuple[int, int]]:
    """Contiguous ``[start, stop)`` item ranges, each with at most ``max_texts`` distinct texts (or one item).

    Encoder scorers hold the token embeddings of every distinct text they score; chunking keeps that memory flat
    however many items there are. Judged sets list all systems of an item next to each other, so the shared
    reference stays inside one chunk and is still encoded once.
    """
    if max_texts < 1:
        raise ValueError(f"max_texts must be >= 1, got {max_texts}")
    bounds: list[tuple[int, int]] = []
    start, seen = 0, set()
    for index, (hyp, refs) in enumerate(zip(hyps, ref_lists)):
        new = {hyp, *refs} - seen
        if index > start and len(seen) + len(new) > max_texts:
            bounds.append((start, index))
            start, seen = index, set()
            new = {hyp, *refs}
        seen |= new
    if len(hyps) > start:
        bounds.append((start, len(hyps)))
    return bounds


@dataclass
class _EncoderScorer:
    """Shared shell of the encoder baselines: lazy model load, unique texts encoded once, best reference.

    ``chunk_texts`` bounds the distinct texts whose embeddings are held at once (memory stays flat on 50k
    segments); scores do not depend on it, because each text's embedding does not depend on its batch.
    ``precision``: the encoder's forward pass, float32, bfloat16 or int8 (``nlgmetrics.modelroles.precision``).
    """

    encoder: str = DEFAULT_ENCODER
    batch_size: int = 64
    device: str | None = None
    progress: bool = False
    _loaded: object = field(default=None, repr=False)
    chunk_texts: int = 1024
    precision: str = DEFAULT_PRECISION

    def __post_init__(self) -> None:
        check_precision(self.precision)

    def _model(self):
        if self._loaded is None:
            from nlgmetrics.modelroles import load_encoder

            self._loaded = load_encoder(self.encoder, device=self.device)
        return self._loaded

    def _similarities(self, texts: list[str]) -> Callable[[str, str], float]:
        raise NotImplementedError

    def score(self, hyps: Sequence[str], refs: Sequence, srcs: Sequence[str] | None = None) -> list[float]:
        from tqdm.auto import tqdm

        ref_lists = _refs_per_hyp(hyps, refs)
        scores: list[float] = []
        with tqdm(total=len(hyps), desc=getattr(self, "name", "encode"), unit="seg", disable=not self.progress) as bar:
            for start, stop in item_chunks(hyps, ref_lists, self.chunk_texts):
                chunk_refs = ref_lists[start:stop]
                unique = list(dict.fromkeys(list(hyps[start:stop]) + [r for rs in chunk_refs for r in rs]))
                similarity = self._similarities(unique)
                scores.extend(max(similarity(h, r) for r in rs) for h, rs in zip(hyps[start:stop], chunk_refs))
                del similarity  # before the next chunk is encoded, or two chunks' embeddings are alive at once
                bar.update(stop - start)
        return scores


@dataclass
class BERTScorer(_EncoderScorer):
    """BERTScore-F1 on any encoder role: greedy cosine matching of contextual token embeddings.

    No idf weighting and no baseline rescaling (rescaling is linear and changes no ranking).
    Multiple references: the best F1.
    """

    layer: int | None = None
    prompt: str = ""
    name: str = "bertscore"

    def _similarities(self, texts: list[str]):
        vectors = token_embeddings(
            self._model(), texts, self.layer, self.batch_size, precision=self.precision, prompt=self.prompt
        )
        normed = {}
        for text, v in zip(texts, vectors):  # in place: a normalised copy would double the chunk's memory
            v /= np.linalg.norm(v, axis=1, keepdims=True).clip(1e-12)
            normed[text] = v
        return lambda h, r: bertscore_f1(normed[h], normed[r])

    def signature(self) -> str:
        m = self._model()
        # percent-encoded: a prompt may hold '|', the signature's separator
        shown = (("prompt", quote(self.prompt, safe=":")),) if self.prompt else ()
        parts = (("encoder", f"{self.encoder}@{m.hash}"), ("layer", self.layer), *shown, ("idf", "no"))
        return str(Signature(self.name, parts, precision=self.precision))


def bertscore_prf(hyp: np.ndarray, ref: np.ndarray) -> tuple[float, float, float]:
    """BERTScore P, R, F1 of greedy matching on unit-normalised token vectors [tokens, hidden]."""
    sim = hyp @ ref.T
    precision = float(sim.max(axis=1).mean())
    recall = float(sim.max(axis=0).mean())
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


def bertscore_f1(hyp: np.ndarray, ref: np.ndarray) -> float:
    """F1 of greedy matching on unit-normalised token vectors [tokens, hidden]."""
    return bertscore_prf(hyp, ref)[2]


@dataclass
class CosineScorer(_EncoderScorer):
    """Cosine of mean-pooled embeddings: SEScore's "without synthesized errors" ablation."""

    name: str = "cosine"

    def _similarities(self, texts: list[str]):
        pooled = mean_pooled(self._model(), texts, self.batch_size, precision=self.precision)
        pooled /= np.linalg.norm(pooled, axis=1, keepdims=True).clip(1e-12)
        row = {t: i for i, t in enumerate(texts)}
        return lambda h, r: float(pooled[row[h]] @ pooled[row[r]])

    def signature(self) -> str:
        loaded = self._model()
        prefix = getattr(loaded, "sentence_prefix", "")  # e5 folders name one; it changes every score
        shown = (("prefix", prefix.strip()),) if prefix else ()
        parts = (("encoder", f"{self.encoder}@{loaded.hash}"), ("pool", "mean"), *shown)
        return str(Signature(self.name, parts, precision=self.precision))
