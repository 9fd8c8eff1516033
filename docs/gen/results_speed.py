"""Speed: every timing benchmark, each against the peer it measured in the same run, and each metric's CPU speed.

Why always a peer: this machine's two cores are shared, so an absolute number from one session says little about
another; a ratio to something measured in the same session, in turns, does. Every section names its peer and the
column that holds the ratio.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from results_markdown import MAX_VISIBLE_COLUMNS, Lines, Page, bullets, collapsible, generic, plain, table
from results_plots import bars, from_path
from results_store import ResultFiles


@dataclass(frozen=True)
class Section:
    """One timing result file on the speed page.

    Args:
        stem: the file under bench/results.
        title: the section heading.
        peer: what the ratio column compares with (the peer measured in the same run).
        script: the benchmark module that writes the file (``python -m <script>`` reruns it), or the file of a
            removed one (``REMOVED``).
        columns: the row keys of the table shown (what was measured, the throughput and the ratio); every other
            column and setting is one click away.
        brief: where ``columns`` are more than a readable table holds (``MAX_VISIBLE_COLUMNS``), the ones shown
            open; ``columns`` are then shown in the collapsed section.
        rows: which rows the open table shows (all when None).
    """

    stem: str
    title: str
    peer: str
    script: str
    columns: tuple[str, ...] = ()
    brief: tuple[str, ...] = ()
    rows: Callable[[Mapping[str, Any]], bool] | None = None


# one-off benchmarks deleted after their runs (their result files stay): the commit each is in git history at
REMOVED = {
    "bench/bench_menli_granularity.py": "6764470",
    "bench/bench_sescore_devcheck.py": "6764470",
    "bench/bench_mars_length.py": "426b037",
    "bench/bench_mkl_mode.py": "6c42b7a",
}


# the columns shared by the encoder sections and by the MARS length sections (which add their two ratios)
ENCODER_COLUMNS = (
    "encoder",
    "params_m",
    "segments",
    "seconds",
    "segments_per_s",
    "time_ratio_to_minilm",
    "peak_rss_mb",
    "status",
)
MARS_LENGTH_COLUMNS = (
    "set",
    "variant",
    "mean_words",
    "references",
    "finished",
    "wall_s_per_reference",
    "cpu_s_per_reference",
)
MARS_LENGTH_BRIEF = tuple(c for c in MARS_LENGTH_COLUMNS if c != "references")  # two ratios follow: 8 in all

# the roofline result of each CPU class (its speed-page section and its rows of the precision table)
ROOFLINE_MACHINES = (
    ("roofline", "AMD EPYC, AVX2 only (bfloat16 emulated)"),
    ("roofline_amx", "Intel Xeon with AMX and AVX512-BF16"),
    ("roofline_avx512bf16", "AMD EPYC with AVX512-BF16, no AMX"),
)

SECTIONS = [
    Section(
        "peers",
        "BERTScore and MENLI against other implementations",
        "bert-score and torchmetrics for BERTScore, the original one-pair-at-a-time loop for MENLI, each in a "
        "fresh process of the same session; `time_ratio_to_ours` > 1 means the peer is slower.",
        "bench.bench_peers",
        (
            "metric",
            "dataset",
            "peer",
            "segments",
            "seconds",
            "segments_per_s",
            "time_ratio_to_ours",
            "peak_rss_mb",
            "rss_ratio_to_ours",
            "max_abs_diff",
        ),
        ("metric", "dataset", "peer", "segments_per_s", "time_ratio_to_ours", "rss_ratio_to_ours", "max_abs_diff"),
        lambda row: not str(row.get("peer", "")).startswith("check:"),
    ),
    Section(
        "scaling",
        "Throughput and memory as the input grows",
        "the same metric at 1k segments; `segments_per_s` should stay flat and `mb_per_1k_segments` fall.",
        "bench.bench_scaling",
        ("metric", "texts", "segments", "seconds", "segments_per_s", "peak_rss_mb", "mb_per_1k_segments", "status"),
    ),
    Section(
        "menli_mix_cost",
        "MENLI and its mix against BERTScore",
        "BERTScore-MiniLM on the same segments; `time_ratio_to_bertscore`.",
        "bench.bench_menli_mix",
        (
            "dataset",
            "metric",
            "segments",
            "seconds",
            "segments_per_s",
            "time_ratio_to_bertscore",
            "peak_rss_mb",
            "rss_ratio_to_bertscore",
            "status",
        ),
        (
            "dataset",
            "metric",
            "segments",
            "segments_per_s",
            "time_ratio_to_bertscore",
            "peak_rss_mb",
            "rss_ratio_to_bertscore",
            "status",
        ),
    ),
    Section(
        "nli",
        "NLI scoring against the bare model forward",
        "the model's forward pass on pre-tokenised pairs; `ratio_to_bare`.",
        "bench.bench_nli",
        ("what", "items", "unit", "seconds", "per_second", "ratio_to_bare"),
    ),
    Section(
        "nli_models",
        "The NLI models against nli-minilm",
        "packaged:nli-minilm; `time_ratio_to_first`.",
        "bench.bench_nli --compare",
        ("model", "params_m", "pairs", "seconds", "pairs_per_s", "time_ratio_to_first"),
    ),
    Section(
        "menli_granularity",
        "MENLI at sentence granularity against whole texts",
        "text granularity on the same paragraphs; `time_ratio_to_text`.",
        "bench/bench_menli_granularity.py",
        (
            "granularity",
            "segments",
            "nli_pairs",
            "seconds",
            "segments_per_s",
            "time_ratio_to_text",
            "spearman_to_sentence",
        ),
    ),
    Section(
        "sescore_default",
        "SEScore (default `mpnet-v2`) against its bare encoder",
        "the encoder's forward pass on the same distinct texts; `ratio_to_bare`.",
        "bench.bench_sescore",
        ("what", "items", "wall_seconds", "cpu_seconds", "per_second", "ratio_to_bare"),
    ),
    Section(
        "sescore_minilm_v2",
        "SEScore `minilm-v2` against its bare encoder",
        "the encoder's forward pass on the same distinct texts; `ratio_to_bare`.",
        "bench.bench_sescore",
        ("what", "items", "wall_seconds", "cpu_seconds", "per_second", "ratio_to_bare"),
    ),
    Section(
        "sescore",
        "SEScore v1 (`minilm-news`) against its bare encoder",
        "the encoder's forward pass on the same distinct texts; `ratio_to_bare`.",
        "bench.bench_sescore",
        ("what", "items", "wall_seconds", "cpu_seconds", "per_second", "ratio_to_bare"),
    ),
    Section(
        "sescore_devcheck",
        "SEScore training's dev check: distinct texts against pair texts",
        "the earlier check that encoded both texts of every pair; `ratio_cpu`.",
        "bench/bench_sescore_devcheck.py",
        ("check", "tau_like", "wall_s", "cpu_s", "texts_encoded", "ratio_cpu"),
    ),
    Section(
        "precision",
        "bfloat16 against float32",
        "float32 in the same run; `cpu_ratio_to_float32`.",
        "bench.bench_precision",
        (
            "metric",
            "precision",
            "cpu_seconds",
            "wall_seconds",
            "per_cpu_second",
            "cpu_ratio_to_float32",
            "max_abs_diff",
            "kendall_vs_float32",
        ),
    ),
    *(
        Section(
            stem,
            f"Utilization and the fast paths: {machine}",
            "float32 in the same run (`ratio_to_float32`) and the bert-score package (`ratio_to_peer`); below 1 is "
            "faster. Utilization is against the peak matrix-product rate the same run measured in that precision.",
            "bench.bench_roofline",
            (
                "metric",
                "precision",
                "segments_per_s",
                "ratio_to_float32",
                "ratio_to_peer",
                "utilization",
                "padded_per_real",
                "kendall_vs_float32",
                "max_abs_diff",
                "devmix_difference",
                "devmix_ci95",
                "offered",
                "contract",
            ),
            (
                "metric",
                "precision",
                "segments_per_s",
                "ratio_to_float32",
                "ratio_to_peer",
                "utilization",
                "kendall_vs_float32",
                "devmix_difference",
            ),
        )
        for stem, machine in ROOFLINE_MACHINES
    ),
    Section(
        "roofline_avx512bf16_profile",
        "Where bfloat16 scoring time goes: AMD EPYC with AVX512-BF16",
        "the call's own wall time; `share` of it per operator kind.",
        "bench.bench_roofline --profile bfloat16 --metrics menli,sescore --name roofline_avx512bf16",
        ("metric", "precision", "kind", "seconds", "share", "wall_seconds"),
    ),
    Section(
        "encoders",
        "Encoders against MiniLM (2 threads)",
        "packaged:minilm; `time_ratio_to_minilm`.",
        "bench.bench_encoders",
        ENCODER_COLUMNS,
    ),
    Section(
        "encoders_1thread",
        "Encoders against MiniLM (1 thread)",
        "packaged:minilm; `time_ratio_to_minilm`.",
        "bench.bench_encoders --threads 1",
        ENCODER_COLUMNS,
    ),
    Section(
        "causal_lm",
        "Causal LMs against SmolLM2",
        "packaged:smollm2; `time_ratio_to_smollm2`.",
        "bench.bench_causal_lm",
        (
            "model",
            "params_m",
            "texts",
            "seconds",
            "texts_per_s",
            "tokens_per_s",
            "time_ratio_to_smollm2",
            "peak_rss_mb",
        ),
    ),
    Section(
        "mars",
        "MARS augmentation: self-planning against no planning",
        "the no-planning ablation on the same references; `wall_ratio_to_peer`, `cpu_ratio_to_peer`.",
        "bench.bench_mars",
        (
            "what",
            "references",
            "wall_s_per_reference",
            "cpu_s_per_reference",
            "wall_ratio_to_peer",
            "cpu_ratio_to_peer",
            "meets_target",
        ),
    ),
    Section(
        "mars_length",
        "MARS augmentation over reference length",
        "the earlier implementation (`old`) on the same references; `wall_ratio_to_old`.",
        "bench/bench_mars_length.py",
        MARS_LENGTH_COLUMNS + ("wall_ratio_to_old", "cpu_ratio_to_old"),
        MARS_LENGTH_BRIEF + ("wall_ratio_to_old", "cpu_ratio_to_old"),
    ),
    Section(
        "mars_length_1thread",
        "MARS augmentation over reference length (1 thread)",
        "the earlier implementation on the same references; `wall_ratio_to_old`.",
        "bench/bench_mars_length.py",
        MARS_LENGTH_COLUMNS + ("wall_ratio_to_old", "cpu_ratio_to_old"),
        MARS_LENGTH_BRIEF + ("wall_ratio_to_old", "cpu_ratio_to_old"),
    ),
    Section(
        "mars_length_context_1thread",
        "MARS augmentation with a long context (1 thread)",
        "the earlier implementation on the same references; `wall_ratio_to_old`.",
        "bench/bench_mars_length.py",
        MARS_LENGTH_COLUMNS + ("wall_ratio_to_old", "cpu_ratio_to_old"),
        MARS_LENGTH_BRIEF + ("wall_ratio_to_old", "cpu_ratio_to_old"),
    ),
    Section(
        "mars_length_loaded",
        "MARS augmentation over reference length, machine loaded",
        "the earlier implementation on the same references; `wall_ratio_to_old`.",
        "bench/bench_mars_length.py",
        MARS_LENGTH_COLUMNS + ("wall_ratio_to_old", "cpu_ratio_to_old"),
        MARS_LENGTH_BRIEF + ("wall_ratio_to_old", "cpu_ratio_to_old"),
    ),
    Section(
        "mars_length_window",
        "MARS augmentation with the masking window",
        "the unbounded masking (`peer`) on the same references; `wall_ratio_to_peer`.",
        "bench/bench_mars_length.py",
        MARS_LENGTH_COLUMNS + ("wall_ratio_to_peer", "cpu_ratio_to_peer"),
        MARS_LENGTH_BRIEF + ("wall_ratio_to_peer", "cpu_ratio_to_peer"),
    ),
    *(
        Section(
            f"mars_window_choice_w{words}",
            f"MARS window {words} words",
            "the shipped config; `wall_ratio_to_peer`.",
            "bench/bench_mars_length.py",
            MARS_LENGTH_COLUMNS + ("wall_ratio_to_peer", "cpu_ratio_to_peer"),
            MARS_LENGTH_BRIEF + ("wall_ratio_to_peer", "cpu_ratio_to_peer"),
        )
        for words in (40, 48, 64)
    ),
    Section(
        "synthesis",
        "SEScore error synthesis against its model calls",
        "the model calls alone (the floor); `ratio to floor`.",
        "bench.bench_synthesis",
        ("what", "seconds", "references/s", "rows/s", "ratio to floor"),
    ),
    Section(
        "stress_chrf",
        "The blind-spot suite against scoring alone",
        "scoring the same rows without the suite; `ratio_to_scoring`.",
        "bench.bench_stress",
        ("what", "segments", "tests", "texts_scored", "seconds", "ratio_to_scoring"),
    ),
    Section(
        "mkl_mode",
        "MKL's strict mode against its default",
        "the default mode in the same run; `time_ratio_to_default`.",
        "bench/bench_mkl_mode.py",
        (
            "mode",
            "metric",
            "items",
            "seconds",
            "time_ratio_to_default",
            "rows_changed_by_batch_size_1",
            "max_abs_change",
            "status",
        ),
    ),
    Section(
        "conversion",
        "Packaged models: first use against warm use",
        "the same call with a filled cache; `first_over_warm`.",
        "bench.bench_conversion",
        ("model", "first_use_s", "warm_use_s", "first_over_warm", "first_use_peak_rss_mb", "converted_mb", "status"),
    ),
    Section(
        "demo",
        "`make demo`: a fresh clone against a warm run",
        "the demo with the earlier default NLI model in the same session; `vs_peer`.",
        "bench.bench_demo",
        ("step", "seconds", "minutes", "vs_peer", "exit_code", "load_1m"),
    ),
]


def _rows(doc: Mapping[str, Any], **match: Any) -> list[dict[str, Any]]:
    return [r for r in doc.get("rows", []) if all(r.get(k) == v for k, v in match.items())]


def _per_second(value: float, unit: str) -> str:
    return f"{value:,.1f} {unit}/s" if value < 1000 else f"{value:,.0f} {unit}/s"


def _default_mode(metric: str) -> Callable[[ResultFiles], tuple[str, str] | None]:
    """From ``mkl_mode.json``: MENLI and BERTScore with their default models, measured together, in the MKL mode
    the toolkit sets on import (``mkl-strict``)."""

    def speed(files: ResultFiles) -> tuple[str, str] | None:
        doc = files.load("mkl_mode")
        found = doc and _rows(doc, mode="mkl-strict", metric=metric)
        return (_per_second(found[0]["items"] / found[0]["seconds"], "segments"), "mkl_mode") if found else None

    return speed


def _chrf(files: ResultFiles) -> tuple[str, str] | None:
    doc = files.load("stress_chrf")
    found = doc and _rows(doc, what="scoring only (chrf)")
    return (_per_second(found[0]["texts_scored"] / found[0]["seconds"], "texts"), "stress_chrf") if found else None


def _mix_row(metric: str) -> Callable[[ResultFiles], tuple[str, str] | None]:
    def speed(files: ResultFiles) -> tuple[str, str] | None:
        doc = files.load("menli_mix_cost")
        found = doc and _rows(doc, dataset="wmt", metric=metric)
        return (_per_second(found[0]["segments_per_s"], "segments"), "menli_mix_cost") if found else None

    return speed


def _sescore(files: ResultFiles) -> tuple[str, str] | None:
    from sescore.shipped import DEFAULT_NAME

    doc = files.load("sescore_default")
    if doc is None or not doc["model"].endswith(DEFAULT_NAME):
        return None
    found = [r for r in doc["rows"] if r["what"].startswith("sescore_scores")]
    return (_per_second(found[0]["items"] / found[0]["wall_seconds"], "segments"), "sescore_default") if found else None


def _lm_likelihood(files: ResultFiles) -> tuple[str, str] | None:
    from nlgmetrics.registry import metric_spec

    doc = files.load("causal_lm")
    found = doc and _rows(doc, model=metric_spec("lm-likelihood").make_options().causal_lm)
    return (_per_second(found[0]["texts_per_s"], "texts"), "causal_lm") if found else None


def _mars(files: ResultFiles) -> tuple[str, str] | None:
    doc = files.load("mars")
    found = doc and _rows(doc, what="MARS self-planning")
    return (f"{found[0]['wall_s_per_reference']:.1f} s per reference (augmentation)", "mars") if found else None


# metric -> its default setting's CPU speed on 2 threads, and the file it comes from
METRIC_SPEEDS: dict[str, Callable[[ResultFiles], tuple[str, str] | None]] = {
    "bertscore": _default_mode("bertscore"),
    "chrf": _chrf,
    "lm-likelihood": _lm_likelihood,
    "lm-ratio": _mix_row("lm-ratio"),
    "mars": _mars,
    "menli": _default_mode("menli"),
    "sescore": _sescore,
}


def metric_speed(files: ResultFiles, metric: str) -> tuple[str, str] | None:
    """(speed text, source stem) of a metric's default setting, or None when no benchmark measured it."""
    speed = METRIC_SPEEDS.get(metric)
    return speed(files) if speed else None


