"""The MARS score itself (eq. 7), as pure functions: weights, weighted cosine, mean-pooled sentence embeddings.

``mars_scores`` follows the toolkit's functional convention (``menli.functional``, ``sescore.functional``): the
model comes first, then the texts, and the result is a float64 numpy array with one score per hypothesis.

MARS = sum_i a q^(i-1) cos(cand, ref_{i-1}) with sum_i a q^(i-1) = 1, ref_0 the human reference and ref_i the
augmented reference of the i-th masking ratio, so the human reference weighs most. Embeddings are the mean of
the encoder's last-layer token embeddings (Sentence-BERT pooling, as in the paper).
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np
import torch

from nlgmetrics.baselines.embedding import mean_pooled


def geometric_weights(n: int, q: float) -> torch.Tensor:
    """a * q^(i-1) for i = 1..n, with a chosen so the weights sum to 1."""
    if n < 1:
        raise ValueError(f"need at least one reference, got n={n}")
    if not 0.0 < q <= 1.0:
        raise ValueError(f"q must lie in (0, 1], got {q}")
    powers = torch.tensor([q**i for i in range(n)], dtype=torch.float64)
    return (powers / powers.sum()).float()


def weighted_cosine(candidates: torch.Tensor, references: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
    """sum_j weights[j] * cos(candidates[b], references[b, j]); shapes [B, D], [B, R, D], [R] -> [B]."""
    if references.dim() != 3 or candidates.dim() != 2 or references.shape[0] != candidates.shape[0]:
        raise ValueError(f"shape mismatch: candidates {tuple(candidates.shape)}, references {tuple(references.shape)}")
    if references.shape[1] != weights.shape[0]:
        raise ValueError(f"{references.shape[1]} references per candidate but {weights.shape[0]} weights")
    cos = torch.nn.functional.cosine_similarity(candidates.unsqueeze(1), references, dim=-1)
    return (cos * weights.to(cos.dtype)).sum(dim=-1)


def mean_pooled_embeddings(
    encoder: Any,
    texts: Sequence[str],
    batch_size: int = 32,
    max_length: int = 512,
    progress: bool = False,
) -> torch.Tensor:
    """[N, D] attention-masked means of last-layer token embeddings; batched longest first, input order kept.

    The shared encode loop (``nlgmetrics.baselines.mean_pooled``) without a model's sentence prefix: MARS weighs
    raw texts, as its paper does.
    """
    if not len(texts):
        return torch.zeros((0, 0))
    pooled = mean_pooled(
        encoder, list(texts), batch_size, max_length, progress, prefix=False, what="MARS encoder texts"
    )
    return torch.from_numpy(pooled)


def _check_texts(name: str, texts: Sequence[Any]) -> None:
    for i, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"{name}[{i}] is {type(text).__name__}, expected str")
        if not text.strip():
            raise ValueError(f"{name}[{i}] is empty")


def mars_scores(
    encoder: Any,
    hyps: Sequence[str],
    reference_sets: Sequence[Sequence[str]],
    q: float = 0.8,
    batch_size: int = 32,
    max_length: int = 512,
    progress: bool = False,
) -> np.ndarray:
    """MARS for each candidate given its references (eq. 7), in the toolkit's functional convention.

    Args:
        encoder: the loaded encoder role (``tokenizer`` and ``model``, as ``nlgmetrics.modelroles.load_model``
            gives it).
        hyps: the candidates.
        reference_sets: per candidate, [human reference, augmented references in ratio order]; every candidate has
            the same number of references.
        q: the geometric ratio of the reference weights (``geometric_weights``).
        batch_size: texts per encoder batch (speed only: a text's vector does not depend on its batch).
        max_length: token window of the encoder.
        progress: show a progress bar over the encoder batches.

    Returns:
        [N] float64 scores in input order (computed in float32, widened exactly).
    """
    if len(hyps) != len(reference_sets):
        raise ValueError(f"{len(hyps)} hypotheses but {len(reference_sets)} reference sets")
    _check_texts("hyps", hyps)
    if not hyps:
        return np.zeros(0, dtype=np.float64)
    sizes = {len(refs) for refs in reference_sets}
    if len(sizes) != 1:
        raise ValueError(f"every candidate needs the same number of references, got sizes {sorted(sizes)}")
    for i, refs in enumerate(reference_sets):
        _check_texts(f"reference_sets[{i}]", refs)
    n_refs = sizes.pop()
    unique: dict[str, int] = {}
    for text in list(hyps) + [r for refs in reference_sets for r in refs]:
        unique.setdefault(text, len(unique))
    embeddings = mean_pooled_embeddings(encoder, list(unique), batch_size, max_length, progress)
    cand = embeddings[torch.tensor([unique[h] for h in hyps])]
    refs = embeddings[torch.tensor([[unique[r] for r in refs] for refs in reference_sets])]
    return weighted_cosine(cand, refs, geometric_weights(n_refs, q)).numpy().astype(np.float64)


def mars_score(
    hyps: Sequence[str],
    reference_sets: Sequence[Sequence[str]],
    encoder: Any,
    q: float = 0.8,
    batch_size: int = 32,
    max_length: int = 512,
    progress: bool = False,
) -> list[float]:
    """``mars_scores`` in this function's former argument order (encoder third) and return type, for old callers.

    New code calls ``mars_scores(encoder, hyps, reference_sets, ...)``, the order of ``menli_scores`` and
    ``sescore_scores``.
    """
    return mars_scores(encoder, hyps, reference_sets, q, batch_size, max_length, progress).tolist()
