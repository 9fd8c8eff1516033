"""The self-evaluation-bias test (blind-spot paper, section 5.4), runnable offline.

Several causal LMs each continue the same prompts (top-k sampling, k = 50, seeded per item); every LM then
scores every generator's continuations by its mean token log-probability (GPT-PPL's quantity), and neutral
judges (reference-based metrics against the true continuation) score them too. The paper reads a 4x4 table and
calls it bias when an evaluator ranks its own base model's generations above those of models that other
judges rank higher. Here the reading is a statistic with an interval:

    for an LM evaluator m whose own generator is A, and any other generator G,
    win_m(A > G)   = share of prompts where m scores A's continuation above G's (ties count one half)
    bias_m(A, G)   = win_m(A > G) - mean over reference judges e of win_e(A > G)

The reference judges are the neutral ones (metrics with no generator of their own here) when there are any,
otherwise every other metric. Win shares are free of each LM's log-probability scale (vocabularies of 49k and
262k tokens give incomparable raw numbers). A paired bootstrap over prompts (the same resampled prompts for
every metric) gives the 95% interval; the verdict is "prefers its own generator" when fewer than 5% of
resamples give bias <= 0.
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Sequence

import numpy as np

ScoreMatrix = Mapping[str, Mapping[str, np.ndarray]]  # metric -> generator -> one score per prompt


def prompts_from_paragraphs(
    paragraphs: Sequence[str], prompt_words: int = 32, continuation_words: int = 32
) -> tuple[list[str], list[str]]:
    """(prompt, true continuation) pairs: the first words of each paragraph and the words that follow them.

    Paragraphs too short for both parts are skipped, so the true continuation always has its full length.
    """
    if prompt_words < 1 or continuation_words < 1:
        raise ValueError("prompt_words and continuation_words must be >= 1")
    prompts, continuations = [], []
    for paragraph in paragraphs:
        words = paragraph.split()
        if len(words) >= prompt_words + continuation_words:
            prompts.append(" ".join(words[:prompt_words]))
            continuations.append(" ".join(words[prompt_words : prompt_words + continuation_words]))
    return prompts, continuations


def _win_share(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Per prompt: 1 where a > b, 0.5 on ties, 0 otherwise (works on [..., n] arrays)."""
    return (a > b).astype(float) + 0.5 * (a == b)