def _figure(page: Page, files: ResultFiles, stem: str) -> None:
    """The figure of a section whose numbers read better as a picture."""
    doc = files.load(stem)
    if stem == "peers":
        ratios = {
            f"{r['metric']}, {r['dataset']}: {r['peer']}": r["time_ratio_to_ours"]
            for r in doc["rows"]
            if r.get("time_ratio_to_ours") is not None and r["status"] == "ok" and "ours" not in r["peer"]
        }
        page.figure(
            "speed-peers",
            "time of each peer relative to ours (same run)",
            lambda: bars(
                ratios,
                "Peers' time relative to ours, same session (> 1: the peer is slower)",
                "time ratio to ours",
                reference=1.0,
            ),
        )
    elif stem == "scaling":
        from bench.bench_scaling import plot

        page.figure(
            "speed-scaling",
            "scoring time and peak memory against the number of segments",
            lambda: from_path(lambda path: plot(doc["rows"], path)),
        )
    elif stem.startswith("mars_length"):
        page.figure(
            f"speed-{stem.replace('_', '-')}",
            "MARS seconds per reference against reference length",
            lambda: from_path(lambda path: mars_length_plot(doc["rows"], path, doc.get("torch_threads", 2))),
        )


# the variants of the removed bench/bench_mars_length.py, as its figure labelled them
MARS_LENGTH_VARIANTS = {
    "config": "config as given (growing KV cache)",
    "unbounded": "config without the window (masking.window_words 0, the paper)",
    "dynamic": "config as given, old DynamicCache (torch.cat per step)",
}


