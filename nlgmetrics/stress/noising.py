"""Apply blind-spot tests to a set of gold hypotheses: every level x seed, with per-sample bookkeeping.

Randomness: sample ``i`` of test ``t`` under seed ``s`` draws from ``default_rng([s, crc32(t), i])`` at every
level. The stream therefore does not depend on the batch, on other samples or on which levels were asked for,
and probability-based noises are nested (what level 0.5 removes, level 1.0 removes too).

A sample is kept for a test only if the test applied at every level and seed: means at different levels are
then over the same samples, so a curve can only move because of the noise, not because the sample set shifts.
"""

from __future__ import annotations

import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from nlgmetrics.perturb import NotApplicable, get_perturbation, noise_ratio

MIN_NOISE_GAP = 0.05  # paper, appendix I: levels chosen so noise ratios differ by about 5% or more


@dataclass(frozen=True)
class NoisedTest:
    """Perturbed hypotheses of one test: ``texts[level][seed][k]`` for applied sample ``applied[k]``."""

    name: str
    levels: tuple[float, ...]
    seeds: tuple[int, ...]
    applied: tuple[int, ...]
    texts: tuple[tuple[tuple[str, ...], ...], ...]
    noise: tuple[tuple[float, ...], ...]  # noise ratio per [level][seed], mean over applied samples
    skipped: Mapping[str, int] = field(default_factory=dict)  # refusal reason -> number of samples
    warnings: tuple[str, ...] = ()


def sample_rng(seed: int, test: str, sample: int) -> np.random.Generator:
    """The generator of one sample in one test under one seed (independent of batch and levels)."""
    return np.random.default_rng([int(seed), zlib.crc32(test.encode("utf-8")), int(sample)])


def check_levels(name: str, levels: Sequence[float]) -> tuple[float, ...]:
    """Levels must be positive, distinct; they are sorted so the curve runs from mild to strong noise."""
    levels = tuple(sorted(float(x) for x in levels))
    if not levels or any(not x > 0 for x in levels) or len(set(levels)) != len(levels):
        raise ValueError(f"test {name!r}: levels must be distinct positive numbers, got {list(levels)}")
    return levels


def noise_test(
    name: str,
    hyps: Sequence[str],
    levels: Sequence[float],
    seeds: Sequence[int],
    contexts: Sequence[Mapping[str, Any]],
    shared: Mapping[str, Any],
) -> NoisedTest:
    """Run test ``name`` on every hypothesis at every level and seed; drop samples it cannot apply to."""
    perturbation = get_perturbation(name)
    levels = check_levels(name, levels)
    alive = [i for i in range(len(hyps))]
    reasons: dict[int, str] = {}
    outputs: dict[tuple[int, int], dict[int, str]] = {}
    for li, level in enumerate(levels):
        for si, seed in enumerate(seeds):
            produced = perturbation.apply_batch(
                [hyps[i] for i in alive],
                [sample_rng(seed, name, i) for i in alive],
                level,
                [contexts[i] for i in alive],
                shared,
            )
            outputs[li, si] = {}
            for i, out in zip(alive, produced):
                if isinstance(out, NotApplicable):
                    reasons.setdefault(i, out.reason)
                else:
                    outputs[li, si][i] = out
            alive = [i for i in alive if i not in reasons]
    applied = tuple(alive)
    texts = [[tuple(outputs[li, si][i] for i in applied) for si in range(len(seeds))] for li in range(len(levels))]
    kept_levels, warnings = _distinct_levels(levels, texts)
    texts = [texts[li] for li in kept_levels]
    noise = tuple(
        tuple(
            float(
                np.mean([noise_ratio(hyps[i], t, perturbation.halve_noise_ratio) for i, t in zip(applied, seed_texts)])
            )
            if applied
            else float("nan")
            for seed_texts in level_texts
        )
        for level_texts in texts
    )
    means = [0.0, *(float(np.mean(level_noise)) for level_noise in noise)]
    kept = [0.0, *(levels[li] for li in kept_levels)]
    for k in range(1, len(means)):
        if applied and means[k] - means[k - 1] < MIN_NOISE_GAP:
            warnings.append(
                f"noise ratios at levels {kept[k - 1]:g} and {kept[k]:g} differ by "
                f"{means[k] - means[k - 1]:.3f} (< {MIN_NOISE_GAP}, the paper's guideline)"
            )
    return NoisedTest(
        name,
        tuple(levels[li] for li in kept_levels),
        tuple(int(s) for s in seeds),
        applied,
        tuple(tuple(level_texts) for level_texts in texts),
        noise,
        dict(Counter(reasons.values())),
        tuple(warnings),
    )


def _distinct_levels(levels: Sequence[float], texts: list) -> tuple[list[int], list[str]]:
    """Drop a level whose texts equal the previous kept level's for every sample and seed.

    Identical inputs get identical scores, which can never be "strictly lower": keeping such a level would fail
    every metric for a property of the data (e.g. middle swap on one-sentence texts), not of the metric.
    """
    kept, warnings = [0] if levels else [], []
    for li in range(1, len(levels)):
        if texts[li] == texts[kept[-1]]:
            warnings.append(f"level {levels[li]:g} produced the same texts as level {levels[kept[-1]]:g}; dropped")
        else:
            kept.append(li)
    return kept, warnings
