"""Random choices of the synthesis, all drawn from one explicit ``numpy.random.Generator`` per variant.

The original seeded only Python's ``random`` and drew in batch order, so a sentence's errors depended on its
neighbours. Here each (sentence, variant) owns a generator spawned from the run seed, and every draw for that
variant happens in a fixed order (number of edits; then per step: edit kind, start, length, filler seed), so its
output is the same whatever else is processed alongside it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from sescore.synthesis.budget import BudgetTable
from sescore.synthesis.config import EDIT_KINDS, SpanLength, SynthesisConfig


def variant_rng(seed: int, sentence_index: int, variant_index: int) -> np.random.Generator:
    """The generator of one variant: SeedSequence(seed) spawn key (sentence, variant)."""
    if sentence_index < 0 or variant_index < 0:
        raise ValueError(f"indices must be >= 0, got sentence {sentence_index}, variant {variant_index}")
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(sentence_index, variant_index)))


def truncated_poisson_weights(low: int, high: int, lam: float | None) -> np.ndarray:
    """P(k) for k in low..high proportional to Poisson(k - low; lam) (uniform when lam is None)."""
    if not 0 <= low <= high:
        raise ValueError(f"need 0 <= low <= high, got {low}..{high}")
    ks = np.arange(high - low + 1)
    if lam is None:
        weights = np.ones(len(ks))
    elif lam == 0:
        weights = (ks == 0).astype(float)
    else:
        weights = np.array([math.exp(k * math.log(lam) - lam - math.lgamma(k + 1)) for k in ks])
    return weights / weights.sum()


def draw_from(rng: np.random.Generator, values: list, weights: np.ndarray):
    """One weighted choice via a single uniform draw (inverse CDF): one draw per choice, always."""
    cdf = np.cumsum(weights)
    index = int(np.searchsorted(cdf, rng.random() * cdf[-1], side="right"))
    return values[min(index, len(values) - 1)]


def draw_span(rng: np.random.Generator, span: SpanLength) -> int:
    lengths = list(range(span.min, span.max + 1))
    return int(draw_from(rng, lengths, truncated_poisson_weights(span.min, span.max, span.poisson_lambda)))


def draw_num_edits(rng: np.random.Generator, config: SynthesisConfig) -> int:
    """k in 1..max_edits with weights Poisson(k - 1; lambda): the shifted, truncated Poisson."""
    return draw_span(rng, SpanLength(1, config.max_edits, config.num_edits_lambda))


def step_mix(config: SynthesisConfig, step: int, num_edits: int) -> dict[str, float]:
    """Edit-kind weights at a step: single- vs multi-edit mix, seq2seq kinds dropped after seq2seq_max_step."""
    mix = config.mix_single_edit if num_edits == 1 else config.mix_multi_edit
    return {
        kind: float(weight)
        for kind, weight in sorted(mix.items())
        if weight > 0 and not (EDIT_KINDS[kind][1] == "seq2seq" and step > config.seq2seq_max_step)
    }


@dataclass(frozen=True)
class PlannedEdit:
    """One accepted draw. ``length``: tokens covered (span, swap distance, 0 for insert); ``fill_words``: how many
    words a length-taking filler should write (0 = the filler decides); ``fill_seed`` seeds the filler's picks.
    Rule kinds are drawn with operation ``rule`` and start -1: their span is known only after the rule ran
    (``rules.py``), and the pipeline replaces them with the edit the rule made."""

    kind: str
    operation: str
    filler: str | None
    start: int
    length: int
    fill_words: int
    fill_seed: int
    attempts: int


def draw_edit(
    rng: np.random.Generator, table: BudgetTable, step: int, num_edits: int, config: SynthesisConfig
) -> tuple[str, PlannedEdit | None]:
    """Draw one edit for ``step``; returns (first drawn kind, edit or None when every attempt was rejected)."""
    mix = step_mix(config, step, num_edits)
    if not mix or table.size == 0:
        return "none", None
    kinds = list(mix)
    weights = np.array([mix[k] for k in kinds])
    first_kind = ""
    for attempt in range(1 + config.retry_rejected):
        kind = draw_from(rng, kinds, weights)
        first_kind = first_kind or kind
        operation, filler = EDIT_KINDS[kind]
        if operation == "rule":  # the rule finds its own span; the budget table judges it once it is known
            return first_kind, PlannedEdit(
                kind, operation, None, -1, 0, 0, int(rng.integers(0, 2**63 - 1)), attempt + 1
            )
        start = int(rng.integers(0, table.size))
        fill_words = 0
        if kind == "delete":
            length = draw_span(rng, config.delete_span)
        elif kind == "seq2seq_replace":
            length = draw_span(rng, config.seq2seq_span)
            fill_words = length
        elif kind == "seq2seq_insert":
            length = 0
            fill_words = draw_span(rng, config.seq2seq_span)
        elif kind == "mlm_replace":
            length, fill_words = 1, 1
        elif kind == "mlm_insert":
            length, fill_words = 0, 1
        else:  # swap
            length = draw_span(rng, config.swap_distance)
        if table.accepts(operation, start, length):
            fill_seed = int(rng.integers(0, 2**63 - 1)) if filler else 0
            return first_kind, PlannedEdit(kind, operation, filler, start, length, fill_words, fill_seed, attempt + 1)
    return first_kind, None


__all__ = [
    "PlannedEdit",
    "draw_edit",
    "draw_from",
    "draw_num_edits",
    "draw_span",
    "step_mix",
    "truncated_poisson_weights",
    "variant_rng",
]