def mars_length_plot(rows: list[dict], path: Path, threads: int) -> None:
    """s/reference against words per variant, as bench/bench_mars_length.py drew it: CPU seconds (solid; steady on
    a busy machine) and wall seconds (dashed; what the 2 s target is about). Runs stopped by the time box are drawn
    as open markers (lower bounds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from bench.harness import MARS_TARGET_S_PER_REFERENCE

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for variant, label in MARS_LENGTH_VARIANTS.items():
        mine = [r for r in rows if r["variant"] == variant and r["set"] == "wikitext"]
        if not mine:
            continue
        for key, style, what in (("cpu_s_per_reference", "o-", "CPU"), ("wall_s_per_reference", "s--", "wall")):
            done = [r for r in mine if r["finished"]]
            line = ax.plot([r["mean_words"] for r in done], [r[key] for r in done], style, label=f"{label}, {what}")[0]
            boxed = [r for r in mine if not r["finished"]]
            if boxed:
                ax.plot(
                    [r["mean_words"] for r in boxed],
                    [r[key] for r in boxed],
                    style[0],
                    mfc="none",
                    color=line.get_color(),
                    label=f"{label}, {what}: stopped by the time box",
                )
    ax.axhline(MARS_TARGET_S_PER_REFERENCE, color="grey", ls=":", label="target 2 s (wall, 2 cores)")
    ax.set_xlabel("reference words")
    ax.set_ylabel(f"s / reference ({threads} torch thread(s))")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax.set_title("MARS augmentation cost over reference length", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _anchor(stem: str) -> str:
    return stem.replace("_", "-")


def speeds_table(files: ResultFiles) -> Lines:
    """Every registered metric's default setting with its CPU speed and the section that measured it."""
    from nlgmetrics.registry import list_metrics

    titles = {section.stem: section.title for section in SECTIONS}
    rows = []
    for name in list_metrics():
        speed = metric_speed(files, name)
        if speed is None:
            rows.append({"metric": f"`{name}`", "speed": "not measured", "measured in": "-"})
            continue
        text, stem = speed
        where = f"[{titles[stem]}](#{_anchor(stem)})" if stem in titles else "-"
        rows.append({"metric": f"`{name}`", "speed": text, "measured in": where})
    return table(rows, headers={"metric": "metric (default setting)", "speed": "CPU speed (2 threads)"})