def self_bias_report(scores: ScoreMatrix, own: Mapping[str, str], n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Mean score table, each metric's generator ranking, and the bias statistic per (evaluator, other generator).

    ``scores[metric][generator]`` holds one float per prompt (the same prompts everywhere); ``own`` maps each
    LM evaluator to the generator that is its own base model.
    """
    metrics = list(scores)
    generators = list(next(iter(scores.values())))
    n = len(next(iter(next(iter(scores.values())).values())))
    for metric, row in scores.items():
        if list(row) != generators or any(len(v) != n for v in row.values()):
            raise ValueError(f"metric {metric!r}: needs a score for every generator on the same {n} prompts")
    for metric, generator in own.items():
        if metric not in scores or generator not in generators:
            raise ValueError(f"own[{metric!r}] = {generator!r}: unknown metric or generator")
    if n < 2 or n_boot < 1:
        raise ValueError("needs at least 2 prompts and 1 bootstrap resample")
    neutral = [m for m in metrics if m not in own]
    rng = np.random.default_rng(seed)
    resamples = rng.integers(0, n, size=(n_boot, n))
    table = {m: {g: float(np.mean(scores[m][g])) for g in generators} for m in metrics}
    ranking = {m: sorted(generators, key=lambda g: -table[m][g]) for m in metrics}
    tests = []
    for metric, mine in own.items():
        reference = [m for m in neutral if m != metric] or [m for m in metrics if m != metric]
        for other in (g for g in generators if g != mine):
            wins = {m: _win_share(np.asarray(scores[m][mine]), np.asarray(scores[m][other])) for m in metrics}
            expected = np.mean([wins[m] for m in reference], axis=0)
            diff = wins[metric] - expected
            boot = diff[resamples].mean(axis=1)
            low, high = np.percentile(boot, [2.5, 97.5])
            not_better = float(np.mean(boot <= 0))
            tests.append(
                {
                    "evaluator": metric,
                    "own_generator": mine,
                    "other_generator": other,
                    "win_own": float(wins[metric].mean()),
                    "win_reference": float(expected.mean()),
                    "reference_metrics": reference,
                    "bias": float(diff.mean()),
                    "ci95": [float(low), float(high)],
                    "share_not_biased": not_better,
                    "verdict": "prefers its own generator" if not_better < 0.05 else "no evidence of self-preference",
                }
            )
    return {
        "prompts": n,
        "metrics": metrics,
        "generators": generators,
        "own": dict(own),
        "neutral": neutral,
        "mean_scores": table,
        "ranking": ranking,
        "tests": tests,
        "bootstrap": {"resamples": n_boot, "seed": seed},
    }


def markdown(report: Mapping[str, Any]) -> str:
    """The paper's Table 5 layout (evaluator rows, generator columns, own cells in bold) plus the bias tests."""
    gens = report["generators"]
    own = report["own"]
    lines = [
        f"# Self-evaluation bias ({report['prompts']} prompts)",
        "",
        "Mean score of each generator's continuations (LM evaluators: mean token log-probability; own "
        "generator in bold; higher is better).",
        "",
        "| evaluator | " + " | ".join(gens) + " | ranking |",
        "|---" * (len(gens) + 2) + "|",
    ]
    for metric, row in report["mean_scores"].items():
        cells = [f"**{row[g]:.4f}**" if own.get(metric) == g else f"{row[g]:.4f}" for g in gens]
        lines.append(f"| {metric} | " + " | ".join(cells) + " | " + " > ".join(report["ranking"][metric]) + " |")
    lines += [
        "",
        "Win share of the evaluator's own generator over another, against the reference judges' win share "
        "(paired bootstrap over prompts, "
        f"{report['bootstrap']['resamples']} resamples).",
        "",
        "| evaluator | own vs other | win (evaluator) | win (reference judges) | bias | 95% interval | "
        "share not biased | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for t in report["tests"]:
        lines.append(
            f"| {t['evaluator']} | {t['own_generator']} vs {t['other_generator']} | {t['win_own']:.3f} | "
            f"{t['win_reference']:.3f} ({', '.join(t['reference_metrics'])}) | {t['bias']:+.3f} | "
            f"[{t['ci95'][0]:+.3f}, {t['ci95'][1]:+.3f}] | {t['share_not_biased']:.3f} | {t['verdict']} |"
        )
    return "\n".join(lines) + "\n"


def run_self_bias(
    generators: Mapping[str, Any],
    judges: Mapping[str, Callable[..., Sequence[float]]],
    prompts: Sequence[str],
    continuations: Sequence[str],
    *,
    max_new_tokens: int = 40,
    top_k: int = 50,
    seed: int = 0,
    batch_size: int = 8,
    n_boot: int = 1000,
    progress: bool = False,
) -> dict[str, Any]:
    """Generate with every LM, score with every LM and judge, and report (``self_bias_report``).

    ``generators`` maps a name to a loaded causal LM (``load_causal_lm``); each is also an evaluator named
    ``lm:<name>`` whose own generator is itself. ``judges`` are neutral ``fn(hyps, refs, srcs)`` metrics that
    compare a continuation with the true one. Prompts where some generator produced no text are dropped and
    counted (a mean log-probability over no tokens is undefined).
    """
    from nlgmetrics.baselines.lm_likelihood import continuation_logprobs, sample_continuations

    if len(prompts) != len(continuations):
        raise ValueError(f"{len(prompts)} prompts but {len(continuations)} continuations")
    outputs = {
        name: sample_continuations(
            lm, prompts, max_new_tokens, top_k, seed=seed, batch_size=batch_size, progress=progress
        )
        for name, lm in generators.items()
    }
    keep = [i for i in range(len(prompts)) if all(outputs[g][i].strip() for g in generators)]
    if len(keep) < 2:
        raise ValueError("fewer than 2 prompts with a non-empty continuation from every generator")
    kept_prompts = [prompts[i] for i in keep]
    scores: dict[str, dict[str, np.ndarray]] = {}
    for name, lm in generators.items():
        scores[f"lm:{name}"] = {}
        for gen in generators:
            totals, counts = continuation_logprobs(
                lm, kept_prompts, [outputs[gen][i] for i in keep], batch_size, progress=progress
            )
            scores[f"lm:{name}"][gen] = totals / np.maximum(counts, 1)
    for name, judge in judges.items():
        refs = [continuations[i] for i in keep]
        scores[name] = {
            gen: np.asarray(judge([outputs[gen][i] for i in keep], refs, kept_prompts), dtype=float)
            for gen in generators
        }
    report = self_bias_report(scores, {f"lm:{g}": g for g in generators}, n_boot=n_boot, seed=seed)
    report.update(
        {
            "dropped_empty": len(prompts) - len(keep),
            "sampling": {"top_k": top_k, "max_new_tokens": max_new_tokens, "seed": seed},
            "examples": [
                {"prompt": prompts[i], "true": continuations[i], **{g: outputs[g][i] for g in generators}}
                for i in keep[:3]
            ],
        }
    )
    return report
