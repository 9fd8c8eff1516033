"""``evaluate.py nli-accuracy``: NLI models' accuracy on labelled test sets, side by side, with paired intervals.

The test sets come from an NLI training recipe's ``test_files`` (the same file specs, so a trained adapter and the
model it is compared with are measured on exactly the rows its model card reports) or from ``--test NAME=PATH``.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

import numpy as np

from nlgmetrics.modelroles.precision import PRECISIONS

NAME = "nli-accuracy"
EPILOG = """examples:
  nlgmetrics-evaluate nli-accuracy --nli-model packaged:nli-me5 --recipe nli/me5_xnli.yaml --only xnli_de
  nlgmetrics-evaluate nli-accuracy --nli-model packaged:nli-me5,runs/nli/me5-xnli --recipe nli/me5_xnli.yaml \\
      --json nli_xnli.json --markdown nli_xnli.md"""


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        NAME,
        help="NLI models' accuracy on labelled test sets, with paired-bootstrap intervals against the first",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Accuracy (and calibration of P(entailment)) of one or more NLI models on the same test rows.",
    )
    p.add_argument(
        "--nli-model",
        required=True,
        help="comma-separated NLI role values (packaged:nli-me5, an adapter folder, a hub classifier)",
    )
    p.add_argument("--recipe", help="an NLI training recipe (path or packaged name) whose test_files to use")
    p.add_argument("--test", action="append", default=[], metavar="NAME=PATH", help="a JSONL test file (repeatable)")
    p.add_argument("--only", help="comma-separated test-set names to keep (default: all)")
    p.add_argument("--batch-size", type=int, default=64, help="pairs per forward pass")
    p.add_argument("--device", default="auto", help="cpu, cuda, mps or auto")
    p.add_argument(
        "--precision",
        default="float32",
        choices=PRECISIONS,
        help="the models' forward pass (bfloat16: autocast, for CPUs with bf16 units and GPUs)",
    )
    p.add_argument("--resamples", type=int, default=1000, help="paired-bootstrap resamples for the differences")
    p.add_argument("--json", help="also write the full result as indented JSON here")
    p.add_argument("--markdown", help="also write the table as Markdown here")
    return p


def test_sets(args: argparse.Namespace) -> dict[str, Any]:
    """Name -> file spec, from the recipe and ``--test``, filtered by ``--only`` (unknown names are an error)."""
    from nlgmetrics.metaeval import InputError

    sets: dict[str, Any] = {}
    if args.recipe:
        from nlgmetrics.nli.training import NLITrainConfig

        sets.update(NLITrainConfig.from_yaml(args.recipe).test_files)
    for item in args.test:
        name, sep, path = item.partition("=")
        if not sep or not name or not path:
            raise InputError(f"--test takes NAME=PATH, got {item!r}")
        sets[name] = path
    if args.only:
        keep = [n.strip() for n in args.only.split(",") if n.strip()]
        missing = [n for n in keep if n not in sets]
        if missing:
            raise InputError(f"--only names unknown test sets {', '.join(missing)}; known: {', '.join(sets)}")
        sets = {n: sets[n] for n in keep}
    if not sets:
        raise InputError("no test sets: give --recipe with test_files or --test NAME=PATH")
    return sets


def paired_accuracy_difference(
    correct_a: np.ndarray, correct_b: np.ndarray, resamples: int = 1000, seed: int = 0
) -> dict[str, float]:
    """Accuracy of B minus A over the same row resamples: the difference, its 95% interval, and the share of
    resamples in which B is not better (the toolkit's verdict convention)."""
    a, b = np.asarray(correct_a, float), np.asarray(correct_b, float)
    if len(a) != len(b) or not len(a):
        raise ValueError(f"need equal, non-empty lengths; got {len(a)} and {len(b)}")
    from nlgmetrics.metaeval.correlation import difference_interval

    rng = np.random.default_rng(seed)
    gap = b - a
    interval = difference_interval(
        np.array([gap[rng.integers(0, len(gap), len(gap))].mean() for _ in range(resamples)])
    )
    low, high = interval["ci95"]
    return {"difference": float(gap.mean()), "low": low, "high": high, "not_better": interval["share_a_not_better"]}


def run(args: argparse.Namespace) -> dict:
    from nlgmetrics.machine import machine
    from nlgmetrics.metaeval import InputError
    from nlgmetrics.modelroles.precision import forward_precision
    from nlgmetrics.nli import load_nli
    from nlgmetrics.nli.model import unload_nli
    from nlgmetrics.nli.training import file_label, nli_report, read_nli_file

    models = [m.strip() for m in args.nli_model.split(",") if m.strip()]
    if not models:
        raise InputError("--nli-model names no model")
    if args.resamples < 1:
        raise InputError("--resamples must be >= 1")
    sets = test_sets(args)
    rows = {name: read_nli_file(spec) for name, spec in sets.items()}
    result: dict[str, Any] = {
        "command": "nlgmetrics-evaluate " + " ".join(sys.argv[1:]) if sys.argv[1:2] == [NAME] else None,
        "machine": machine(),
        "precision": args.precision,
        "models": [],
        "sets": {name: {"file": file_label(spec), "n": len(rows[name])} for name, spec in sets.items()},
    }
    correct: dict[str, dict[str, np.ndarray]] = {}
    for spec in models:
        started = time.perf_counter()
        nli = load_nli(spec, None if args.device == "auto" else args.device)
        entry: dict[str, Any] = {"model": spec, "hash": nli.hash, "sets": {}}
        correct[spec] = {}
        for name, test in rows.items():
            with forward_precision(nli.device, args.precision):
                probs = nli.predict_proba(
                    [r["premise"] for r in test],
                    [r["hypothesis"] for r in test],
                    batch_size=args.batch_size,
                    progress=True,
                    desc=f"{spec} {name}",
                )
            labels = [r["label"] for r in test]
            entry["sets"][name] = nli_report(probs, labels)
            correct[spec][name] = probs.argmax(1) == np.asarray(labels)
        entry["seconds"] = round(time.perf_counter() - started, 1)
        unload_nli(nli)
        result["models"].append(entry)
    first = models[0]
    for entry in result["models"][1:]:
        entry["versus_first"] = {
            name: paired_accuracy_difference(correct[first][name], correct[entry["model"]][name], args.resamples)
            for name in rows
        }
    from nlgmetrics.cli.common import write_report

    write_report(result, args.json, args.markdown, markdown_table)
    return result


def groups(names: list[str]) -> dict[str, list[str]]:
    """Sets sharing a name prefix before '_' (``xnli_de``, ``xnli_fr``, ...), where three or more do: their
    unweighted mean is one more row of the table."""
    by_prefix: dict[str, list[str]] = {}
    for name in names:
        prefix, sep, _ = name.partition("_")
        if sep:
            by_prefix.setdefault(prefix, []).append(name)
    return {prefix: members for prefix, members in by_prefix.items() if len(members) >= 3}


def markdown_table(result: dict) -> str:
    """One row per test set, one accuracy column per model, then each later model's difference to the first."""
    models = result["models"]
    names = list(result["sets"])
    header = ["test set", "n"] + [m["model"] for m in models]
    header += [f"{m['model']} - {models[0]['model']} [95% CI], not better" for m in models[1:]]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]

    def accuracy(model: dict, members: list[str]) -> float:
        return float(np.mean([model["sets"][s]["accuracy"] for s in members]))

    def row(label: str, n: str, members: list[str]) -> str:
        cells = [label, n] + [f"{accuracy(m, members):.3f}" for m in models]
        for m in models[1:]:
            if len(members) == 1:
                d = m["versus_first"][members[0]]
                cells.append(f"{d['difference']:+.3f} [{d['low']:+.3f}, {d['high']:+.3f}], {d['not_better']:.1%}")
            else:
                cells.append(f"{accuracy(m, members) - accuracy(models[0], members):+.3f}")
        return "| " + " | ".join(cells) + " |"

    for name in names:
        lines.append(row(name, str(result["sets"][name]["n"]), [name]))
    for prefix, members in groups(names).items():
        lines.append(row(f"mean of the {len(members)} {prefix} sets", "", members))
    seconds = ", ".join(f"{m['model']} {m['seconds']:.0f} s" for m in models)
    precision = result.get("precision", "float32")
    return "\n".join(lines) + f"\n\nScoring time (load and every set, {precision}): {seconds}.\n"