def _peers_verdict(files: ResultFiles) -> str:
    """One line: each other implementation's time relative to ours, over the data sets (from the peers file)."""
    doc = files.load("peers")
    if doc is None:
        return ""
    spans: dict[str, list[float]] = {}
    for row in doc.get("rows", []):
        peer = str(row.get("peer", ""))
        if (
            row.get("status") != "ok"
            or "ours" in peer
            or peer.startswith("check:")
            or row.get("time_ratio_to_ours") is None
        ):
            continue
        spans.setdefault(f"{row['metric']}: {peer}", []).append(row["time_ratio_to_ours"])
    if not spans:
        return ""
    parts = [
        f"{name} {min(values):.2f}x" if len(values) == 1 else f"{name} {min(values):.2f}x to {max(values):.2f}x"
        for name, values in spans.items()
    ]
    return (
        "**Verdict:** other implementations of the same models, timed in the same session, take this long "
        "relative to ours (above 1x: slower): " + "; ".join(parts) + "."
    )


def precision_choice(files: ResultFiles) -> list[str]:
    """The precision to score in per CPU class, from the roofline files: each fast path's speed-up over float32 on
    MENLI and SEScore (same run), its Kendall with float32 and whether the benchmark offered it."""
    rows = []
    for stem, label in ROOFLINE_MACHINES:
        doc = files.load(stem)
        if doc is None:
            continue
        for row in doc.get("rows", []):
            if row.get("metric") not in ("menli", "sescore") or row.get("precision") not in ("bfloat16", "int8"):
                continue
            if not row.get("ratio_to_float32"):
                continue
            rows.append(
                {
                    "CPU": f"[{label}](#{_anchor(stem)})",
                    "metric": row["metric"],
                    "precision": row["precision"],
                    "speed-up over float32": f"{1 / row['ratio_to_float32']:.2f}x",
                    "Kendall with float32": f"{row['kendall_vs_float32']:.4f}",
                    "offered": row.get("offered") or "not judged",
                }
            )
    if not rows:
        return []
    return [
        "## Which precision on which CPU",
        "",
        "`float32` is the default everywhere: exact and the same bits on every run. Where the CPU has bfloat16 units "
        "(AVX512-BF16 or AMX, as `lscpu` lists in its flags), `--precision bfloat16` is the fast path one flag away: "
        "scores close to float32's, not equal, and the signature says so. On a CPU without them bfloat16 is "
        "emulated and slower than float32; keep float32 there. int8 is offered only where its row says so.",
        "",
        *table(rows),
        "",
    ]


