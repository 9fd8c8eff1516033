"""MENLI on paragraphs: sentence granularity against the text-level pass on the same pairs, in turns.

Text granularity scores 2 NLI pairs per segment (``<->``) and truncates them at the model's window; sentence
granularity scores every sentence pair of both directions, which is the price of seeing damage late in a
paragraph. The table gives segments/s, NLI pairs/s and the time ratio to the text-level pass.

    python bench/bench_menli_granularity.py [--items 50] [--model packaged:nli-minilm] [--repeats 2] [--candidates 1,2]
        # ~20 min on 2 cores; -> menli_granularity.{json,md}

``sentence/kK`` rows score only each hypothesis sentence's K lexical neighbours (``--sentence-candidates``); their
last two columns say how far their scores are from scoring every sentence pair.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import TED_FILE, interleaved_best_times, load_average, read_data, write_results  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=50, help="TED-MT zh-en paragraphs (refs[0] vs refs[1])")
    parser.add_argument("--model", default="packaged:nli-minilm", help="NLI role value")
    parser.add_argument("--batch-size", type=int, default=64, help="NLI batch size")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved repeats; the best time counts")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    parser.add_argument(
        "--candidates",
        default="2",
        help="comma-separated k of --sentence-candidates to time and compare with every sentence pair",
    )
    args = parser.parse_args()

    import numpy as np
    import torch
    from scipy.stats import spearmanr

    from menli import menli_scores
    from menli.granularity import candidate_mask, nli_probabilities, split_sentences
    from nlgmetrics.nli import load_nli

    torch.set_num_threads(args.threads)
    path = TED_FILE
    rows = read_data(path)[: args.items]
    hyps, refs = [r["refs"][0] for r in rows], [r["refs"][1] for r in rows]
    nli = load_nli(args.model, "cpu")
    _, windowed = nli_probabilities(nli, refs, hyps, "e", "auto", batch_size=args.batch_size)
    ks = [int(k) for k in args.candidates.split(",") if k]
    pairs = {"text": 2 * len(rows)}
    pairs["sentence"] = sum(
        int(candidate_mask(split_sentences(a), split_sentences(b), 0).sum())
        for h, r in zip(hyps, refs)
        for a, b in ((r, h), (h, r))
    )
    for k in ks:
        pairs[f"sentence/k{k}"] = sum(
            int(candidate_mask(split_sentences(a), split_sentences(b), k).sum())
            for h, r in zip(hyps, refs)
            for a, b in ((r, h), (h, r))
        )
    settings = {"text": ("text", 0), "sentence": ("sentence", 0), **{f"sentence/k{k}": ("sentence", k) for k in ks}}
    scores: dict[str, np.ndarray] = {}

    def run(name: str) -> None:
        granularity, k = settings[name]
        scores[name] = menli_scores(
            nli, hyps, refs, "e", "<->", batch_size=args.batch_size, granularity=granularity, sentence_candidates=k
        )

    runs = {name: (lambda name=name: run(name)) for name in settings}
    runs["text"]()  # warm-up
    load_before = load_average()
    times = {name: t.wall for name, t in interleaved_best_times(runs, repeats=args.repeats).items()}
    out = []
    for g in settings:
        agree = scores[g] - scores["sentence"]
        out.append(
            {
                "granularity": g,
                "segments": len(rows),
                "nli_pairs": pairs[g],
                "seconds": times[g],
                "segments_per_s": len(rows) / times[g],
                "pairs_per_s": pairs[g] / times[g],
                "time_ratio_to_text": times[g] / times["text"],
                "max_abs_diff_to_sentence": float(np.abs(agree).max()),
                "spearman_to_sentence": float(spearmanr(scores[g], scores["sentence"]).statistic),
            }
        )
    write_results(
        "menli_granularity",
        {
            "model": args.model,
            "hash": nli.hash,
            "data": str(path),
            "threads": args.threads,
            "over_window": int(windowed.sum()),
            "load_average_before": load_before,
        },
        out,
        [
            "granularity",
            "segments",
            "nli_pairs",
            "seconds",
            "segments_per_s",
            "pairs_per_s",
            "time_ratio_to_text",
            "max_abs_diff_to_sentence",
            "spearman_to_sentence",
        ],
        f"MENLI e <-> on {len(rows)} TED-MT paragraphs ({int(windowed.sum())} over the NLI window), "
        f"{args.threads} threads, load {load_before:.1f} at start",
    )


if __name__ == "__main__":
    main()
