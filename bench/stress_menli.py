"""MENLI variants (and the partners its combiner could take) through the blind-spot suite, resumably.

`evaluate.py stress` scores one configuration per run. Comparing MENLI's granularities and sentence pools needs
the same sentence pairs again and again, so here every MENLI variant shares one NLI model behind one pair cache,
and every metric's per-(hypothesis, reference) score is stored in a JSON file after each chunk: a killed run
resumes where it stopped, and a later run with more metrics rescores nothing it already has. Combinations
(`menli+<metric>`) are then a fixed-weight, fixed-range sum of stored component scores (see ``--combine``).

    python bench/stress_menli.py --set-up tedmt --metrics menli-s-mean,menli-s-min \
        --out bench/results/stress/tedmt_zhen_menli
    python bench/stress_menli.py --set-up thumb --metrics menli-s-mean,menli-s-min,bertscore --out ...
    python bench/stress_menli.py --set-up tedmt --metrics ... --combine menli-s-mean+bertscore:0.2:stats.json
    python bench/stress_menli.py --set-up tedmt --nli-model packaged:nli-mpnet --metrics menli-s-mean --out ...
    python bench/stress_menli.py --set-up tedmt --nli-model packaged:nli-mpnet --metrics menli-auto,sescore,lm-ratio \
        --combine menli-auto@nli-mpnet+sescore+lm-ratio:$RECIPE   # RECIPE: nlgmetrics/configs/menli/mix/<file>.json
    python bench/stress_menli.py ... --partial --out runs/partial   # the same options: what the stored rows decide

Cost: what the metrics cost on the set-up's 100k-300k stress rows; the TED run of menli-s-mean and menli-s-min took
72 min on 2 shared cores, nli-mpnet's menli-s-mean 4.4 h on WMT21 (``scoring_costs`` in each report). The commands
of every published report are in docs/stress/README.md.

MENLI variants scored with ``packaged:nli-minilm`` (the model of the published reports, ``PUBLISHED_NLI``) keep bare
names; with any other NLI model, the toolkit's default ``packaged:nli-mpnet`` included, they are stored and reported
as ``<variant>@<model>`` (e.g. ``menli-s-mean@nli-mpnet``), beside nli-minilm's scores in the same file, so the
partners' stored scores are shared and no model's scores are mistaken for another's; combine them as
``menli-s-mean@nli-mpnet+bertscore``.

Set-ups are those of docs/stress/README.md (`tedmt`: TED-MT zh-en refs[0] as gold against refs[1]; `wmt21`:
WMT21 de-en ref-A against ref-B; `thumb`: THumB CNN/DM refs[0] against refs[1], 100 items; `thumb_paper`: the
paper's THumB set-up, the Human-H summary against all ten references, MENLI averaged over them). Scores go to
``runs/stress_scores/<set-up>.json`` (not committed: it is a cache, rebuilt by rerunning), and what they cost,
summed over every run that wrote them, to ``<set-up>.costs.json`` beside it (the report's ``scoring_costs``; a run
stopped and resumed on another day still reports its whole cost). The NLI pairs themselves go to
``<set-up>.nli-pairs@<model>.jsonl`` beside the store (``--pair-cache``): every sentence pair of `menli-auto` on
TED-MT is ~0.9 million model calls, a run of several days, and a resumed run would otherwise score again every pair
its remaining rows share with the rows already stored.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO, TED_FILE, WMT_FILE, data_dir, metric  # noqa: E402
from nlgmetrics.inputs import positive_int  # noqa: E402
from nlgmetrics.nli import DEFAULT_NLI, PUBLISHED_NLI  # noqa: E402  (PUBLISHED_NLI: the stored reports' bare names)
from nlgmetrics.scorecache import ScoreCache, row_key  # noqa: E402  (rows keyed without sources: see main)
from nlgmetrics.stress import DEFAULT_MIN_APPLIED  # noqa: E402
from nlgmetrics.stress.report import passed_of_judged  # noqa: E402

THUMB_FILE = "judgments/summ_thumb_cnndm_10refs.jsonl"
# set-up -> (data file, nlgmetrics.stress.stress_rows options), as `evaluate.py stress` flags would set them
SETUPS: dict[str, tuple[str, dict[str, Any]]] = {
    "tedmt": (TED_FILE, {"gold_ref": 0, "ref_index": "1"}),
    "wmt21": (WMT_FILE, {"gold_ref": 0, "ref_index": "1"}),
    "thumb": (THUMB_FILE, {"gold_ref": 0, "ref_index": "1", "limit": 100}),
    # the blind-spot paper's summarization set-up: the original CNN/DM summary as gold, all ten crowd summaries as
    # references, scores averaged over references (bench/results/stress/thumb_cnndm_paper/ for the other metrics)
    "thumb_paper": (THUMB_FILE, {"gold_system": "Human-H", "ref_index": "all", "aggregation": "mean", "limit": 100}),
}

# MENLI variants: the pooling of their task (MT: e <->), the packaged NLI model; k1 = each sentence's best lexical
# neighbour plus its positional twin (bench/results/menli_granularity.md: Spearman 0.971 to scoring every sentence
# pair, at 1/5 of the cost)
MENLI_VARIANTS = {
    "menli": {"granularity": "text"},
    # the toolkit's default MENLI (evaluate.py --metric menli: auto granularity, mean, every sentence pair), which
    # is the MENLI part the packaged mix recipe (menli+sescore+lm-ratio) was measured with
    "menli-auto": {"granularity": "auto", "sentence_reduce": "mean", "sentence_candidates": 0},
    "menli-s-mean": {"granularity": "auto", "sentence_reduce": "mean", "sentence_candidates": 1},
    "menli-s-min": {"granularity": "auto", "sentence_reduce": "min", "sentence_candidates": 1},
    # the MENLI paper's pooling for reference-based summaries (menli.task_strategy: e-c, ref<-cand)
    "menli-sum-s-mean": {
        "task": "summarization",
        "granularity": "auto",
        "sentence_reduce": "mean",
        "sentence_candidates": 1,
    },
}
OTHER_METRICS = ("bertscore", "chrf", "lm-ratio", "sescore")


def menli_store_name(variant: str, nli_model: str) -> str:
    """The name a MENLI variant's scores are stored and reported under: bare for nli-minilm (the published reports'
    model, so their stored scores keep their names when the default changes), else ``variant@model``
    (``packaged:`` dropped), which must survive the ``nli+metric:w:stats`` combine syntax."""
    if nli_model == PUBLISHED_NLI:
        return variant
    model = nli_model.removeprefix("packaged:")
    if any(c in model for c in ":+,"):
        raise SystemExit(
            f"--nli-model {nli_model!r}: a name with ':', '+' or ',' cannot key stored scores; "
            "pass a packaged name or a folder path without those characters"
        )
    return f"{variant}@{model}"


def stored_name(name: str, nli_model: str) -> str:
    """The name a metric of ``--metrics`` is stored under (MENLI variants carry their NLI model)."""
    return menli_store_name(name, nli_model) if name in MENLI_VARIANTS else name


def pair_file(store: Path, nli_model: str) -> Path:
    """The default NLI pair file of a run: beside its score store, named by the store and the NLI model."""
    model = nli_model.removeprefix("packaged:").replace("/", "_").replace(":", "_")
    return store.with_name(f"{store.stem}.nli-pairs@{model}.jsonl")


def run_settings(nli_model: str, aggregation: str = "max") -> dict[str, Any]:
    """The options every metric of a run is built with (each takes those it has): the stored runs' BERTScore
    encoder, the packaged mix's SEScore part, the run's NLI model and multi-reference aggregation."""
    from sescore import MINILM_V2_CHECKPOINT

    return {
        "nli_model": nli_model,
        "aggregation": aggregation,
        "encoder": "packaged:minilm",
        "checkpoint": [MINILM_V2_CHECKPOINT],
        "progress": False,
    }


def build_metric(name: str, settings: dict[str, Any], shared: dict) -> Callable[[list[str], list], Sequence[float]]:
    """The scoring function of one metric of the run. ``settings``: ``run_settings`` (``nli_model`` and
    ``aggregation`` at least); ``shared`` holds what the run's metrics share: its ``pair_file`` (the MENLI variants'
    NLI pair file, or none) as given, and the NLI model and the built scorers as they are made."""
    if name in MENLI_VARIANTS:
        from menli import menli_scores, task_strategy
        from nlgmetrics.nli import PairCache, load_nli

        if "nli" not in shared:  # one model and pair cache for every MENLI variant of the run
            shared["nli"] = PairCache(
                load_nli(settings["nli_model"]), max_pairs=3_000_000, path=shared.get("pair_file") or None
            )
        options = dict(MENLI_VARIANTS[name])
        formula, direction = task_strategy(options.pop("task", "mt"))
        return lambda h, r: menli_scores(
            shared["nli"], h, r, formula, direction, settings["aggregation"], batch_size=64, progress=False, **options
        )
    if name in OTHER_METRICS:
        scorer = metric(name, **settings)
        shared.setdefault("scorers", {})[name] = scorer  # mixed_metric reads its signature: no second load
        return lambda h, r: scorer.score(h, r, None)
    raise SystemExit(f"unknown metric {name!r}; choose from {', '.join([*MENLI_VARIANTS, *OTHER_METRICS])}")


def ranges_for(path: str, metric_name: str) -> list:
    """MENLI's and ``metric_name``'s fixed ranges: from a two-part ranges file (``--save-stats``, the packaged
    ``menli/*.json``), or from an ablation's result file (``ablate_menli_combiner.py``,
    ``ablate_menli_bertscore_weight.py``), so a stress run combines with exactly the normalisation its table was
    chosen with."""
    from menli import MinMax, MixRecipe

    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        raw = {}  # MixRecipe.load names the problem (no such file, not JSON)
    if not isinstance(raw, dict) or "ranges" not in raw:
        return MixRecipe.load(path).ranges
    if metric_name not in raw["ranges"]:
        raise SystemExit(f"{path} has ranges for {sorted(raw['ranges'])}, not {metric_name!r}")
    return [MinMax(**raw["ranges"]["menli"]), MinMax(**raw["ranges"][metric_name])]


def mixed_metric(
    spec: str, store: ScoreCache, settings: dict[str, Any], shared: dict | None = None, partial: bool = False
) -> tuple[str, Callable]:
    """``nli+a+b:recipe.json`` -> a stress metric over stored scores with the recipe's weights and ranges.

    The recipe names the models each part must be (``fitted_with``); the stored scores carry only names, so the
    parts' signatures are checked against the recipe before any stored score is read: from the scorers this run
    built (``shared``, filled by ``build_metric``), else from ones built here. ``partial``: a row a part has not
    stored yet scores NaN instead of stopping the run (``--partial``)."""
    from menli import MENLIScorer, MixRecipe, mix
    from menli.scorer import metric_fitted_with, nli_fitted_with

    parts, recipe_path = spec.rsplit(":", 1)
    names = parts.split("+")
    recipe = MixRecipe.load(recipe_path)
    if len(names) != len(recipe.parts):
        raise SystemExit(f"{spec}: {len(names)} stored parts, the recipe has {len(recipe.parts)}")
    variant = names[0].split("@", 1)[0]
    if variant not in MENLI_VARIANTS or MENLI_VARIANTS[variant].get("task", "mt") != "mt":
        raise SystemExit(f"{spec}: the first part must be a stored MT-pooled MENLI variant, got {names[0]!r}")
    built = (shared or {}).get("scorers", {})
    here = [nli_fitted_with(MENLIScorer(settings["nli_model"]).signature())]  # the run's NLI model, loaded once
    here += [metric_fitted_with((built.get(n) or metric(n, **settings)).signature()) for n in names[1:]]
    wrong = [
        f"{p.name}: recipe '{p.fitted_with}', here '{h}'"
        for p, h in zip(recipe.parts, here)
        if p.fitted_with and p.fitted_with != h
    ]
    if wrong:
        raise SystemExit(f"{spec}: the stored scores' models are not the recipe's: " + "; ".join(wrong))

    def score(hyps: Sequence[str], refs: Sequence, srcs: Any) -> list[float]:
        return list(
            mix(stored_parts(store, names, hyps, refs, spec, partial), recipe.weights, [p.range for p in recipe.parts])
        )

    weights = "/".join(f"{w:g}" for w in recipe.weights)
    return f"{parts}@{weights}", score


def stored_parts(
    store: ScoreCache, names: Sequence[str], hyps: Sequence[str], refs: Sequence, spec: str, partial: bool = False
) -> list[list[float]]:
    """Per name, its stored scores of the rows; a row not stored stops the run naming ``spec`` (``partial``: NaN)."""
    keys = [row_key(h, r) for h, r in zip(hyps, refs)]
    if not partial:
        missing = [n for n in names if any(k not in store.scores.get(n, {}) for k in keys)]
        if missing:
            raise SystemExit(f"{spec}: no stored scores of {missing} for every row; score them first (--metrics)")
    return [[store.scores.get(n, {}).get(k, float("nan")) for k in keys] for n in names]


def combined_metric(spec: str, store: ScoreCache, partial: bool = False) -> tuple[str, Callable]:
    """``nli+metric:w:stats.json`` -> a stress metric over stored scores with a fixed weight and fixed ranges
    (``w * MENLI + (1 - w) * metric``, as ``menli+<metric> --weight w`` scores)."""
    from menli import mix, pair_weights

    pair, weight, stats_path = spec.split(":")
    nli_name, metric_name = pair.split("+")
    ranges = ranges_for(stats_path, metric_name)
    weights = pair_weights(float(weight))

    def score(hyps: Sequence[str], refs: Sequence, srcs: Any) -> list[float]:
        return list(mix(stored_parts(store, (nli_name, metric_name), hyps, refs, spec, partial), weights, ranges))

    return f"{pair}@{weight}", score


def passed_table(reports: Sequence[str | Path]) -> str:
    """Markdown: one row per report (its folder name), one column per metric, "passed/judged" from report.json."""
    loaded = [
        (
            Path(r).name if Path(r).is_dir() else Path(r).parent.name,
            json.loads((Path(r) / "report.json" if Path(r).is_dir() else Path(r)).read_text()),
        )
        for r in reports
    ]
    metrics = list(dict.fromkeys(m for _, rep in loaded for m in rep["metrics"]))
    lines = ["| report | " + " | ".join(metrics) + " |", "|---|" + "---|" * len(metrics)]
    for name, rep in loaded:
        cells = []
        for m in metrics:
            s = rep["summary"].get(m)
            cells.append(passed_of_judged(s) if s else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def combination(
    spec: str, store: ScoreCache, settings: dict[str, Any], shared: dict | None = None, partial: bool = False
) -> tuple[str, Callable]:
    """One ``--combine`` spec: a mix recipe (``nli+a+b:recipe.json``) or a fixed-weight pair (``nli+m:w:stats``)."""
    if spec.count(":") == 1:
        return mixed_metric(spec, store, settings, shared, partial)
    return combined_metric(spec, store, partial)


def parts_of(spec: str) -> list[str]:
    """The stored names a ``--combine`` spec reads (``nli+a+b:recipe.json``, ``nli+metric:w:stats.json``)."""
    return spec.split(":", 1)[0].split("+")


def partial_summary(report: dict, needs: dict[str, Sequence[str]]) -> dict[str, dict]:
    """Per metric of a ``--partial`` run: the judged tests whose every row the metric reads is stored (their
    verdicts, as the full run will give them) and the judged tests still incomplete (no verdict). ``report`` holds,
    per stored name ``n``, a ``missing:n`` curve that is 0 exactly where none of a test's rows is missing."""
    out = {}
    for name, stored in needs.items():
        verdicts, incomplete = {}, []
        for test, entry in report["tests"].items():
            if not entry["applicable"] or not entry["judged"]:
                continue
            if any(m for n in stored for m in entry["metrics"][f"missing:{n}"]["mean"]):
                incomplete.append(test)
            else:
                verdicts[test] = bool(entry["passed"][name])
        out[name] = {
            "passed": sum(verdicts.values()),
            "complete": len(verdicts),
            "judged": len(verdicts) + len(incomplete),
            "verdicts": verdicts,
            "incomplete": incomplete,
        }
    return out


def run_partial(
    args: argparse.Namespace, store: ScoreCache, settings: dict[str, Any], gold: list, refs: list, srcs: list
) -> None:
    """``--partial``: score nothing, write ``<out>/partial.json`` (and .md) with what the stored rows already
    decide, so a run of several days can be looked at while it goes (another process may be writing the store:
    this one only reads it)."""
    from nlgmetrics.metaeval import atomic_write
    from nlgmetrics.stress import run_blindspot

    def lookup(name: str) -> Callable:
        return lambda h, r, _s: stored_parts(store, [name], h, r, name, partial=True)[0]

    def missing(name: str) -> Callable:
        return lambda h, r, _s: [float(row_key(a, b) not in store.scores.get(name, {})) for a, b in zip(h, r)]

    needs: dict[str, list[str]] = {}
    metrics: dict[str, Callable] = {}
    for name in filter(None, args.metrics.split(",")):
        stored = stored_name(name, args.nli_model)
        metrics[stored], needs[stored] = lookup(stored), [stored]
    for spec in filter(None, args.combine.split(",")):
        name, fn = combination(spec, store, settings, partial=True)
        metrics[name], needs[name] = fn, parts_of(spec)
    read = list(dict.fromkeys(n for parts in needs.values() for n in parts))
    flags = {f"missing:{n}": missing(n) for n in read}
    report = run_blindspot({**metrics, **flags}, gold, refs, srcs if any(srcs) else None, min_applied=args.min_applied)
    summary = partial_summary(report, needs)
    rows_stored = {n: len(store.scores.get(n, {})) for n in read}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / "partial.json") as handle:
        handle.write(json.dumps({"store": str(store.path), "rows_stored": rows_stored, "summary": summary}, indent=1))
    lines = ["| metric | passed / judged tests complete | judged tests not complete |", "|---|---|---|"]
    lines += [
        f"| {name} | {s['passed']}/{s['complete']} | {len(s['incomplete'])} of {s['judged']} |"
        for name, s in summary.items()
    ]
    with atomic_write(out / "partial.md") as handle:
        handle.write("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    if len(sys.argv) > 1 and sys.argv[1] == "--table":  # python bench/stress_menli.py --table DIR [DIR ...]
        print(passed_table(sys.argv[2:]), end="")
        return
    parser.add_argument("--set-up", required=True, choices=sorted(SETUPS))
    parser.add_argument(
        "--metrics",
        default="menli-s-mean,menli-s-min",
        help=f"comma-separated: {', '.join([*MENLI_VARIANTS, *OTHER_METRICS])}",
    )
    parser.add_argument(
        "--combine",
        default="",
        help="comma-separated nli+metric:weight:ranges.json, or nli+a+b:recipe.json (a mix recipe: "
        "its weights and ranges, each part's models checked against it)",
    )
    parser.add_argument(
        "--nli-model",
        default=PUBLISHED_NLI,
        help=f"NLI role value of the MENLI variants (default {PUBLISHED_NLI}, the model of the "
        f"published reports, whose commands docs/stress/README.md lists; the toolkit's default "
        f"is {DEFAULT_NLI}); all but {PUBLISHED_NLI} are stored as <variant>@<model>",
    )
    parser.add_argument("--out", required=True, help="report folder (report.json, report.md, plots/)")
    parser.add_argument("--store", help="score file (default runs/stress_scores/<set-up>.json)")
    parser.add_argument(
        "--pair-cache",
        help="NLI pair file (default: <store>.nli-pairs@<model>.jsonl beside the "
        "store; '' for none): pairs are appended as they are scored and read back on resume",
    )
    parser.add_argument("--chunk", type=int, default=1000, help="rows scored between two saves")
    parser.add_argument("--limit", type=int, help="first N items (smoke runs)")
    parser.add_argument(
        "--min-applied",
        type=positive_int,
        default=DEFAULT_MIN_APPLIED,
        help="judge a test only if it applies to at least this many items (as evaluate.py stress)",
    )
    parser.add_argument(
        "--no-plots", action="store_true", help="report.json and report.md only (as evaluate.py stress --no-plots)"
    )
    parser.add_argument(
        "--partial",
        action="store_true",
        help="score nothing: from the stored rows, the verdicts of the tests already complete per "
        "metric, in <out>/partial.json and partial.md (safe beside the run filling the store)",
    )
    args = parser.parse_args()

    import torch

    torch.set_num_threads(int(os.environ.get("NLGMETRICS_THREADS", "2")))
    from nlgmetrics.metaeval import source_text
    from nlgmetrics.stress import run_blindspot, stress_rows, write_report

    path, options = SETUPS[args.set_up]
    data = str(data_dir() / path)
    if args.limit:  # --limit replaces the set-up's own
        options = {**options, "limit": args.limit}
    settings = run_settings(args.nli_model, options.get("aggregation", "max"))
    gold, refs, rows, setup = stress_rows(data, **options)
    srcs = [source_text(r.get("src")) for r in rows]  # as evaluate.py stress: copy_source needs them
    store = ScoreCache(Path(args.store) if args.store else REPO / "runs" / "stress_scores" / f"{args.set_up}.json")
    if args.partial:
        return run_partial(args, store, settings, gold, refs, srcs)
    shared: dict = {"pair_file": pair_file(store.path, args.nli_model) if args.pair_cache is None else args.pair_cache}
    store.counters = lambda: (
        {"nli_pairs_scored": shared["nli"].misses, "nli_pairs_from_cache": shared["nli"].hits}
        if "nli" in shared
        else {}
    )
    metrics, described = {}, {}
    for name in filter(None, args.metrics.split(",")):
        stored = stored_name(name, args.nli_model)
        fn = build_metric(name, settings, shared)  # reference-based: stored rows are keyed by (hyp, ref) only
        metrics[stored] = store.metric(stored, lambda h, r, _s, fn=fn: fn(h, r), args.chunk, sources=False)
        described[stored] = MENLI_VARIANTS.get(name, name)
    for spec in filter(None, args.combine.split(",")):
        name, fn = combination(spec, store, settings, shared)
        metrics[name], described[name] = fn, name
    started = time.perf_counter()
    report = run_blindspot(metrics, gold, refs, srcs if any(srcs) else None, min_applied=args.min_applied)
    report["data"] = data
    report["setup"] = {**setup, "metrics": described, "nli_model": args.nli_model, "script": "bench/stress_menli.py"}
    if "nli" in shared:
        report["setup"]["nli_pairs"] = {
            "scored": shared["nli"].misses,
            "from_cache": shared["nli"].hits,
            "note": "this run only; scoring_costs adds up every run",
        }
    # what the stored scores cost, summed over every run that wrote them (rows_recorded <= rows_stored when some
    # rows were stored before the ledger existed)
    report["setup"]["scoring_costs"] = {
        name: {
            "rows_stored": len(store.scores[name]),
            "rows_recorded": int(store.costs.get(name, {}).get("rows", 0)),
            **{k: v for k, v in store.costs.get(name, {}).items() if k != "rows"},
        }
        for name in metrics
        if name in store.scores
    }
    write_report(report, args.out, plots=not args.no_plots)
    print(
        json.dumps({"out": args.out, "seconds": round(time.perf_counter() - started, 1), "summary": report["summary"]}),
        flush=True,
    )


if __name__ == "__main__":
    main()