def render(files: ResultFiles) -> Page:
    """The speed page."""
    page = Page("results/speed.md")
    page.add(
        "# Speed",
        "",
        "Every timing benchmark under `bench/`, on a CPU machine with two cores shared with other work. An "
        "absolute number from one session says little about another, so each section names the **peer** it "
        "measured in the same run, in turns, and the column holding the **ratio** to it. The notes under each "
        "table are the benchmark's own; the machine, the settings and every other column are in the collapsed "
        "section under it, with the script that reruns it.",
        "",
    )
    speeds = speeds_table(files)
    if any("not measured" not in line for line in speeds[2:]):
        page.require_row("`sescore`", "metric (default setting)")
        page.add(
            "## Each metric's speed",
            "",
            "Each registered metric with its default setting; the sections below hold the peer each was measured "
            "against.",
            "",
            speeds,
            "",
        )
    page.add(*precision_choice(files))
    for section in [s for s in SECTIONS if files.path(s.stem).is_file()]:
        doc = files.load(section.stem)
        page.add(f"## {section.title} {{#{_anchor(section.stem)}}}", "", f"Peer: {section.peer}", "")
        if section.stem == "peers":
            page.add(_peers_verdict(files), "")
        _figure(page, files, section.stem)
        rows = doc.get("rows", [])
        columns = [c for c in section.columns if any(c in r for r in rows)]
        brief = (
            [c for c in section.brief if any(c in r for r in rows)] if len(columns) > MAX_VISIBLE_COLUMNS else columns
        )
        shown = [r for r in rows if section.rows is None or section.rows(r)]
        page.add(table(shown, brief), "", [plain(line) for line in bullets(doc.get("notes"))], "")
        written = (
            f"`{section.script}`, a script removed after its run (in git history at commit `{REMOVED[section.script]}`)"
            if section.script in REMOVED
            else f"`python -m {section.script}`"
        )
        body = [f"Source: `{files.display(section.stem)}`, written by {written}.", ""]
        if brief != columns or len(shown) != len(rows):
            body += ["Every row, in the section's columns:", "", *table(rows, columns), "", "The whole file:", ""]
        body += generic(doc)
        page.add(collapsible("every column, setting and note", [plain(line) for line in body]))
    return page
