"""The MARS robustness protocol (Liu et al., 2021, Table 4 and section 4.2) for any metric.

Every judged candidate is attacked twice: ``reorder`` (50% of its tokens trade places: a weak system whose
output is not readable) and ``context_sentence`` (a sentence copied from the context: a system with no
generation ability). A good metric scores each adversarial candidate lower than the original candidate it was
made from, against the same reference and context; the paper marks a metric not robust when the adversarial
candidates score equal or higher. Reported per metric and attack: mean score of the original candidates and of
the adversarial ones (over the same items), the drop, and the share of items whose score strictly dropped.

Randomness: item ``i`` of attack ``a`` under seed ``s`` draws from ``stress.sample_rng(s, a, i)``, so the
adversarial candidates do not depend on the batch, the metric or the other attack. Each metric sees all its
texts (originals and both attacks, deduplicated) in one ``score`` call, so model-based metrics batch them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping, Sequence

import numpy as np

from nlgmetrics.metaeval.scorer import Scorer, as_scorer
from nlgmetrics.perturb import NotApplicable, get_perturbation
from nlgmetrics.stress.noising import sample_rng

PROTOCOL = "mars-robustness-v1"
ATTACKS = ("reorder", "context_sentence")
DEFAULT_LEVELS = {"reorder": 0.5, "context_sentence": 1.0}  # paper: 50% of tokens; one sentence


def make_attacks(
    hyps: Sequence[str],
    srcs: Sequence[str] | None,
    *,
    seed: int = 0,
    attacks: Sequence[str] = ATTACKS,
    levels: Mapping[str, float] | None = None,
) -> dict[str, dict[str, Any]]:
    """Adversarial candidates per attack: ``{attack: {"items": [i...], "texts": [...], "skipped": {reason: n}}}``.

    Pure: the same hypotheses, sources and seed give the same candidates. Items an attack cannot apply to
    (one-token candidate, no context) are skipped and counted by reason, never passed through unchanged.
    """
    if isinstance(hyps, str) or len(hyps) == 0:
        raise ValueError("hyps must be a non-empty list of candidate strings")
    if srcs is not None and len(srcs) != len(hyps):
        raise ValueError(f"{len(hyps)} candidates but {len(srcs)} contexts")
    unknown = [a for a in attacks if a not in ATTACKS]
    if unknown or not attacks or len(set(attacks)) != len(attacks):
        raise ValueError(f"attacks must be distinct names from {ATTACKS}, got {list(attacks)}")
    levels = {**DEFAULT_LEVELS, **(levels or {})}
    out: dict[str, dict[str, Any]] = {}
    for attack in attacks:
        perturbation = get_perturbation(attack)
        items, texts, skipped = [], [], Counter()
        for i, hyp in enumerate(hyps):
            if not isinstance(hyp, str):
                raise TypeError(f"hyps[{i}] is {type(hyp).__name__}, expected str")
            source = srcs[i] if srcs is not None else None
            try:
                text = perturbation(hyp, sample_rng(seed, attack, i), levels[attack], source=source)
            except NotApplicable as refusal:
                skipped[refusal.reason] += 1
                continue
            if text == hyp:  # a perturbation must change the candidate; guard anyway
                skipped["attack left the candidate unchanged"] += 1
                continue
            items.append(i)
            texts.append(text)
        out[attack] = {"level": levels[attack], "items": items, "texts": texts, "skipped": dict(skipped)}
    return out


def summarize(original: Sequence[float], attacked: Sequence[float]) -> dict[str, float | int | bool]:
    """Mean original vs attacked score over the same items, the drop, and the shares dropped / tied / higher."""
    a, b = np.asarray(original, dtype=float), np.asarray(attacked, dtype=float)
    if a.shape != b.shape or a.size == 0:
        raise ValueError("original and attacked scores must be non-empty and of equal length")
    return {
        "n": int(a.size),
        "mean_original": float(a.mean()),
        "mean_attacked": float(b.mean()),
        "drop": float(a.mean() - b.mean()),
        "share_dropped": float(np.mean(b < a)),
        "share_tied": float(np.mean(b == a)),
        "share_higher": float(np.mean(b > a)),
        "robust": bool(a.mean() > b.mean()),
    }


def run_robustness(
    metrics: Mapping[str, Scorer | Any],
    hyps: Sequence[str],
    refs: Sequence[Any],
    srcs: Sequence[str] | None = None,
    *,
    seed: int = 0,
    attacks: Sequence[str] = ATTACKS,
    levels: Mapping[str, float] | None = None,
    examples: int = 3,
) -> dict[str, Any]:
    """Score original and adversarial candidates with every metric; a JSON-able report.

    ``metrics`` maps names to objects with ``.score(hyps, refs, srcs)`` (and ideally ``.signature()``) or plain
    callables ``fn(hyps, refs, srcs)`` (higher = better). ``refs[i]`` is passed through as given (a string or a list
    of references).
    """
    if not metrics:
        raise ValueError("no metric to test")
    if len(refs) != len(hyps):
        raise ValueError(f"{len(hyps)} candidates but {len(refs)} references")
    made = make_attacks(hyps, srcs, seed=seed, attacks=attacks, levels=levels)
    # (candidate, reference index) pairs to score: originals first, then each attack's texts; deduplicated
    wanted: dict[tuple[str, int], int] = {}
    for i, hyp in enumerate(hyps):
        wanted.setdefault((hyp, i), len(wanted))
    for attack in made.values():
        for i, text in zip(attack["items"], attack["texts"]):
            wanted.setdefault((text, i), len(wanted))
    pairs = list(wanted)
    report: dict[str, Any] = {
        "protocol": PROTOCOL,
        "seed": int(seed),
        "n_items": len(hyps),
        "metrics": list(metrics),
        "attacks": {
            name: {
                "level": a["level"],
                "n_applied": len(a["items"]),
                "skipped": a["skipped"],
                "examples": [
                    {"item": i, "original": hyps[i], "attacked": t}
                    for i, t in list(zip(a["items"], a["texts"]))[:examples]
                ],
            }
            for name, a in made.items()
        },
        "results": {},
        "signatures": {},
    }
    for name, metric in metrics.items():
        # any object with .score (toolkit scorers need not match the Scorer protocol exactly), else a callable
        score = metric.score if callable(getattr(metric, "score", None)) else as_scorer(metric, name).score
        pair_srcs = [srcs[i] for _, i in pairs] if srcs is not None else None
        scores = score([t for t, _ in pairs], [refs[i] for _, i in pairs], pair_srcs)
        if len(scores) != len(pairs):
            raise ValueError(f"metric {name!r} returned {len(scores)} scores for {len(pairs)} candidates")
        scores = [float(s) for s in scores]
        per_attack = {}
        for attack, a in made.items():
            if not a["items"]:
                per_attack[attack] = {"n": 0, "reason": "attack applied to no item"}
                continue
            original = [scores[wanted[(hyps[i], i)]] for i in a["items"]]
            attacked = [scores[wanted[(t, i)]] for i, t in zip(a["items"], a["texts"])]
            per_attack[attack] = summarize(original, attacked)
        report["results"][name] = per_attack
        signature = getattr(metric, "signature", None)
        report["signatures"][name] = signature() if callable(signature) else f"{name}|callable"
    return report


def markdown_table(report: Mapping[str, Any], digits: int = 4) -> str:
    """One row per metric and attack: mean original, mean attacked, drop, share of items that dropped."""
    lines = [
        "| metric | attack | n | mean original | mean attacked | drop | share dropped | robust |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, per_attack in report["results"].items():
        for attack, r in per_attack.items():
            if not r.get("n"):
                lines.append(f"| {name} | {attack} | 0 | - | - | - | - | - |")
                continue
            lines.append(
                f"| {name} | {attack} | {r['n']} | {r['mean_original']:.{digits}f} | {r['mean_attacked']:.{digits}f} "
                f"| {r['drop']:.{digits}f} | {r['share_dropped']:.3f} | {'yes' if r['robust'] else 'no'} |"
            )
    return "\n".join(lines) + "\n"
