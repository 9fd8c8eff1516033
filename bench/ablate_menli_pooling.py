"""Which of MENLI's 15 pooling strategies ranks MT-like candidates best? Chosen on the dev mix's select half,
reported on its report half against BERTScore, and on the dev adversarial suite.

MENLI's paper fixed one pooling per task from its own NLI models (MT: ``e <->``). Our NLI models are smaller and
were trained differently, so the paper's choice need not be theirs; this asks the dev mix. One NLI pass per
direction gives every strategy (all 15 are linear in the two probability vectors), so the run costs two NLI
passes per (candidate, reference) pair, cached per model (``nlgmetrics.nli.distill.teacher_probabilities``).

The default sets are the mix's short-text sets (TED zh-en MQM segments, WebNLG): their pairs fit the NLI window,
so text-level probabilities are exactly what MENLI's default granularity scores. SummEval is left to the
summarisation pooling (``--task summarization``) and its long pairs would need the sentence matrix per formula.

    python bench/ablate_menli_pooling.py [--nli-model packaged:nli-mpnet] [--sets ted_zhen,webnlg]

Cost on 2 cores: the NLI passes over both halves and the adversarial suite, about an hour for nli-mpnet on first
use; every strategy after that is arithmetic on the cached probabilities (a rerun takes seconds).
Writes bench/results/menli_pooling[_<model>].{json,md}.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path
from typing import Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ablate_menli_combiner import adversarial_accuracy, adversarial_rows, reference_scores  # noqa: E402
from bench.harness import REPO, data_dir, metric, read_data, write_document  # noqa: E402


def pair_probabilities(nli, rows: Sequence[dict], cache: Path) -> tuple[list, list]:
    """Per row, the [R, 3] forward (reference premise) and backward (candidate premise) probabilities, one per
    reference; each distinct pair is scored once and cached on disk under the model's hash."""
    from nlgmetrics.nli.distill import teacher_probabilities

    pairs = []
    for row in rows:
        for ref in row["refs"]:
            pairs.append({"premise": ref, "hypothesis": row["hyp"]})
            pairs.append({"premise": row["hyp"], "hypothesis": ref})
    probs = teacher_probabilities(nli, pairs, cache, desc="NLI pairs")
    forward, backward, start = [], [], 0
    for row in rows:
        block = probs[start : start + 2 * len(row["refs"])].astype("float64")
        forward.append(block[0::2])
        backward.append(block[1::2])
        start += 2 * len(row["refs"])
    return forward, backward


def strategy_scores(forward: Sequence, backward: Sequence, formula: str, direction: str):
    """MENLI's score per row for one strategy: pooled per reference, then the max over references (the
    toolkit's default multi-reference aggregation, ``menli.functional.aggregate_references``)."""
    import numpy as np

    from menli.functional import aggregate_references
    from menli.pooling import pool

    owner = np.repeat(np.arange(len(forward)), [len(f) for f in forward])
    pair_scores = pool(formula, direction, np.concatenate(forward), np.concatenate(backward))
    return aggregate_references(pair_scores, owner, len(forward), "max")


def select_mean(taus: dict[str, float]) -> float:
    """Unweighted mean tau-like over the sets."""
    return sum(taus.values()) / len(taus)


def choose_strategy(select_taus: dict[str, dict[str, float]], paper: str) -> str:
    """The strategy with the best unweighted mean tau-like over the sets of the select half. Ties (to 1e-6) go to
    the paper's choice, then to the table's order: a tie is no evidence against the paper."""
    return max(select_taus, key=lambda key: (round(select_mean(select_taus[key]), 6), key == paper))


def over_window(nli, rows: Sequence[dict]) -> int:
    """How many (reference, candidate) pairs are longer than the NLI window (there, MENLI's default granularity
    would pool sentences instead of the text-level probabilities used here)."""
    from menli.granularity import pair_lengths

    refs = [ref for row in rows for ref in row["refs"]]
    hyps = [row["hyp"] for row in rows for _ in row["refs"]]
    return int((pair_lengths(nli, refs, hyps) > nli.max_length).sum()) if refs else 0


