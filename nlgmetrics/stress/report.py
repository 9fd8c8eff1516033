"""Human-readable views of a blind-spot report: a Markdown pass/fail table and one curve plot per test.

Plots follow Figure 4 of the paper: x = noise ratio, y = score, the gold point at x = 0, one line per metric,
failing metrics drawn bold. Each curve is divided by its metric's |gold score| (gold = 1) so metrics on
different scales share one axis; the shaded band is one standard deviation over seeds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from nlgmetrics.metaeval import atomic_write


def passed_of_judged(summary: Mapping[str, int]) -> str:
    """``passed/judged`` for one metric's report summary: tests with too few applied samples are not judged."""
    return f"{summary['passed']}/{summary['passed'] + summary['failed']}"


def _judged(test: Mapping[str, Any]) -> bool:
    # reports written before judge() existed judged every applicable test
    return bool(test.get("judged", test["applicable"]))


def _verdict(passed: bool | None) -> str:
    # judge() sets None for a test on too few samples
    return "too few" if passed is None else "pass" if passed else "**FAIL**"


def markdown_table(report: Mapping[str, Any]) -> str:
    """Tests x metrics table of pass / FAIL / too few / n/a, with how many samples each test applied to.

    The set-up (which text is gold, which the reference) heads the table when the report records it, since
    the same test can pass or fail depending on it; tests the suite cannot run offline get a row and a reason
    below the table, so they are never mistaken for forgotten or passed.
    """
    metrics = list(report["metrics"])
    header = ["test", "family", "applied", "noise ratio", *metrics]
    lines = []
    setup = report.get("setup")
    if setup:
        lines += ["Set-up: " + "; ".join(f"{key} = {value}" for key, value in setup.items()), ""]
    lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name, test in report["tests"].items():
        n = report["protocol"]["n_samples"]
        if test["applicable"]:
            ratios = test["noise_ratio"][1:]
            span = f"{min(ratios):.2f}-{max(ratios):.2f}" if len(ratios) > 1 else f"{ratios[0]:.2f}"
            cells = [_verdict(test["passed"][m]) for m in metrics]
        else:
            span, cells = "-", ["n/a"] * len(metrics)
        lines.append("| " + " | ".join([name, test["family"], f"{test['n_applied']}/{n}", span, *cells]) + " |")
    unavailable = dict(report.get("unavailable") or {})
    for name, entry in unavailable.items():
        lines.append("| " + " | ".join([name, entry["family"], "-", "-", *["separate"] * len(metrics)]) + " |")
    totals = [passed_of_judged(report["summary"][m]) for m in metrics]
    lines.append("| " + " | ".join(["**passed**", "", "", "", *totals]) + " |")
    too_few = [name for name, test in report["tests"].items() if test["applicable"] and not _judged(test)]
    if too_few or unavailable:
        lines.append("")
    if too_few:
        lines.append(
            f"Too few: applied to fewer than {report['protocol'].get('min_applied')} samples, so the curve "
            "is in report.json and plots/ but not counted: " + ", ".join(f"`{n}`" for n in too_few) + "."
        )
    if unavailable:
        lines += [f"Run separately: `{name}`: {entry['reason']}." for name, entry in unavailable.items()]
    return "\n".join(lines) + "\n"


def curve_table(report: Mapping[str, Any], test: str, metrics: list[str] | None = None, digits: int = 4) -> str:
    """Mean score per noise level of one test, one row per metric, as Markdown.

    The pass/fail table says *that* a metric failed; this says *how* (e.g. BERTScore precision flat while recall
    falls under truncation), with the numbers exactly as the report holds them, rounded to ``digits``.
    """
    entry = report["tests"][test]
    if not entry["applicable"]:
        raise ValueError(f"test {test!r} was not applicable: no curve")
    names = list(entry["metrics"]) if metrics is None else metrics
    unknown = [m for m in names if m not in entry["metrics"]]
    if unknown:
        raise ValueError(f"test {test!r} has no curve for {', '.join(unknown)}")
    header = [
        "metric",
        *(f"{level:g} (noise {ratio:.3f})" for level, ratio in zip(entry["levels"], entry["noise_ratio"])),
        "passed",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in names:
        curve = entry["metrics"][name]
        lines.append(
            "| " + " | ".join([name, *(f"{m:.{digits}f}" for m in curve["mean"]), _verdict(curve["passed"])]) + " |"
        )
    return "\n".join(lines) + "\n"


def _normalised(mean: list[float], std: list[float]) -> tuple[np.ndarray, np.ndarray]:
    mean_a, std_a = np.asarray(mean, dtype=float), np.asarray(std, dtype=float)
    scale = abs(mean_a[0]) if abs(mean_a[0]) > 1e-12 else 1.0
    return 1.0 + (mean_a - mean_a[0]) / scale, std_a / scale


def plot_test(report: Mapping[str, Any], name: str, path: str | Path) -> Path:
    """One PNG: normalised score vs noise ratio for every metric on test ``name``."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    test = report["tests"][name]
    if not test["applicable"]:
        raise ValueError(f"test {name!r} was not applicable: nothing to plot")
    figure = Figure(figsize=(5.5, 4.0), dpi=110)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    x = np.asarray(test["noise_ratio"], dtype=float)
    judged = _judged(test)
    for metric, result in test["metrics"].items():
        y, band = _normalised(result["mean"], result["std"])
        failed = judged and not result["passed"]
        verdict = ("FAIL" if failed else "pass") if judged else "not judged"
        (line,) = axes.plot(
            x,
            y,
            marker="o",
            markersize=3,
            linewidth=2.6 if failed else 1.0,
            alpha=1.0 if failed else 0.75,
            linestyle="-" if failed else "--",
            label=f"{metric} ({verdict})",
        )
        axes.fill_between(x, y - band, y + band, color=line.get_color(), alpha=0.15, linewidth=0)
    axes.set_xlabel("noise ratio" + (" (halved: swap/switch)" if test["halved_noise_ratio"] else ""))
    axes.set_ylabel("score relative to gold (gold = 1)")
    axes.set_title(
        f"{name} ({test['n_applied']}/{report['protocol']['n_samples']} samples"
        + ("" if judged else ": too few, not judged")
        + ")"
    )
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path)
    return path


def write_report(report: Mapping[str, Any], out_dir: str | Path, plots: bool = True) -> dict[str, Path]:
    """Write ``report.json``, ``report.md`` and ``plots/<test>.png`` (applicable tests) under ``out_dir``.

    ``plots=False`` skips the PNGs (24 of them took ~5 s of a two-item run's ~16 s here); a ``plots/`` folder an
    earlier run wrote is left as it was, not deleted (its legends keep that run's verdicts: re-judging in place
    with ``plots=False`` leaves them stale, which the CLI help says).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    written = {"json": out_dir / "report.json", "markdown": out_dir / "report.md"}
    with atomic_write(written["json"]) as handle:
        handle.write(json.dumps(report, indent=2, sort_keys=False) + "\n")
    with atomic_write(written["markdown"]) as handle:
        handle.write(markdown_table(report))
    for name, test in report["tests"].items():
        if plots and test["applicable"]:
            safe = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
            written[f"plot:{name}"] = plot_test(report, name, out_dir / "plots" / f"{safe}.png")
    return written
