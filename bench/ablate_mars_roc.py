"""Why does MARS not beat the similarity it wraps on ROC stories? An ablation with a fixed select/report split.

MARS = sum_j w_j sim(candidate, ref_j) over the human reference and its augmented versions (one per masking
ratio), w_j = a q^j. Every lever the issue names is varied here, each against BERTScore and mean-pooled cosine
with the same encoder on the same items:

- the filler LM that writes the augmented references (``--fillers``, e.g. SmolLM2-135M vs Gemma-3-270M);
- the ROC set-up (``--splits``): ``whole`` = UNION as shipped (whole five-sentence story as reference, its first
  sentence as context); ``paper`` = the paper's split built from it (reference = the human story's last
  sentence, context = its first four, candidate = the candidate story's sentences after its fourth);
  ``generated`` = both stories without the shared first sentence (the part the model wrote), that sentence as
  context;
- the encoder (``--encoders``) and the similarity (mean-pooled cosine as in the paper, or BERTScore's greedy
  token matching against every augmented reference);
- which augmented references are used (masking ratios: all four, low, high, one) and the weight decay ``q``.

Augmentation is the expensive part and is cached per (filler, split) under ``--cache`` (resumable: each group of
references is written as soon as it is done). Every similarity is computed once per (filler, split, encoder,
similarity) as an [items, 5] matrix, so all ratio/q variants cost nothing more.

Selection never sees the reported numbers: items are split by seeded hash into select/report halves
(``nlgmetrics.metaeval.split``); the best MARS variant per (split, encoder, similarity) and overall is chosen by
Kendall tau-b on the select half, and only report-half numbers with a paired bootstrap against BERTScore (same
encoder) are reported for it.

    python bench/ablate_mars_roc.py [--fillers packaged:smollm2,packaged:gemma3-270m] [--splits whole,paper,generated]
        [--encoders packaged:minilm,packaged:mpnet] [--limit N] [--cache runs/mars_ablation/cache]

Cost: augmentation dominates, ~1.5 s per reference and filler on 2 cores (400 items x 3 splits x 2 fillers: about
an hour per filler and split on first use); with the cache filled a rerun takes minutes (the encoders' passes).
The published files: ``mars_roc_ablation.md`` (the defaults, before the masking window), ``..._smollm2.md`` and
``..._window.md`` (their commands are in docs/mars/README.md, section 5); ``defaults_table.py`` reads the
first.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import REPO, ROC_FILE, data_dir, load_average, write_results  # noqa: E402

SPLITS = ("whole", "paper", "generated")
SIMILARITIES = ("cosine", "bertscore")
AUG_RATIOS = (0.2, 0.4, 0.6, 0.8)  # the offline config's nonzero ratios; column j + 1 of a similarity matrix
RATIO_SETS: dict[str, tuple[float, ...]] = {
    "none": (),
    "0.2": (0.2,),
    "0.4": (0.4,),
    "0.6": (0.6,),
    "0.8": (0.8,),
    "low": (0.2, 0.4),
    "high": (0.6, 0.8),
    "all": AUG_RATIOS,
}
QS = (0.8, 0.5, 1.0)
DEFAULT = ("all", 0.8)  # what configs/mars/offline.yaml ships
NAME = "mars_roc_ablation"
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """UNION stories are tokenised (" . " between sentences): split after ., ! or ? followed by space."""
    return [s.strip() for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def strip_prefix(text: str, prefix: str) -> str:
    """``text`` without a leading ``prefix`` (the shared first sentence); unchanged if it does not start so."""
    text, prefix = text.strip(), prefix.strip()
    return text[len(prefix) :].strip() if prefix and text.startswith(prefix) else text


def roc_split(hyp: str, ref: str, src: str, split: str) -> tuple[str, str, str, bool]:
    """(candidate, reference, context, fallback) of one UNION item in the asked set-up.

    ``fallback`` says the split could not be built as described and a stand-in was used: for ``paper``, a
    reference or candidate story with fewer than five sentences gives its last sentence as the ending; for
    ``generated``, a story that is only the first sentence keeps its whole text.
    """
    if split == "whole":
        return hyp, ref, src, False
    if split == "paper":
        ref_s, hyp_s = sentences(ref), sentences(hyp)
        fallback = len(ref_s) < 5 or len(hyp_s) < 5
        ending = " ".join(ref_s[4:]) or ref_s[-1]
        context = " ".join(ref_s[:4]) if len(ref_s) >= 5 else " ".join(ref_s[:-1])
        candidate = " ".join(hyp_s[4:]) or hyp_s[-1]
        return candidate, ending, context, fallback
    if split == "generated":
        candidate, reference = strip_prefix(hyp, src), strip_prefix(ref, src)
        fallback = not candidate or not reference
        return candidate or hyp, reference or ref, src, fallback
    raise ValueError(f"unknown split '{split}'; choose from {', '.join(SPLITS)}")


def load_union(limit: int | None = None, path: Path | None = None) -> list[dict]:
    """UNION ROC rows (``item_id``, ``hyp``, ``ref``, ``src``, ``human`` = reasonable_frac)."""
    rows = []
    with open(path or data_dir() / ROC_FILE, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            rows.append(
                {
                    "item_id": row["item_id"],
                    "hyp": row["hyp"],
                    "ref": row["refs"][0],
                    "src": row.get("src") or "",
                    "human": float(row["scores"]["reasonable_frac"]),
                }
            )
            if limit and len(rows) >= limit:
                break
    return rows


def weighted(similarity: np.ndarray, ratios: Sequence[float], q: float) -> np.ndarray:
    """MARS's eq. 7 on precomputed similarities [items, 1 + len(AUG_RATIOS)]: the human reference (column 0)
    and the augmented references of ``ratios`` (in ratio order), weights a q^j summing to 1."""
    if similarity.ndim != 2 or similarity.shape[1] != 1 + len(AUG_RATIOS):
        raise ValueError(f"similarity must be [items, {1 + len(AUG_RATIOS)}], got {similarity.shape}")
    if not 0.0 < q <= 1.0:
        raise ValueError(f"q must lie in (0, 1], got {q}")
    columns = [0] + [1 + AUG_RATIOS.index(r) for r in ratios]
    powers = np.array([q**j for j in range(len(columns))])
    return similarity[:, columns] @ (powers / powers.sum())


def similarity_matrix(score_pairs: Any, hyps: Sequence[str], reference_sets: Sequence[Sequence[str]]) -> np.ndarray:
    """[items, references] similarities from ``score_pairs(hyps, refs) -> list`` (one reference per pair)."""
    width = len(reference_sets[0])
    flat_hyps = [h for h in hyps for _ in range(width)]
    flat_refs = [r for refs in reference_sets for r in refs]
    return np.asarray(score_pairs(flat_hyps, flat_refs), dtype=float).reshape(len(hyps), width)


def variant_scores(similarity: Mapping[tuple[str, str], np.ndarray]) -> dict[tuple[str, str, str, float], np.ndarray]:
    """Every (encoder, similarity, ratio set, q) score vector; ratio set "none" is the plain baseline (q moot)."""
    out = {}
    for (encoder, sim), matrix in similarity.items():
        for name, ratios in RATIO_SETS.items():
            for q in QS[:1] if not ratios else QS:
                out[(encoder, sim, name, q)] = weighted(matrix, ratios, q)
    return out


def evaluate_half(scores: np.ndarray, human: np.ndarray, rows: np.ndarray) -> dict[str, float]:
    from nlgmetrics.metaeval.correlation import kendall_b, pearson

    return {"kendall": kendall_b(scores[rows], human[rows]), "pearson": pearson(scores[rows], human[rows])}


def select_and_report(
    variants: Mapping[tuple, np.ndarray],
    human: np.ndarray,
    halves: np.ndarray,
    keys: Sequence[tuple],
    baseline: tuple,
    resamples: int,
    seed: int,
) -> dict[str, Any]:
    """Among ``keys`` (MARS variants), the one with the best select-half Kendall; its report-half numbers with a
    paired bootstrap against ``baseline`` (Kendall and Pearson)."""
    from nlgmetrics.metaeval.correlation import paired_bootstrap_correlation

    select, report = np.flatnonzero(halves == "select"), np.flatnonzero(halves == "report")
    best = max(keys, key=lambda k: evaluate_half(variants[k], human, select)["kendall"])
    out: dict[str, Any] = {"chosen": best, "select": evaluate_half(variants[best], human, select)}
    for statistic in ("kendall_b", "pearson"):
        out[statistic] = paired_bootstrap_correlation(
            variants[best][report], variants[baseline][report], human[report], statistic, resamples, seed
        )
    return out


def augmented_sets(
    filler: str,
    split: str,
    rows: Sequence[dict],
    cache: Path,
    timings: dict,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[list, dict]:
    """[reference, aug 0.2, 0.4, 0.6, 0.8] per item, from the cache or generated now (timed); ``overrides`` are
    further MARS config values (dotted keys) on top of the offline config."""
    import mars

    triples = [roc_split(r["hyp"], r["ref"], r["src"], split) for r in rows]
    scorer = mars.build(
        REPO / "configs" / "mars" / "offline.yaml",
        overrides={**(overrides or {}), "models.causal_lm": filler, "cache_dir": str(cache), "progress": True},
    )
    refs, srcs = [t[1] for t in triples], [t[2] for t in triples]
    missing = sum(any(scorer.cache.get(r, s, x) is None for x in AUG_RATIOS) for r, s in dict.fromkeys(zip(refs, srcs)))
    started, load = time.perf_counter(), load_average()
    sets = scorer.augment(refs, srcs)
    seconds = time.perf_counter() - started
    key = f"{filler}|{split}"
    if missing:
        timings[key] = {
            "generated_references": missing,
            "seconds": seconds,
            "seconds_per_reference": seconds / missing,
            "load_1m": max(load, load_average()),
            "words_per_reference": float(np.mean([len(r.split()) for r in refs])),
        }
    info = {
        "fallbacks": int(sum(t[3] for t in triples)),
        "signature": scorer.signature(),
        "unchanged_augmentations": int(sum(a == s[0] for s in sets for a in s[1:])),
    }
    return [(t[0], s) for t, s in zip(triples, sets)], info


def cached_matrix(
    folder: Path, encoder: str, similarity: str, hyps: Sequence[str], reference_sets: Sequence[Sequence[str]]
) -> np.ndarray:
    """``similarity_matrix`` stored under ``folder`` by a hash of its inputs (reruns add fillers, not encodes)."""
    import hashlib

    key = hashlib.sha256(
        json.dumps([encoder, similarity, list(hyps), [list(r) for r in reference_sets]]).encode("utf-8")
    ).hexdigest()[:20]
    path = folder / f"sim-{key}.npy"
    if path.exists():
        return np.load(path, allow_pickle=False)
    matrix = similarity_matrix(pair_scorer(encoder, similarity), hyps, reference_sets)
    folder.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(".part.npy")
    np.save(partial, matrix, allow_pickle=False)
    partial.replace(path)
    return matrix


def pair_scorer(encoder: str, similarity: str) -> Any:
    from nlgmetrics.baselines import BERTScorer, CosineScorer

    scorer = (BERTScorer if similarity == "bertscore" else CosineScorer)(encoder=encoder)
    return lambda hyps, refs: scorer.score(hyps, refs)


def parse_overrides(items: Sequence[str]) -> dict[str, Any]:
    """``--override`` values through ``mars.config.parse_overrides``; a malformed one stops the bench by name."""
    from mars.config import parse_overrides as parse

    try:
        return parse(items)
    except ValueError as error:
        raise SystemExit(f"--override: {error}") from None


def fmt_key(key: tuple) -> str:
    encoder, sim, ratios, q = key
    return f"{sim} {ratios}" + ("" if ratios == "none" else f" q={q:g}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fillers", default="packaged:smollm2,packaged:gemma3-270m", help="causal_lm role values")
    parser.add_argument("--splits", default="paper,generated,whole", help=f"comma-separated of {', '.join(SPLITS)}")
    parser.add_argument("--encoders", default="packaged:minilm,packaged:mpnet", help="encoder role values")
    parser.add_argument("--limit", type=int, default=0, help="first N items (0 = all 400)")
    parser.add_argument("--cache", default=str(REPO / "runs" / "mars_ablation" / "cache"))
    parser.add_argument("--split-seed", type=int, default=0, help="seed of the select/report item split")
    parser.add_argument("--resamples", type=int, default=1000, help="paired bootstrap resamples")
    parser.add_argument("--name", default=NAME, help="results file name under bench/results")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="MARS config value on top of configs/mars/offline.yaml, e.g. masking.window_words=0 "
        "(repeatable; VALUE is YAML; use its own --cache, timings live beside the cache)",
    )
    args = parser.parse_args()
    args.overrides = overrides = parse_overrides(args.override)

    from nlgmetrics.metaeval.split import split_items

    rows = load_union(args.limit or None)
    human = np.array([r["human"] for r in rows])
    assignment = split_items([r["item_id"] for r in rows], args.split_seed)
    halves = np.array([assignment[r["item_id"]] for r in rows])
    cache = Path(args.cache)
    cache.mkdir(parents=True, exist_ok=True)
    timing_file = cache.parent / "timings.json"
    timings = json.loads(timing_file.read_text()) if timing_file.exists() else {}
    fillers = [f for f in args.fillers.split(",") if f]
    splits = [s for s in args.splits.split(",") if s]
    encoders = [e for e in args.encoders.split(",") if e]
    table: list[dict] = []
    details: dict[str, Any] = {}
    all_keys: dict[tuple, np.ndarray] = {}
    for split in splits:
        for filler in fillers:
            pairs, info = augmented_sets(filler, split, rows, cache, timings, overrides)
            timing_file.write_text(json.dumps(timings, indent=1))
            hyps, sets = [p[0] for p in pairs], [p[1] for p in pairs]
            matrices = {
                (enc, sim): cached_matrix(cache.parent / "similarities", enc, sim, hyps, sets)
                for enc in encoders
                for sim in SIMILARITIES
            }
            variants = variant_scores(matrices)
            details[f"{filler}|{split}"] = {**info, "timing": timings.get(f"{filler}|{split}")}
            for enc in encoders:
                baseline = (enc, "bertscore", "none", QS[0])
                for sim in SIMILARITIES:
                    mars_keys = [k for k in variants if k[:2] == (enc, sim) and k[2] != "none"]
                    default = (enc, sim) + DEFAULT
                    chosen = select_and_report(
                        variants, human, halves, mars_keys, baseline, args.resamples, args.split_seed
                    )
                    fixed = select_and_report(
                        variants, human, halves, [default], baseline, args.resamples, args.split_seed
                    )
                    for label, result in (("default", fixed), ("best on select", chosen)):
                        k, p = result["kendall_b"], result["pearson"]
                        table.append(
                            {
                                "split": split,
                                "filler": filler.split(":")[-1],
                                "encoder": enc.split(":")[-1],
                                "variant": f"{label}: {fmt_key(result['chosen'])}",
                                "select_kendall": result["select"]["kendall"],
                                "report_kendall": k["a"],
                                "bertscore_kendall": k["b"],
                                "kendall_diff": k["difference"],
                                "kendall_ci95": "[{:+.3f}, {:+.3f}]".format(*k["ci95"]),
                                "kendall_not_better": k["share_a_not_better"],
                                "report_pearson": p["a"],
                                "bertscore_pearson": p["b"],
                                "pearson_diff": p["difference"],
                                "pearson_not_better": p["share_a_not_better"],
                            }
                        )
                for sim in SIMILARITIES:  # the plain similarity without augmentation, for reference
                    plain = (enc, sim, "none", QS[0])
                    result = select_and_report(
                        variants, human, halves, [plain], baseline, args.resamples, args.split_seed
                    )
                    table.append(
                        {
                            "split": split,
                            "filler": "-",
                            "encoder": enc.split(":")[-1],
                            "variant": f"baseline: {sim} (no augmentation)",
                            "select_kendall": result["select"]["kendall"],
                            "report_kendall": result["kendall_b"]["a"],
                            "bertscore_kendall": result["kendall_b"]["b"],
                            "kendall_diff": result["kendall_b"]["difference"],
                            "report_pearson": result["pearson"]["a"],
                            "bertscore_pearson": result["pearson"]["b"],
                            "pearson_diff": result["pearson"]["difference"],
                        }
                    )
            for key, values in variants.items():
                all_keys[(filler, split) + key] = values
            write_summary(args, rows, human, halves, all_keys, table, details, timings)  # a killed run keeps these


def write_summary(
    args: argparse.Namespace,
    rows: Sequence[dict],
    human: np.ndarray,
    halves: np.ndarray,
    all_keys: Mapping[tuple, np.ndarray],
    table: list[dict],
    details: Mapping[str, Any],
    timings: Mapping[str, Any],
) -> None:
    """Overall choice, notes and the results files, from whatever (split, filler) runs are done so far."""
    # one decision over everything: the MARS variant (any filler, split, encoder) best on the select half,
    # compared on the report half with BERTScore of the same encoder on the same split
    mars_keys = [k for k in all_keys if k[4] != "none"]
    select, report = np.flatnonzero(halves == "select"), np.flatnonzero(halves == "report")
    best = max(mars_keys, key=lambda k: evaluate_half(all_keys[k], human, select)["kendall"])
    from nlgmetrics.metaeval.correlation import paired_bootstrap_correlation

    baseline = next(k for k in all_keys if k[1:] == (best[1], best[2], "bertscore", "none", QS[0]))
    overall = {
        statistic: paired_bootstrap_correlation(
            all_keys[best][report],
            all_keys[baseline][report],
            human[report],
            statistic,
            args.resamples,
            args.split_seed,
        )
        for statistic in ("kendall_b", "pearson")
    }
    every = [
        {
            "filler": k[0],
            "split": k[1],
            "encoder": k[2],
            "similarity": k[3],
            "ratios": k[4],
            "q": k[5],
            **{f"select_{s}": v for s, v in evaluate_half(all_keys[k], human, select).items()},
            **{f"report_{s}": v for s, v in evaluate_half(all_keys[k], human, report).items()},
            **{f"all_{s}": v for s, v in evaluate_half(all_keys[k], human, np.arange(len(rows))).items()},
        }
        for k in all_keys
    ]
    notes = [
        f"UNION ROC, {len(rows)} items (one candidate each), human = reasonable_frac; items split by seeded hash "
        f"(seed {args.split_seed}) into select ({int((halves == 'select').sum())}) and report "
        f"({int((halves == 'report').sum())}) halves. select_kendall: Kendall tau-b on the select half (what "
        "chooses); every other column is the report half.",
        "bertscore_*: BERTScore-F1 (greedy token matching, no idf) with the same encoder on the same split and "
        f"items; *_diff = variant - BERTScore; CI and 'not better' (share of {args.resamples} paired bootstrap "
        "resamples with diff <= 0) from a row bootstrap of the report half.",
        "default = configs/mars/offline.yaml's weighting (ratios 0.2-0.8, q 0.8); best on select = best of "
        f"{len(RATIO_SETS) - 1} ratio sets x {len(QS)} q values for that filler/split/encoder/similarity.",
        "Overall choice (every filler, split, encoder, similarity, ratio set, q, chosen on the select half): "
        f"{best}; report half vs BERTScore {baseline[2]}: Kendall diff {overall['kendall_b']['difference']:+.4f} "
        "[{:+.4f}, {:+.4f}], not better {:.3f}; Pearson diff {:+.4f} [{:+.4f}, {:+.4f}], not better {:.3f}.".format(
            *overall["kendall_b"]["ci95"],
            overall["kendall_b"]["share_a_not_better"],
            overall["pearson"]["difference"],
            *overall["pearson"]["ci95"],
            overall["pearson"]["share_a_not_better"],
        ),
        "Augmentation timings (s per generated reference, 2 threads; load_1m > 2 means a shared CPU): "
        + "; ".join(
            f"{k}: {v['seconds_per_reference']:.2f} s ({v['words_per_reference']:.0f} words, load {v['load_1m']:.1f})"
            for k, v in timings.items()
        ),
        "Fallbacks (split not buildable as described, stand-in used) and augmentations equal to the reference: "
        + "; ".join(f"{k}: {v['fallbacks']} / {v['unchanged_augmentations']}" for k, v in details.items()),
    ]
    columns = [
        "split",
        "filler",
        "encoder",
        "variant",
        "select_kendall",
        "report_kendall",
        "bertscore_kendall",
        "kendall_diff",
        "kendall_ci95",
        "kendall_not_better",
        "report_pearson",
        "bertscore_pearson",
        "pearson_diff",
        "pearson_not_better",
    ]
    if args.override:
        notes.append(f"MARS config overrides on top of configs/mars/offline.yaml: {', '.join(args.override)}.")
    write_results(
        args.name,
        {
            "items": len(rows),
            "split_seed": args.split_seed,
            "resamples": args.resamples,
            "overrides": args.overrides,
            "overall": {"chosen": list(best), "baseline": list(baseline), **overall},
            "details": details,
            "every_variant": every,
        },
        table,
        columns,
        "MARS on ROC stories: ablation against BERTScore with the same encoder",
        notes,
    )


if __name__ == "__main__":
    main()