def load_halves(
    mix: dict, wanted: Sequence[str], nli, bertscore, cache: Path, score_cache: Path, limit_items: int | None = None
) -> dict[str, list[dict]]:
    """Per half (select, report) and set: the judged rows' NLI probabilities both ways (pair cache), BERTScore row
    scores (score cache), human scores and item keys; what every strategy and combination is computed from."""
    import numpy as np

    from nlgmetrics.metaeval.devmix import set_rows

    entries = {e["name"]: e for e in mix["sets"]}
    halves: dict[str, list[dict]] = {}
    for half in ("select", "report"):
        halves[half] = []
        for name in wanted:
            rows = set_rows(entries[name], data_dir(), half, int(mix["split_seed"]), limit_items)
            t0 = time.perf_counter()
            forward, backward = pair_probabilities(nli, rows, cache)
            tag = f"refonly-{Path(entries[name]['path']).stem}-{half}-{mix['split_seed']}"
            bert = np.asarray(reference_scores(bertscore, rows, score_cache, tag))
            print(f"{half} {name}: {len(rows)} rows, {time.perf_counter() - t0:.0f} s", flush=True)
            halves[half].append(
                {
                    "set": name,
                    "rows": len(rows),
                    "over_window": over_window(nli, rows),
                    "human": [float(r["scores"][entries[name]["human"]]) for r in rows],
                    "items": [(r.get("lp"), r.get("item_id")) for r in rows],
                    "forward": forward,
                    "backward": backward,
                    "bertscore": bert,
                }
            )
    return halves


def check_sets(parser, mix: dict, sets: str) -> list[str]:
    """The comma-separated set names, each one of the mix's (else a parser error naming the mix's sets)."""
    wanted = [s.strip() for s in sets.split(",") if s.strip()]
    names = [e["name"] for e in mix["sets"]]
    unknown = [s for s in wanted if s not in names]
    if unknown:
        parser.error(f"unknown set(s) {', '.join(unknown)}; the mix has {', '.join(names)}")
    return wanted


def add_set_options(parser: argparse.ArgumentParser) -> None:
    """The options of the ablations that read the short-text sets from the pair and score caches."""
    from nlgmetrics.nli import DEFAULT_NLI

    parser.add_argument("--mix", default="devmix/default.yaml")
    parser.add_argument("--sets", default="ted_zhen,webnlg", help="comma-separated set names of the mix")
    parser.add_argument("--nli-model", default=DEFAULT_NLI)
    parser.add_argument("--cache", default=str(REPO / "runs" / "nli_pair_cache"))
    parser.add_argument(
        "--score-cache",
        default=str(REPO / "runs" / "devmix_cache"),
        help="BERTScore row scores (the cache evaluate.py devmix --cache uses)",
    )
    parser.add_argument(
        "--adversarial",
        default="adversarial/adv_menli_wmt20_de.jsonl",
        help="adversarial suite under the data folder ('' to skip)",
    )
    parser.add_argument("--limit-items", type=int, help="at most N items per set and half (smoke runs)")
    parser.add_argument("--bootstrap", type=int, default=1000)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    add_set_options(parser)
    parser.add_argument("--name", help="result file stem (default menli_pooling_<model>)")
    args = parser.parse_args()

    import torch

    torch.set_num_threads(int(os.environ.get("NLGMETRICS_THREADS", "2")))
    from menli.pooling import ALL_STRATEGIES, PAPER_CHOICES
    from nlgmetrics.metaeval import paired_bootstrap_tau_like_mix, tau_like
    from nlgmetrics.metaeval.devmix import load_mix
    from nlgmetrics.nli import load_nli

    mix = load_mix(args.mix)
    wanted = check_sets(parser, mix, args.sets)
    bertscore = metric("bertscore", encoder="packaged:minilm", progress=False)  # the published rows' encoder
    nli = load_nli(args.nli_model)
    cache = Path(args.cache)
    started = time.perf_counter()

    halves = load_halves(mix, wanted, nli, bertscore, cache, Path(args.score_cache), args.limit_items)

    def taus(half: str, formula: str, direction: str) -> dict[str, float]:
        return {
            s["set"]: tau_like(strategy_scores(s["forward"], s["backward"], formula, direction), s["human"], s["items"])
            for s in halves[half]
        }

    select = {f"{f} {d}": taus("select", f, d) for f, d in ALL_STRATEGIES}
    select_bert = {s["set"]: tau_like(s["bertscore"], s["human"], s["items"]) for s in halves["select"]}
    paper = " ".join(PAPER_CHOICES[("mt", False)])
    chosen = choose_strategy(select, paper)

    adversarial = None
    if args.adversarial:
        rows = read_data(args.adversarial)
        pairs, n_good, types = adversarial_rows(rows)
        forward, backward = pair_probabilities(nli, pairs, cache)
        adversarial = {"data": args.adversarial, "rows": len(rows), "accuracy": {}}
        for formula, direction in ALL_STRATEGIES:
            scores = strategy_scores(forward, backward, formula, direction)
            adversarial["accuracy"][f"{formula} {direction}"] = adversarial_accuracy(scores, n_good, types)

    report = []
    for formula, direction in ALL_STRATEGIES:
        key = f"{formula} {direction}"
        sets = [
            (strategy_scores(s["forward"], s["backward"], formula, direction), s["bertscore"], s["human"], s["items"])
            for s in halves["report"]
        ]
        report.append(
            {
                "strategy": key,
                "select_tau": select[key],
                "select_mean_tau": select_mean(select[key]),
                "report_tau": {
                    s["set"]: tau_like(m, s["human"], s["items"]) for (m, *_), s in zip(sets, halves["report"])
                },
                "vs_bertscore": paired_bootstrap_tau_like_mix(sets, args.bootstrap, 0),
                "chosen": key == chosen,
                "paper": key == paper,
            }
        )
    result = {
        "mix": args.mix,
        "sets": wanted,
        "split_seed": mix["split_seed"],
        "limit_items": args.limit_items,
        "nli_model": args.nli_model,
        "bertscore": bertscore.signature(),
        "halves": {
            h: [{"set": s["set"], "rows": s["rows"], "pairs_over_window": s["over_window"]} for s in halves[h]]
            for h in halves
        },
        "bertscore_tau": {
            "select": select_bert,
            "report": {s["set"]: tau_like(s["bertscore"], s["human"], s["items"]) for s in halves["report"]},
        },
        "chosen": chosen,
        "paper": paper,
        "report": report,
        "adversarial": adversarial,
        "seconds": round(time.perf_counter() - started, 1),
    }
    write_document(args.name or "menli_pooling_" + args.nli_model.split(":")[-1].replace("/", "_"), result, markdown)


