"""Baseline metrics (sentence BLEU, chrF, BERTScore-F1, embedding cosine) in the common Scorer shape."""

from nlgmetrics.baselines.embedding import mean_pooled, padded_batches, token_embeddings
from nlgmetrics.baselines.scorers import BERTScorer, CosineScorer, SacreBleuScorer, bertscore_f1, bertscore_prf

__all__ = [
    "BERTScorer",
    "CosineScorer",
    "SacreBleuScorer",
    "bertscore_f1",
    "bertscore_prf",
    "mean_pooled",
    "padded_batches",
    "token_embeddings",
]
