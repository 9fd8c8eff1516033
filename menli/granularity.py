"""Sentence-level NLI for texts longer than the NLI model's window (the SummaC idea, in MENLI's terms).

An NLI cross-encoder truncates a (premise, hypothesis) pair at its window (128 tokens for the offline model), so
damage late in a paragraph is never seen, and one entailment probability for two whole paragraphs barely moves
when one sentence breaks. At sentence granularity both texts are split into sentences and every
(premise sentence, hypothesis sentence) pair is scored in one batched pass. Each hypothesis sentence takes the
probability vector of its best-supporting premise sentence (max of the MENLI formula over premise sentences);
the text's vector is the mean of those (``reduce="mean"``) or the vector of its least-supported sentence
(``reduce="min"``: one unsupported sentence decides). The result is an (e, n, c) vector per pair, so MENLI's
pooling (directions average vectors first, then apply the formula) is unchanged.

``granularity="auto"`` uses sentences only for pairs that would be truncated; every other pair is scored exactly
as at text granularity, so short texts keep today's scores to the bit.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any, Callable, Sequence

import numpy as np

from menli.pooling import FORMULAS
from nlgmetrics.modelroles.batching import token_lengths

GRANULARITIES = ("auto", "sentence", "text")
REDUCTIONS = ("mean", "min")

Splitter = Callable[[str], list[str]]


@lru_cache(maxsize=1)
def _sentencizer() -> Any:
    import spacy

    nlp = spacy.blank("xx")  # rule-based punctuation splitting: any language, no model download, deterministic
    nlp.add_pipe("sentencizer")
    return nlp


def split_sentences(text: str) -> list[str]:
    """Sentences of ``text`` (spaCy's multilingual sentencizer); a text without a boundary is one sentence."""
    sentences = [s.text.strip() for s in _sentencizer()(text).sents]
    return [s for s in sentences if s] or [text]


def check_granularity(granularity: str, reduce: str) -> None:
    if granularity not in GRANULARITIES:
        raise ValueError(f"unknown granularity '{granularity}'; choose from {', '.join(GRANULARITIES)}")
    if reduce not in REDUCTIONS:
        raise ValueError(f"unknown sentence reduction '{reduce}'; choose from {', '.join(REDUCTIONS)}")


def pair_lengths(nli: Any, premises: Sequence[str], hypotheses: Sequence[str]) -> np.ndarray:
    """Token count of each pair as the NLI model would encode it untruncated (special tokens included)."""
    # over-long pairs are the point here (no warning); chunked, so paragraphs never sit in memory all at once
    return np.array(token_lengths(nli.tokenizer, premises, None, hypotheses), dtype=np.int64)


def pool_sentence_matrix(
    probs: np.ndarray, formula: str, reduce: str = "mean", scored: np.ndarray | None = None
) -> np.ndarray:
    """[m premise sentences, n hypothesis sentences, 3] probabilities -> one (e, n, c) vector for the text pair.

    ``scored`` ([m, n] booleans) marks the pairs that were actually scored; the others never win the max.
    """
    weights = np.asarray(FORMULAS[formula])
    scores = probs @ weights  # [m, n]
    if scored is not None:
        scores = np.where(scored, scores, -np.inf)
    best = scores.argmax(axis=0)  # best-supporting premise sentence per hypothesis sentence
    columns = np.arange(probs.shape[1])
    vectors = probs[best, columns]  # [n, 3]
    if reduce == "mean":
        return vectors.mean(axis=0)
    return vectors[scores[best, columns].argmin()]


_WORDS = re.compile(r"\w+")


def candidate_mask(premise_sentences: Sequence[str], hypothesis_sentences: Sequence[str], k: int) -> np.ndarray:
    """[m, n] booleans: for each hypothesis sentence, the ``k`` premise sentences sharing the most words with it
    (Dice overlap of lower-cased word sets) plus the one at the same relative position (translations and
    summaries keep rough order). ``k = 0`` keeps every pair.

    The best-supporting premise sentence of a hypothesis sentence is almost always among its lexical neighbours,
    so scoring only those cuts the m x n NLI pairs to about (k + 1) x n with little change in the pooled vector
    (measured in bench/results/menli_granularity.md).
    """
    m, n = len(premise_sentences), len(hypothesis_sentences)
    if k <= 0 or m <= k:
        return np.ones((m, n), dtype=bool)
    words_p = [set(_WORDS.findall(p.lower())) for p in premise_sentences]
    mask = np.zeros((m, n), dtype=bool)
    for j, h in enumerate(hypothesis_sentences):
        words_h = set(_WORDS.findall(h.lower()))
        overlap = np.array([2 * len(words_h & w) / max(1, len(words_h) + len(w)) for w in words_p])
        mask[np.argsort(-overlap, kind="stable")[:k], j] = True
        mask[min(m - 1, round(j * m / n)), j] = True
    return mask


def sentence_level_probs(
    nli: Any,
    premises: Sequence[str],
    hypotheses: Sequence[str],
    formula: str,
    reduce: str = "mean",
    batch_size: int = 64,
    progress: bool = False,
    split: Splitter = split_sentences,
    candidates: int = 0,
) -> np.ndarray:
    """[N, 3] probabilities, each pooled from its sentence-pair matrix; all sentence pairs in one batched pass.

    ``candidates > 0`` scores only each hypothesis sentence's lexical neighbours (``candidate_mask``).
    """
    check_granularity("sentence", reduce)
    if candidates < 0:
        raise ValueError(f"sentence candidates must be >= 0 (0 = all), got {candidates}")
    split_p = [split(p) for p in premises]
    split_h = [split(h) for h in hypotheses]
    flat_p, flat_h, masks = [], [], []
    for ps, hs in zip(split_p, split_h):
        mask = candidate_mask(ps, hs, candidates)
        masks.append(mask)
        for i, j in zip(*np.nonzero(mask)):
            flat_p.append(ps[i])
            flat_h.append(hs[j])
    probs = nli.predict_proba(flat_p, flat_h, batch_size=batch_size, progress=progress, desc="MENLI sentences")
    out = np.zeros((len(premises), 3), dtype=np.float64)
    start = 0
    for index, mask in enumerate(masks):
        matrix = np.zeros(mask.shape + (3,), dtype=np.float64)
        count = int(mask.sum())
        matrix[mask] = probs[start : start + count]  # row-major order, as np.nonzero listed them
        out[index] = pool_sentence_matrix(matrix, formula, reduce, None if mask.all() else mask)
        start += count
    return out


def nli_probabilities(
    nli: Any,
    premises: Sequence[str],
    hypotheses: Sequence[str],
    formula: str,
    granularity: str = "auto",
    reduce: str = "mean",
    batch_size: int = 64,
    progress: bool = False,
    desc: str = "MENLI",
    candidates: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """[N, 3] probabilities at the asked granularity, and which pairs were scored sentence by sentence.

    ``auto`` sends a pair to sentences when it is longer than the model's window (``nli.max_length``); all other
    pairs go through the text-level pass unchanged (a one-sentence pair gives the same either way).
    """
    check_granularity(granularity, reduce)
    n = len(premises)
    if granularity == "text" or n == 0:
        use = np.zeros(n, dtype=bool)
    elif granularity == "sentence":
        use = np.ones(n, dtype=bool)
    else:
        window = getattr(nli, "max_length", None)
        use = pair_lengths(nli, premises, hypotheses) > window if window else np.zeros(n, dtype=bool)
    out = np.zeros((n, 3), dtype=np.float64)
    text_rows, sentence_rows = np.flatnonzero(~use), np.flatnonzero(use)
    if len(text_rows):
        out[text_rows] = nli.predict_proba(
            [premises[i] for i in text_rows],
            [hypotheses[i] for i in text_rows],
            batch_size=batch_size,
            progress=progress,
            desc=desc,
        )
    if len(sentence_rows):
        out[sentence_rows] = sentence_level_probs(
            nli,
            [premises[i] for i in sentence_rows],
            [hypotheses[i] for i in sentence_rows],
            formula,
            reduce,
            batch_size,
            progress,
            candidates=candidates,
        )
    return out, use