def markdown(result: dict) -> str:
    sets = result["sets"]
    lines = [
        f"# MENLI's pooling strategy: chosen on the select half, reported on the report half "
        f"(split seed {result['split_seed']}, NLI model {result['nli_model']})",
        "",
        "| strategy | "
        + " | ".join(f"select {s}" for s in sets)
        + " | select mean | "
        + " | ".join(f"report {s}" for s in sets)
        + " | report mean vs BERTScore [95% CI] | P(not better) | adversarial acc. |",
        "|---|" + "---|" * (2 * len(sets) + 4),
    ]
    bert = result["bertscore_tau"]
    lines.append(
        "| BERTScore-MiniLM | "
        + " | ".join(f"{bert['select'][s]:.4f}" for s in sets)
        + f" | {select_mean(bert['select']):.4f} | "
        + " | ".join(f"{bert['report'][s]:.4f}" for s in sets)
        + " | +0 | - | - |"
    )
    for row in result["report"]:
        boot = row["vs_bertscore"]
        adv = (result["adversarial"] or {}).get("accuracy", {}).get(row["strategy"])
        name = f"`{row['strategy']}`" + (" (paper, MT)" if row["paper"] else "")
        name = f"**{name}** (chosen)" if row["chosen"] else name
        lines.append(
            f"| {name} | "
            + " | ".join(f"{row['select_tau'][s]:.4f}" for s in sets)
            + f" | {row['select_mean_tau']:.4f} | "
            + " | ".join(f"{row['report_tau'][s]:.4f}" for s in sets)
            + f" | {boot['difference']:+.4f} [{boot['ci95'][0]:+.4f}, {boot['ci95'][1]:+.4f}] | "
            f"{boot['share_a_not_better']:.3f} | " + (f"{adv:.3f}" if adv is not None else "-") + " |"
        )
    sizes = "; ".join(
        f"{h}: "
        + ", ".join(
            f"{s['set']} {s['rows']} rows ({s['pairs_over_window']} over the NLI window)" for s in result["halves"][h]
        )
        for h in result["halves"]
    )
    lines += [
        "",
        "- Tau-like: WMT20 item-grouped Kendall; select mean = unweighted mean over sets; the choice is the "
        "best select mean (ties to the paper's MT choice).",
        "- vs BERTScore: mean over sets of tau-like(strategy) - tau-like(BERTScore, same rows) on the report "
        "half; items resampled within each set; P(not better) = share of resamples with difference <= 0.",
        "- Scores: text-level NLI probabilities per (reference, candidate) pair, pooled, max over references; "
        "the few pairs longer than the NLI window are truncated here, where MENLI's default granularity would "
        f"pool their sentences. Rows (pairs over the window): {sizes}.",
        "- Adversarial: mean preference accuracy over error types, reference-based."
        if result["adversarial"]
        else "- Adversarial suite not run.",
        f"- BERTScore: `{result['bertscore']}`",
        f"- {result['seconds']:.0f} s; machine {result['machine']}",
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
