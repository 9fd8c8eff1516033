"""The blind-spot stress-test protocol (He et al., 2023; spec STRESS.md).

Gold hypotheses are scored against references, then noised by each test at increasing levels over several
seeds. A metric passes a test when its mean score strictly decreases from the gold point through every level.
All texts of all tests are scored with ONE call per metric (deduplicated), so a model-based metric can sort and
batch the whole workload at once.

Metrics are sample-level callables ``metric(hyps, refs, srcs) -> list[float]`` with higher = better (negate a
lower-is-better metric before passing it). ``srcs`` is None when the data has no sources. A reference is a string
or, for multi-reference set-ups (the paper scores CNN/DM against all ten extra summaries), a list of strings that
is handed to the metric as is: the metric decides how it aggregates over references.
"""

from __future__ import annotations

import copy
import math
from types import MappingProxyType
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from nlgmetrics.perturb import default_lexicon, get_perturbation, top_ngrams
from nlgmetrics.perturb.docedit import sentence_spans
from nlgmetrics.stress.defaults import DEFAULT_MIN_APPLIED, DEFAULT_SEEDS  # noqa: F401  (re-exported)
from nlgmetrics.stress.noising import NoisedTest, noise_test

Reference = "str | Sequence[str]"
MetricFn = Callable[[list[str], list, "list[str] | None"], Sequence[float]]
PROTOCOL = "blindspot-v1"
# Everything that needs no model beyond spaCy. Add "bert_diverge" (with mlm=...) and "positioned_random_*"
# as wanted; tests needing a source report "not applicable" on data without sources.
DEFAULT_TESTS = (
    "truncation",
    "article_removal",
    "preposition_removal",
    "stopword_removal",
    "verb_lemmatization",
    "token_drop",
    "repeated_token",
    "local_swap",
    "middle_swap",
    "noised_punctuation",
    "sentence_switching",
    "sentence_replacement",
    "negation",
    "generic_named_entity",
    "ne_switching",
    "verb_switching",
    "noun_switching",
    "positioned_shuffle_start",
    "positioned_shuffle_middle",
    "positioned_shuffle_end",
    "injection",
    "frequent_ngram",
    "copy_source",
    "repetition",
)
# Tests of the paper this suite runs elsewhere, with family and the reason every report repeats (a missing row would
# read as "passed" or "forgotten"). Asking for one by name is an error that gives the reason.
UNAVAILABLE_OFFLINE: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "self_evaluation_bias": MappingProxyType(
            {
                "family": "targeted",
                "reason": (
                    "it tests LM log-likelihood metrics against their own generators, not the metrics of a "
                    "perturbation run: run it separately with `nlgmetrics-evaluate self-bias --generators "
                    "packaged:smollm2,packaged:gemma3-270m "
                    "...` (the stress-test guide shows it)"
                ),
            }
        ),
    }
)


def _validate_inputs(
    hyps: Sequence[str], refs: Sequence[Reference], srcs: Sequence[str] | None, seeds: Sequence[int]
) -> None:
    if len(hyps) == 0:
        raise ValueError("no gold hypotheses")
    if len(refs) != len(hyps):
        raise ValueError(f"{len(hyps)} hypotheses but {len(refs)} references")
    if srcs is not None and len(srcs) != len(hyps):
        raise ValueError(f"{len(hyps)} hypotheses but {len(srcs)} sources")
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct and non-empty, got {list(seeds)}")
    if any(
        not isinstance(r, str) and (isinstance(r, (bytes, Mapping)) or not isinstance(r, Sequence) or not r)
        for r in refs
    ):
        raise TypeError("each reference must be a string or a non-empty list of strings")
    if any(not isinstance(t, str) for t in list(hyps) + flat_references(refs) + list(srcs or [])):
        raise TypeError("hypotheses, references and sources must be strings")


def flat_references(refs: Sequence[Reference]) -> list[str]:
    """Every reference string, single- and multi-reference alike (for corpus material such as n-grams)."""
    return [t for r in refs for t in ([r] if isinstance(r, str) else list(r))]


