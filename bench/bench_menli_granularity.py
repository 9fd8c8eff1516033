"""MENLI on paragraphs: sentence granularity against the text-level pass on the same pairs, in turns.

Text granularity scores 2 NLI pairs per segment (``<->``) and truncates them at the model's window; sentence
granularity scores every sentence pair of both directions, which is the price of seeing damage late in a
paragraph. The table gives segments/s, NLI pairs/s and the time ratio to the text-level pass.

    python bench/bench_menli_granularity.py [--items 50] [--model packaged:nli-minilm] [--repeats 2]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import data_dir, interleaved_best_times, write_results  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=50, help="TED-MT zh-en paragraphs (refs[0] vs refs[1])")
    parser.add_argument("--model", default="packaged:nli-minilm", help="NLI role value")
    parser.add_argument("--batch-size", type=int, default=64, help="NLI batch size")
    parser.add_argument("--repeats", type=int, default=2, help="interleaved repeats; the best time counts")
    parser.add_argument("--threads", type=int, default=2, help="torch threads")
    args = parser.parse_args()

    import torch

    from menli import menli_scores
    from menli.granularity import nli_probabilities, split_sentences
    from nlgmetrics.nli import load_nli

    torch.set_num_threads(args.threads)
    path = data_dir() / "multiref" / "multiref_tedmt_zhen_2refs.jsonl"
    rows = [json.loads(line) for line in open(path, encoding="utf-8")][: args.items]
    hyps, refs = [r["refs"][0] for r in rows], [r["refs"][1] for r in rows]
    nli = load_nli(args.model, "cpu")
    _, windowed = nli_probabilities(nli, refs, hyps, "e", "auto", batch_size=args.batch_size)
    sentence_pairs = 2 * sum(len(split_sentences(h)) * len(split_sentences(r)) for h, r in zip(hyps, refs))
    runs = {g: (lambda g=g: menli_scores(nli, hyps, refs, "e", "<->", batch_size=args.batch_size, granularity=g))
            for g in ("text", "sentence")}
    runs["text"]()  # warm-up
    load_before = os.getloadavg()[0]
    times = interleaved_best_times(runs, repeats=args.repeats)
    pairs = {"text": 2 * len(rows), "sentence": sentence_pairs}
    out = [{"granularity": g, "segments": len(rows), "nli_pairs": pairs[g], "seconds": times[g],
            "segments_per_s": len(rows) / times[g], "pairs_per_s": pairs[g] / times[g],
            "time_ratio_to_text": times[g] / times["text"]} for g in ("text", "sentence")]
    write_results("menli_granularity",
                  {"model": args.model, "hash": nli.hash, "data": str(path), "threads": args.threads,
                   "over_window": int(windowed.sum()), "load_average_before": load_before},
                  out, ["granularity", "segments", "nli_pairs", "seconds", "segments_per_s", "pairs_per_s",
                        "time_ratio_to_text"],
                  f"MENLI e <-> on {len(rows)} TED-MT paragraphs ({int(windowed.sum())} over the NLI window), "
                  f"{args.threads} threads, load {load_before:.1f} at start")


if __name__ == "__main__":
    main()
