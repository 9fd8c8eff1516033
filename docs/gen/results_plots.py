"""The results pages' figures, drawn from the result files at build time and returned as PNG bytes.

Why bytes and not files: the figures are build products. The docs build adds them to the site beside the page
that shows them (``docs/gen/hooks.py``), so they are never committed and never stale; ``results_pages.py --out``
writes them next to the rendered pages for a look without MkDocs.

Every figure uses matplotlib's object API (no pyplot state), so drawing in the MkDocs process leaks nothing.
"""

from __future__ import annotations

import io
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

VERDICT_COLOURS = {"pass": "#4caf50", "FAIL": "#e53935", "too few": "#bdbdbd", "n/a": "#ffffff", "not run": "#fff3cd"}


def _figure(width: float, height: float) -> Any:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(width, height), dpi=100)
    FigureCanvasAgg(figure)
    return figure


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def from_path(draw: Callable[[Path], Any]) -> bytes:
    """The PNG a function writes to a path it is given (the benchmarks' own plot functions), as bytes."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "figure.png"
        draw(path)
        return path.read_bytes()


def forest(rows: Sequence[tuple[str, float, Sequence[float] | None]], title: str, xlabel: str) -> bytes:
    """Differences with their 95% intervals, one line per row, zero marked: which rows are reliably above the
    reference and which only look so.

    Args:
        rows: (label, difference, [low, high] or None), drawn top to bottom in the given order.
        title: the figure's title.
        xlabel: what the difference is.
    """
    figure = _figure(8.5, 0.9 + 0.34 * len(rows))
    axes = figure.add_subplot(1, 1, 1)
    y = np.arange(len(rows))[::-1]
    for position, (_, difference, bounds) in zip(y, rows):
        colour = "#1e88e5"
        if bounds is not None:
            low, high = bounds
            colour = "#2e7d32" if low > 0 else "#c62828" if high < 0 else "#1e88e5"
            axes.plot([low, high], [position, position], color=colour, linewidth=2)
        axes.plot([difference], [position], "o", color=colour)
    axes.axvline(0.0, color="grey", linewidth=1, linestyle="--")
    axes.set_yticks(y, [label for label, _, _ in rows], fontsize=8)
    axes.set_xlabel(xlabel)
    axes.set_title(title, fontsize=10)
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    return _png(figure)


def verdict_grid(
    rows: Sequence[str], columns: Sequence[str], verdicts: Mapping[tuple[str, str], str], title: str
) -> bytes:
    """A metrics x tests grid coloured by verdict (pass, FAIL, too few, n/a, not run): a wide pass/fail table read
    at a glance, one metric per line so its failures line up.

    Args:
        rows: test names (drawn as the columns, left to right).
        columns: metric labels (drawn as the lines, top to bottom).
        verdicts: (test, metric) -> one of ``VERDICT_COLOURS``' keys; missing cells are "n/a".
        title: the figure's title.
    """
    from matplotlib.colors import ListedColormap

    names = list(VERDICT_COLOURS)
    codes = np.array([[names.index(verdicts.get((test, metric), "n/a")) for test in rows] for metric in columns])
    label_width = 0.065 * max(len(c) for c in columns) + 0.3
    width, height = label_width + 0.3 * len(rows) + 0.3, 2.55 + 0.27 * len(columns)
    figure = _figure(width, height)
    axes = figure.add_axes((label_width / width, 1.7 / height, 0.3 * len(rows) / width, 0.27 * len(columns) / height))
    axes.imshow(codes, cmap=ListedColormap(list(VERDICT_COLOURS.values())), vmin=0, vmax=len(names) - 1, aspect="auto")
    axes.set_xticks(range(len(rows)), rows, rotation=60, ha="right", rotation_mode="anchor", fontsize=8)
    axes.set_yticks(range(len(columns)), columns, fontsize=8)
    axes.set_xticks(np.arange(len(rows) + 1) - 0.5, minor=True)
    axes.set_yticks(np.arange(len(columns) + 1) - 0.5, minor=True)
    axes.grid(which="minor", color="#9e9e9e", linewidth=0.5)
    axes.tick_params(which="minor", length=0)
    handles = [_patch(colour, name) for name, colour in VERDICT_COLOURS.items()]
    axes.legend(
        handles=handles, loc="lower left", bbox_to_anchor=(0.0, 1.01), ncol=len(handles), fontsize=8, frameon=False
    )
    figure.suptitle(title, fontsize=10, y=1 - 0.12 / height, va="top")
    return _png(figure)


def _patch(colour: str, label: str) -> Any:
    from matplotlib.patches import Patch

    return Patch(facecolor=colour, edgecolor="#9e9e9e", label=label)


def relative_curve(mean: Sequence[float]) -> np.ndarray:
    """A curve divided by its gold point's magnitude (gold = 1), so metrics on different scales share an axis (the
    normalisation of ``nlgmetrics.stress.report.plot_test``)."""
    values = np.asarray(mean, dtype=float)
    scale = abs(values[0]) if abs(values[0]) > 1e-12 else 1.0
    return 1.0 + (values - values[0]) / scale


def stress_curves(report: Mapping[str, Any], tests: Sequence[str], title: str) -> bytes:
    """Small multiples: for each named test, every metric's mean score against the noise ratio (gold = 1), the
    metrics that fail it drawn bold and solid. Shows *how* a metric fails: flat, rising, or rising then falling.

    Args:
        report: a blind-spot ``report.json``.
        tests: the tests to draw (applicable ones).
        title: the figure's title.
    """
    metrics = list(report["metrics"])
    colours = {m: f"C{i % 10}" for i, m in enumerate(metrics)}
    columns = min(3, len(tests))
    rows = -(-len(tests) // columns)
    legend_lines = -(-len(metrics) // 3)
    height = 2.5 * rows + 0.7 + 0.25 * legend_lines
    figure = _figure(3.0 * columns + 0.3, height)
    for index, name in enumerate(tests):
        test = report["tests"][name]
        axes = figure.add_subplot(rows, columns, index + 1)
        x = np.asarray(test["noise_ratio"], dtype=float)
        for metric, curve in test["metrics"].items():
            failed = curve.get("passed") is False
            axes.plot(
                x,
                relative_curve(curve["mean"]),
                marker="o",
                markersize=3,
                color=colours.get(metric),
                linewidth=2.4 if failed else 0.9,
                linestyle="-" if failed else "--",
                alpha=1.0 if failed else 0.55,
            )
        failing = [m for m, c in test["metrics"].items() if c.get("passed") is False]
        axes.set_title(f"{name}\nfails: {', '.join(failing)}", fontsize=9)
        axes.tick_params(labelsize=7)
        axes.grid(alpha=0.3)
    handles = [_line(colours[m], m) for m in metrics]
    figure.legend(handles=handles, loc="lower center", ncol=min(len(metrics), 3), fontsize=8, frameon=False)
    figure.suptitle(title, fontsize=10, y=1 - 0.08 / height, va="top")
    figure.subplots_adjust(
        left=0.08,
        right=0.98,
        top=1 - 0.75 / height,
        bottom=(0.55 + 0.25 * legend_lines) / height,
        hspace=0.75,
        wspace=0.32,
    )
    return _png(figure)


def _line(colour: str, label: str) -> Any:
    from matplotlib.lines import Line2D

    return Line2D([0], [0], color=colour, linewidth=2, label=label)


def scatter(
    points: Sequence[tuple[str, float, float]],
    highlight: Sequence[str],
    title: str,
    xlabel: str,
    ylabel: str,
    goal: float | None = None,
) -> bytes:
    """Labelled points (e.g. pooling strategies: correlation against adversarial accuracy), some highlighted.

    Args:
        points: (label, x, y); an empty label draws an unlabelled point.
        highlight: labels drawn in colour and bold (the chosen and the paper's).
        title: the figure's title.
        xlabel: the x axis.
        ylabel: the y axis.
        goal: y of a dashed line (a floor the choice had to meet).
    """
    figure = _figure(7.5, 5.0)
    axes = figure.add_subplot(1, 1, 1)
    for label, x, y in points:
        marked = label in highlight
        axes.plot(
            [x],
            [y],
            "o",
            color="#e53935" if marked else "#1e88e5",
            markersize=7 if marked else 4,
            alpha=1.0 if label else 0.5,
        )
        if label:
            axes.annotate(
                label,
                (x, y),
                textcoords="offset points",
                xytext=(4, 3),
                fontsize=8,
                fontweight="bold" if marked else "normal",
            )
    if goal is not None:
        axes.axhline(goal, color="grey", linestyle="--", linewidth=1)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    figure.tight_layout()
    return _png(figure)


def lines(
    series: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    title: str,
    xlabel: str,
    ylabel: str,
    markers: Mapping[str, float] | None = None,
) -> bytes:
    """Several y-against-x series on one axis, with optional vertical markers (e.g. a chosen weight).

    Args:
        series: label -> (x values, y values).
        title: the figure's title.
        xlabel: the x axis.
        ylabel: the y axis.
        markers: label -> x of a dotted vertical line.
    """
    figure = _figure(7.0, 4.2)
    axes = figure.add_subplot(1, 1, 1)
    for label, (x, y) in series.items():
        axes.plot(list(x), list(y), marker="o", markersize=3, label=label)
    for label, x in (markers or {}).items():
        axes.axvline(x, color="grey", linestyle=":", linewidth=1)
        axes.annotate(label, (x, axes.get_ylim()[1]), textcoords="offset points", xytext=(3, -12), fontsize=8)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    return _png(figure)


def bars(values: Mapping[str, float], title: str, xlabel: str, reference: float | None = None) -> bytes:
    """Horizontal bars (e.g. time relative to the peer measured in the same run), a reference line at ``reference``.

    Args:
        values: label -> value, drawn top to bottom.
        title: the figure's title.
        xlabel: what the value is.
        reference: x of a dashed line (1.0 for ratios).
    """
    figure = _figure(8.0, 0.9 + 0.32 * len(values))
    axes = figure.add_subplot(1, 1, 1)
    y = np.arange(len(values))[::-1]
    axes.barh(y, list(values.values()), color="#1e88e5")
    if reference is not None:
        axes.axvline(reference, color="grey", linestyle="--", linewidth=1)
    axes.set_yticks(y, list(values), fontsize=8)
    axes.set_xlabel(xlabel)
    axes.set_title(title, fontsize=10)
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    return _png(figure)


def histogram(counts: Mapping[str, int], title: str, xlabel: str) -> bytes:
    """Bars of counts per integer value (e.g. synthetic scores), in the values' numeric order."""
    keys = sorted(counts, key=float)
    figure = _figure(7.0, 3.6)
    axes = figure.add_subplot(1, 1, 1)
    axes.bar([float(k) for k in keys], [counts[k] for k in keys], color="#1e88e5")
    axes.set_xlabel(xlabel)
    axes.set_ylabel("rows")
    axes.set_title(title, fontsize=10)
    axes.grid(axis="y", alpha=0.3)
    figure.tight_layout()
    return _png(figure)
