"""``evaluate.py self-bias``: the self-evaluation-bias test on causal LMs that load offline.

    nlgmetrics-evaluate self-bias --generators packaged:smollm2,packaged:gemma3-270m \\
        --data paragraphs.txt --limit 200 --judges chrf,bertscore --out DIR

Prompts are the first ``--prompt-words`` words of each paragraph (the paper continues WikiText prompts); the
words after them are the true continuation that the neutral judges compare against. Writes ``report.json``,
``report.md`` and ``bias.png`` to ``--out``; the last stdout line is the report.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from nlgmetrics.cli.metricflags import add_metric_options, metric_from_args

NAME = "self-bias"
EPILOG = """example:
  nlgmetrics-evaluate self-bias --generators packaged:smollm2,packaged:gemma3-270m --data paragraphs.txt \\
      --limit 200 --judges chrf,bertscore --out runs/self-bias"""


def add_parser(sub: Any) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help="self-evaluation bias of LM log-likelihood metrics (blind-spot paper 5.4)",
        epilog=EPILOG,
        description="Does an LM's likelihood prefer its own continuations?",
    )
    p.add_argument(
        "--generators",
        required=True,
        help="comma-separated causal_lm role values; each generates and, as lm:<value>, evaluates",
    )
    p.add_argument("--data", required=True, help="text file, one paragraph per line (e.g. WikiText paragraphs)")
    p.add_argument("--out", required=True, help="folder for report.json, report.md and bias.png")
    p.add_argument(
        "--judges",
        default="chrf,bertscore",
        help="comma-separated neutral toolkit metrics scoring a continuation against the true one",
    )
    p.add_argument("--limit", type=int, default=200, help="first N usable paragraphs")
    p.add_argument("--prompt-words", type=int, default=32, help="words of each paragraph used as the prompt")
    p.add_argument("--continuation-words", type=int, default=32, help="words of the true continuation")
    p.add_argument("--max-new-tokens", type=int, default=48, help="tokens each generator samples")
    p.add_argument("--top-k", type=int, default=50, help="top-k sampling (the paper's k = 50)")
    p.add_argument("--seed", type=int, default=0, help="sampling and bootstrap seed")
    p.add_argument("--bootstrap", type=int, default=1000, help="paired bootstrap resamples over prompts")
    p.add_argument("--lm-batch-size", type=int, default=8, help="batch size of generation and LM scoring")
    add_metric_options(p, metric=False)
    return p


def plot(report: dict, path: Path) -> None:
    """One bar per (evaluator, other generator): the bias with its 95% interval; above 0 = self-preference."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tests = report["tests"]
    labels = [f"{t['evaluator']}\nvs {t['other_generator']}" for t in tests]
    bias = [t["bias"] for t in tests]
    err = [[t["bias"] - t["ci95"][0] for t in tests], [t["ci95"][1] - t["bias"] for t in tests]]
    fig, ax = plt.subplots(figsize=(max(4, 2.2 * len(tests)), 3.6))
    colours = ["tab:red" if t["verdict"].startswith("prefers") else "tab:grey" for t in tests]
    ax.bar(range(len(tests)), bias, yerr=err, color=colours, capsize=4)
    ax.axhline(0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(tests)), labels, fontsize=8)
    ax.set_ylabel("own-generator win share\nminus reference judges'")
    ax.set_title(f"Self-evaluation bias, {report['prompts']} prompts (red: significant)", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def run(args: argparse.Namespace) -> dict:
    """Run the test; the judges are registered metrics, built with this command line's metric flags."""
    from nlgmetrics.metaeval import InputError, atomic_write, read_lines
    from nlgmetrics.modelroles import load_causal_lm
    from nlgmetrics.stress.self_bias import markdown, prompts_from_paragraphs, run_self_bias

    specs = [s for s in args.generators.split(",") if s]
    if len(specs) < 2 or len(set(specs)) != len(specs):
        raise InputError("--generators needs two or more different causal LMs")
    if min(args.prompt_words, args.continuation_words, args.max_new_tokens, args.top_k, args.bootstrap) < 1:
        raise InputError("--prompt-words, --continuation-words, --max-new-tokens, --top-k and --bootstrap must be >= 1")
    prompts, truths = prompts_from_paragraphs(
        read_lines(args.data, "paragraphs"), args.prompt_words, args.continuation_words
    )
    prompts, truths = prompts[: args.limit], truths[: args.limit]
    if len(prompts) < 2:
        raise InputError(
            f"{args.data}: fewer than 2 paragraphs have {args.prompt_words + args.continuation_words} words"
        )
    names = [name for name in args.judges.split(",") if name]
    judges = {name: metric_from_args(name, args, run_names=names).score for name in names}
    generators = {spec: load_causal_lm(spec, device=args.device) for spec in specs}
    report = run_self_bias(
        generators,
        judges,
        prompts,
        truths,
        max_new_tokens=args.max_new_tokens,
        top_k=args.top_k,
        seed=args.seed,
        batch_size=args.lm_batch_size,
        n_boot=args.bootstrap,
        progress=not args.quiet,
    )
    report.update(
        {
            "data": str(args.data),
            "generator_hashes": {s: lm.hash for s, lm in generators.items()},
            "prompt_words": args.prompt_words,
            "continuation_words": args.continuation_words,
        }
    )
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with atomic_write(out / "report.json") as handle:
        handle.write(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    with atomic_write(out / "report.md") as handle:
        handle.write(markdown(report))
    plot(report, out / "bias.png")
    return report
