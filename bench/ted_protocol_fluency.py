"""The fluency ablation's chosen three-way MENLI combination on the README's TED zh-en protocol.

``ablate_menli_fluency.py`` chooses ``w_nli * menli + w_p * partner + w_lm * lm-ratio`` on the dev mix's select half
and reads the dev mix's TED rows (human reference ref-A left out). The MENLI issue judges TED zh-en on every row of
the file, ref-A included: the "Correlation with MQM" table's 7,406 rows, where BERTScore-MiniLM's tau-like is 0.070.
This scores those rows with the exact models the result file names (signatures checked), applies the result's fixed
ranges and weights (nothing is fitted here) and reports the item-grouped tau-like with a paired item bootstrap
against BERTScore on the same rows. The three-way is not a toolkit option (``menli.CombinedScorer`` takes one
partner), which is why this is a script and not ``evaluate.py correlate``.

    python bench/ted_protocol_fluency.py [--result bench/results/menli_fluency_nli-mpnet.json]

Writes bench/results/ted_protocol_<result stem>.{json,md}.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.ablate_menli_combiner import reference_scores  # noqa: E402
from bench.ablate_menli_fluency import FLUENCY, mixed  # noqa: E402
from bench.common import REPO, RESULTS, data_dir, machine  # noqa: E402


def chosen_point(result: dict, path: str) -> tuple[str, list[float]]:
    """The (partner, weights) the result's rule carried to the report half; an error if it carried nothing."""
    chosen = result.get("chosen")
    if not chosen or not result.get("report"):
        raise SystemExit(f"{path}: its rule carried no point to the report half ({result.get('verdict')}); "
                         "nothing to measure")
    return chosen["partner"], [float(w) for w in chosen["weights"]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--result", default=str(RESULTS / "menli_fluency_nli-mpnet.json"),
                        help="a bench/ablate_menli_fluency.py result file whose rule carried a point")
    parser.add_argument("--data", default="judgments/mt_mqm_wmt21_ted_zhen.jsonl", help="under the data folder")
    parser.add_argument("--human", default="mqm")
    parser.add_argument("--cache", default=str(REPO / "runs" / "devmix_cache"))
    parser.add_argument("--checkpoint", nargs="+", help="SEScore checkpoint folder(s), if the partner is sescore "
                                                        "and the result was not made with the default")
    parser.add_argument("--limit-items", type=int, help="the first N items only (smoke runs)")
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--name", help="result file stem (default ted_protocol_<result stem>)")
    args = parser.parse_args()

    result = json.loads(Path(args.result).read_text(encoding="utf-8"))
    partner, weights = chosen_point(result, args.result)

    import numpy as np
    import torch

    torch.set_num_threads(int(os.environ.get("NLGMETRICS_THREADS", "2")))
    from menli import MinMax
    from nlgmetrics.cli.devmix import _cached_scores
    from nlgmetrics.cli.evaluate import build_scorer, make_parser
    from nlgmetrics.metaeval import first_items, paired_bootstrap_tau_like, read_jsonl, tau_like, usable_rows

    rows = [r for r in first_items(read_jsonl(data_dir() / args.data), args.limit_items)
            if (r.get("scores") or {}).get(args.human) is not None]
    rows, skipped = usable_rows(rows)
    cli = make_parser().parse_args(["devmix", "--half", "select", "--metric", "menli", "--quiet",
                                    "--encoder", "packaged:minilm", "--nli-model", result["nli_model"],
                                    *(["--checkpoint", *args.checkpoint] if args.checkpoint else [])])
    cli.reference_free_scoring = False
    names = tuple(dict.fromkeys(("menli", partner, FLUENCY, "bertscore")))
    scorers = {name: build_scorer(name, cli) for name in names}
    wrong = [f"{n}: result '{result['signatures'][n]}', here '{scorers[n].signature()}'"
             for n in names if result["signatures"].get(n) != scorers[n].signature()]
    if wrong:
        raise SystemExit("the models differ from those the result's ranges were fitted with: " + "; ".join(wrong))

    started = time.perf_counter()
    tag = f"refonly-{Path(args.data).stem}-all"
    scores = {}
    for name in names:
        t0 = time.perf_counter()
        scores[name] = np.asarray(_cached_scores(scorers[name], rows, reference_scores, Path(args.cache), tag))
        print(f"{name}: {len(rows)} rows, {time.perf_counter() - t0:.0f} s", flush=True)
    ranges = {n: MinMax(float(r["low"]), float(r["high"])) for n, r in result["ranges"].items()}
    combination = mixed(scores, ranges, partner, weights)
    human = [float(r["scores"][args.human]) for r in rows]
    items = [(r.get("lp"), r.get("item_id")) for r in rows]
    label = f"{weights[0]:g} menli + {weights[1]:g} {partner} + {weights[2]:g} {FLUENCY}"
    out = {"result": args.result, "data": args.data, "human": args.human, "rows": len(rows), "skipped": len(skipped),
           "limit_items": args.limit_items, "combination": label, "partner": partner, "weights": weights,
           "signatures": {n: scorers[n].signature() for n in names},
           "tau": {label: tau_like(combination, human, items),
                   **{n: tau_like(scores[n], human, items) for n in names}},
           "vs_bertscore": paired_bootstrap_tau_like(combination, scores["bertscore"], human, items, args.bootstrap),
           "seconds": round(time.perf_counter() - started, 1), "machine": machine()}
    name = args.name or f"ted_protocol_{Path(args.result).stem}"
    (RESULTS / f"{name}.json").write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    (RESULTS / f"{name}.md").write_text(markdown(out), encoding="utf-8")
    print(markdown(out))


def markdown(out: dict) -> str:
    vs = out["vs_bertscore"]
    lines = [f"# {out['combination']} (fixed weights and ranges from `{Path(out['result']).name}`) on {out['data']}, "
             f"all {out['rows']} rows", "", "| metric | tau-like (item-grouped) |", "|---|---|"]
    lines += [f"| {'**' + k + '**' if k == out['combination'] else k} | {v:.4f} |" for k, v in out["tau"].items()]
    low, high = vs["ci95"]
    lines += ["", f"Combination vs BERTScore (paired item bootstrap, {vs['resamples']} resamples): "
              f"{vs['difference']:+.4f} [{low:+.4f}, {high:+.4f}], not better in {vs['share_a_not_better']:.1%}.", "",
              f"- Rows: {out['rows']} ({out['skipped']} unusable left out); limit_items {out['limit_items']}.",
              "- Scores against the references only (sources blanked, as in the ablation); nothing fitted here.",
              "- Metrics: " + "; ".join(f"`{s}`" for s in out["signatures"].values()),
              f"- {out['seconds']} s; machine {out['machine']}"]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