def _row_key(ref: Reference) -> str | tuple[str, ...]:
    """Hashable form of a reference, so identical multi-reference rows are scored once."""
    return ref if isinstance(ref, str) else tuple(ref)


def check_available(tests: Sequence[str]) -> None:
    """Refuse a test the suite cannot run offline, saying why (instead of a bare "unknown test")."""
    for name in tests:
        if name in UNAVAILABLE_OFFLINE:
            raise ValueError(
                f"test {name!r} is not part of the perturbation suite: {UNAVAILABLE_OFFLINE[name]['reason']}"
            )


def build_context(
    tests: Sequence[str],
    hyps: Sequence[str],
    refs: Sequence[Reference],
    srcs: Sequence[str] | None,
    *,
    nlp: Any = None,
    mlm: Any = None,
    ngrams: Sequence[str] | None = None,
    vocabulary: Sequence[str] | None = None,
    keep_last_sentence: bool = False,
    injection_text: str | None = None,
    batch_size: int = 32,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per-sample context (spaCy doc, source) and shared context, building only what the tests need.

    Each hypothesis is parsed once (``nlp.pipe``) whatever the number of tests, levels and seeds.
    """
    needs = set().union(*(get_perturbation(t).needs for t in tests)) if tests else set()
    contexts: list[dict[str, Any]] = [{} for _ in hyps]
    shared: dict[str, Any] = {"keep_last": keep_last_sentence}
    if injection_text is not None:
        shared["injection_text"] = injection_text
    if "doc" in needs or "pool" in needs:
        if nlp is None or isinstance(nlp, str):
            from nlgmetrics.modelroles import load_spacy

            nlp = load_spacy(nlp or "packaged:en_core_web_sm")
        for ctx, doc in zip(contexts, nlp.pipe(list(hyps), batch_size=batch_size)):
            ctx["doc"] = doc
        if "pool" in needs:
            shared["pool"] = [ctx["doc"].text[s:e] for ctx in contexts for s, e in sentence_spans(ctx["doc"])]
    if srcs is not None:
        for ctx, src in zip(contexts, srcs):
            ctx["source"] = src
    if "mlm" in needs:
        if mlm is None:
            raise ValueError("test bert_diverge needs a masked LM: pass mlm=<masked_lm spec or LoadedModel>")
        if isinstance(mlm, str):
            from nlgmetrics.modelroles import load_model

            mlm = load_model("masked_lm", mlm)
        shared["mlm"] = mlm
        shared["batch_size"] = batch_size
    if "ngrams" in needs:
        shared["ngrams"] = list(ngrams) if ngrams else top_ngrams(flat_references(refs), n=4, k=50)
    if "vocabulary" in needs:
        shared["vocabulary"] = (
            list(vocabulary) if vocabulary else sorted({w for t in flat_references(refs) for w in t.split()})
        )
    if "lexicon" in needs:
        shared["lexicon"] = default_lexicon()
    return contexts, shared


def score_once(
    metrics: Mapping[str, MetricFn],
    hyps: Sequence[str],
    refs: Sequence[Reference],
    srcs: Sequence[str] | None,
) -> dict[str, np.ndarray]:
    """Score aligned (hyp, ref, src) rows with one call per metric over the distinct rows only."""
    index: dict[tuple, int] = {}
    first_ref: dict[int, Reference] = {}
    rows = [(h, _row_key(r), s) for h, r, s in zip(hyps, refs, srcs if srcs is not None else [None] * len(hyps))]
    positions = []
    for row, ref in zip(rows, refs):
        positions.append(index.setdefault(row, len(index)))
        first_ref.setdefault(positions[-1], ref if isinstance(ref, str) else list(ref))
    unique = list(index)
    u_hyps, u_refs = [u[0] for u in unique], [first_ref[k] for k in range(len(unique))]
    u_srcs = [u[2] for u in unique] if srcs is not None else None
    scores: dict[str, np.ndarray] = {}
    for name, metric in metrics.items():
        values = np.asarray(list(metric(u_hyps, u_refs, u_srcs)), dtype=np.float64)
        if values.shape != (len(unique),):
            raise ValueError(
                f"metric {name!r} returned {values.shape[0] if values.ndim else 'a scalar'} scores "
                f"for {len(unique)} hypotheses"
            )
        scores[name] = values[positions]
    return scores


def strictly_decreasing(means: Sequence[float]) -> bool:
    """The pass rule: gold > level 1 > level 2 > ... (a NaN anywhere fails)."""
    return all(a > b for a, b in zip(means, means[1:])) and not any(math.isnan(m) for m in means)


def run_blindspot(
    metrics: Mapping[str, MetricFn],
    hyps: Sequence[str],
    refs: Sequence[Reference],
    srcs: Sequence[str] | None = None,
    tests: Sequence[str] | None = None,
    levels: Mapping[str, Sequence[float]] | None = None,
    seeds: Sequence[int] = DEFAULT_SEEDS,
    *,
    nlp: Any = None,
    mlm: Any = None,
    ngrams: Sequence[str] | None = None,
    vocabulary: Sequence[str] | None = None,
    keep_last_sentence: bool = False,
    injection_text: str | None = None,
    batch_size: int = 32,
    min_applied: int = DEFAULT_MIN_APPLIED,
) -> dict[str, Any]:
    """Run the blind-spot tests and return a JSON-able report (see ``stress.__init__`` for its shape).

    ``levels`` overrides the registry's default levels per test; ``keep_last_sentence`` pins the final sentence
    in sentence switching (open-ended generation, as the paper did for WikiText); a test applying to fewer than
    ``min_applied`` samples is reported with its curve but not judged (see ``judge``).
    """
    if not metrics:
        raise ValueError("no metric to stress-test")
    tests = list(DEFAULT_TESTS if tests is None else tests)
    check_available(tests)
    for name in list(levels or {}):
        if name not in tests:
            raise ValueError(f"levels given for {name!r}, which is not among the tests run")
    _validate_inputs(hyps, refs, srcs, seeds)
    contexts, shared = build_context(
        tests,
        hyps,
        refs,
        srcs,
        nlp=nlp,
        mlm=mlm,
        ngrams=ngrams,
        vocabulary=vocabulary,
        keep_last_sentence=keep_last_sentence,
        injection_text=injection_text,
        batch_size=batch_size,
    )
    noised = {
        name: noise_test(
            name, hyps, (levels or {}).get(name, get_perturbation(name).default_levels), seeds, contexts, shared
        )
        for name in tests
    }
    return score_noised(metrics, noised, hyps, refs, srcs, min_applied=min_applied)


def score_noised(
    metrics: Mapping[str, MetricFn],
    noised: Mapping[str, NoisedTest],
    hyps: Sequence[str],
    refs: Sequence[Reference],
    srcs: Sequence[str] | None = None,
    *,
    min_applied: int = DEFAULT_MIN_APPLIED,
) -> dict[str, Any]:
    """Score gold and every noised text in one call per metric, then build the report."""
    all_hyps, all_refs, all_srcs = list(hyps), list(refs), list(srcs) if srcs is not None else None
    offsets: dict[tuple[str, int, int], int] = {}
    for name, test in noised.items():
        for li, level_texts in enumerate(test.texts):
            for si, seed_texts in enumerate(level_texts):
                offsets[name, li, si] = len(all_hyps)
                all_hyps.extend(seed_texts)
                all_refs.extend(refs[i] for i in test.applied)
                if all_srcs is not None:
                    all_srcs.extend(srcs[i] for i in test.applied)
    scores = score_once(metrics, all_hyps, all_refs, all_srcs)
    report: dict[str, Any] = {
        "protocol": {
            "name": PROTOCOL,
            "n_samples": len(hyps),
            "seeds": list(next(iter(noised.values())).seeds) if noised else [],
            "noise_ratio": "mean word-level Levenshtein(h', h) / len(h), halved for swap/switch tests",
            "pass": "mean score strictly decreasing from the gold point through every level",
        },
        "metrics": list(metrics),
        "tests": {name: _test_report(name, test, scores, offsets) for name, test in noised.items()},
        "unavailable": {name: dict(entry) for name, entry in UNAVAILABLE_OFFLINE.items()},
    }
    return judge(report, min_applied)


def judge(report: Mapping[str, Any], min_applied: int = DEFAULT_MIN_APPLIED) -> dict[str, Any]:
    """Pass/fail verdicts and the summary, from the curves a report holds; returns a new report.

    Pure and separate from scoring so a stored ``report.json`` can be re-judged under another ``min_applied``
    without scoring anything again (``evaluate.py stress-report``). A test is judged when it applied to at least
    ``min_applied`` samples; otherwise every ``passed`` is None and ``reason`` says why.
    """
    if isinstance(min_applied, bool) or not isinstance(min_applied, int) or min_applied < 1:
        raise ValueError(f"min_applied must be a positive integer, got {min_applied!r}")
    report = copy.deepcopy(dict(report))
    report["protocol"] = {
        **report["protocol"],
        "min_applied": min_applied,
        "judged": f"tests applying to {min_applied} or more samples; smaller ones are shown only",
    }
    for test in report["tests"].values():
        if not test["applicable"]:
            test["judged"] = False
            continue
        test["judged"] = test["n_applied"] >= min_applied
        if test["judged"]:
            test.pop("reason", None)
        else:
            test["reason"] = (
                f"applies to {test['n_applied']} sample(s), fewer than {min_applied}: curve shown, not judged"
            )
        for name, curve in test["metrics"].items():
            curve["passed"] = strictly_decreasing(curve["mean"]) if test["judged"] else None
            test["passed"][name] = curve["passed"]
    tests = report["tests"].values()
    report["summary"] = {
        m: {
            "passed": sum(1 for t in tests if t["judged"] and t["passed"][m]),
            "failed": sum(1 for t in tests if t["judged"] and not t["passed"][m]),
            "too_few": sum(1 for t in tests if t["applicable"] and not t["judged"]),
            "not_applicable": sum(1 for t in tests if not t["applicable"]),
        }
        for m in report["metrics"]
    }
    return report


def _test_report(name: str, test: NoisedTest, scores: Mapping[str, np.ndarray], offsets: Mapping) -> dict[str, Any]:
    perturbation = get_perturbation(name)
    base = {
        "family": perturbation.family,
        "description": perturbation.description,
        "halved_noise_ratio": perturbation.halve_noise_ratio,
        "n_applied": len(test.applied),
        "skipped": dict(test.skipped),
        "warnings": list(test.warnings),
    }
    if not test.applied:
        reason = max(test.skipped, key=test.skipped.get) if test.skipped else "no sample"
        return {
            **base,
            "applicable": False,
            "reason": reason,
            "levels": [],
            "noise_ratio": [],
            "noise_ratio_std": [],
            "metrics": {},
            "passed": {},
        }
    applied = np.asarray(test.applied)
    metrics_report = {}
    for metric, values in scores.items():
        means, stds = [float(values[applied].mean())], [0.0]
        for li in range(len(test.levels)):
            per_seed = [
                values[offsets[name, li, si] : offsets[name, li, si] + len(applied)].mean()
                for si in range(len(test.seeds))
            ]
            means.append(float(np.mean(per_seed)))
            stds.append(float(np.std(per_seed)))
        metrics_report[metric] = {"mean": means, "std": stds}
    return {
        **base,
        "applicable": True,
        "levels": [0.0, *test.levels],
        "noise_ratio": [0.0, *(float(np.mean(seeds)) for seeds in test.noise)],
        "noise_ratio_std": [0.0, *(float(np.std(seeds)) for seeds in test.noise)],
        "metrics": metrics_report,
        "passed": {},  # verdicts: judge()
    }
