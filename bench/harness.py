"""What every benchmark and experiment recipe under bench/ shares: data, metrics, timing, machine, result files.

Why one module: each script measures one thing, and the way it is measured (interleaved turns, CPU and wall time,
a fresh process per run with its own peak memory, the machine and load written beside every number, a JSON file
plus a Markdown table per result) must be the same in all of them, or two result files cannot be compared. The
scripts use the toolkit only through its public API (``nlgmetrics.load_metric`` and the packages' public names);
this module holds what they would otherwise copy from each other.

Sections: paths and benchmark texts; metrics by name; timing; machine; result files; fresh-process runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from nlgmetrics.machine import KERNEL_FLAGS, cpu_model, kernel_key, machine  # noqa: F401  (bench's names)

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "bench" / "results"

# --- paths and benchmark texts ------------------------------------------------------------------------------------

WMT_FILE = "multiref/multiref_wmt21_deen_2refs_allsys.jsonl"  # WMT21 de-en: two references, every system's output
TED_FILE = "multiref/multiref_tedmt_zhen_2refs.jsonl"  # TED-MT zh-en paragraphs, two human translations
TED_MQM_FILE = "judgments/mt_mqm_wmt21_ted_zhen.jsonl"  # TED zh-en segments with MQM judgments
ROC_FILE = "judgments/story_union_rocstories.jsonl"  # UNION ROC stories: MARS's data
MARS_TARGET_S_PER_REFERENCE = 2.0  # the MARS issue's augmentation budget per reference, on 2 CPU cores
Pairs = tuple[list[str], list[str]]


def data_dir() -> Path:
    """The shared data folder: ``$NLGMETRICS_DATA``, else ``shared/data`` beside the repository."""
    from nlgmetrics.resources import data_root

    try:
        return data_root(beside=REPO)
    except FileNotFoundError as error:
        raise SystemExit(str(error)) from error


def read_data(name: str) -> list[dict]:
    """The rows of a JSONL file under the shared data folder."""
    from nlgmetrics.metaeval import read_jsonl

    return read_jsonl(data_dir() / name)


def wmt_one_system(rows: Sequence[dict], n: int, seed: int) -> Pairs:
    """(hyps, refs) of the first ``n`` WMT items, one seeded-random system output each: every reference distinct.

    Args:
        rows: WMT multi-reference rows (``refs``, ``systems``).
        n: items.
        seed: picks each item's system.

    Returns:
        Hypotheses and their first references.
    """
    if n < 1:
        raise ValueError(f"need at least one WMT item, got {n}")
    rng = np.random.default_rng(seed)
    hyps, refs = [], []
    for row in rows[:n]:
        systems = sorted(row["systems"])
        hyps.append(row["systems"][systems[rng.integers(len(systems))]])
        refs.append(row["refs"][0])
    return hyps, refs


def wmt_all_systems(rows: Sequence[dict], items: int) -> Pairs:
    """Every system output of the first ``items`` WMT items against reference A: how MT evaluation looks, with
    each reference repeated once per system and identical outputs of different systems."""
    hyps, refs = [], []
    for row in rows[:items]:
        for system in sorted(row["systems"]):
            hyps.append(row["systems"][system])
            refs.append(row["refs"][0])
    return hyps, refs


def ted_paragraphs(rows: Sequence[dict]) -> Pairs:
    """TED-MT paragraphs: the second human translation scored against the first (paragraph-length texts)."""
    return [r["refs"][1] for r in rows], [r["refs"][0] for r in rows]


def roc_references(n: int, path: Path | None = None) -> Pairs:
    """The first ``n`` ROC references (whole five-sentence stories) and their contexts (the first sentence)."""
    file = path or data_dir() / ROC_FILE
    refs, srcs = [], []
    with open(file, encoding="utf-8") as handle:
        for line in handle:
            row = json.loads(line)
            refs.append(row["refs"][0])
            srcs.append(row.get("src") or "")
            if len(refs) >= n:
                break
    if len(refs) < n:
        raise SystemExit(f"{file} has only {len(refs)} rows, asked for {n}")
    return refs, srcs


def agreement(ours: Sequence[float], peer: Sequence[float]) -> dict[str, float]:
    """Largest absolute score difference and Pearson correlation of a peer's scores with ours (same rows)."""
    a, b = np.asarray(ours, dtype=np.float64), np.asarray(peer, dtype=np.float64)
    if a.shape != b.shape or a.ndim != 1 or len(a) < 2:
        raise ValueError(f"agreement needs two equally long score lists of 2+ rows, got {a.shape} and {b.shape}")
    pearson = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else float("nan")
    return {"max_abs_diff": float(np.abs(a - b).max()), "pearson": pearson}


# --- metrics by name ----------------------------------------------------------------------------------------------


def metric(name: str, **settings: Any) -> Any:
    """``nlgmetrics.load_metric(name, ...)`` with those of ``settings`` that the metric takes.

    A recipe keeps one set of settings for every metric it scores (the published rows' BERTScore encoder, the
    mix's SEScore checkpoint, the NLI model, ``progress=False``), as one command line's flags applied to every
    metric; ``load_metric`` itself refuses an option a metric does not have.

    Args:
        name: any metric ``evaluate.py --metric`` accepts.
        **settings: option values (the command-line flags' names with ``_``).

    Returns:
        The Scorer.
    """
    from nlgmetrics import load_metric
    from nlgmetrics.registry import accepted_options

    taken = accepted_options(name)
    return load_metric(name, **{k: v for k, v in settings.items() if k in taken})


# --- timing -------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Seconds of one measurement: wall clock, and this process's CPU time (the work itself on a shared machine,
    where wall time also holds the waits for other jobs; with several threads it includes spinning)."""

    wall: float
    cpu: float


def timed(fn: Callable[[], Any]) -> tuple[Any, Timing]:
    """``fn()``'s result and how long it took."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = fn()
    return out, Timing(time.perf_counter() - wall, time.process_time() - cpu)


def interleaved_best_times(fns: dict[str, Callable[[], Any]], repeats: int = 3) -> dict[str, Timing]:
    """Best wall and best CPU time of each function, measured in turns (a, b, c, a, b, c, ...) so that a change of
    load on a shared machine hits all alike.

    Args:
        fns: name -> a function to time (its result is dropped).
        repeats: rounds.

    Returns:
        name -> the smallest wall and the smallest CPU seconds over the rounds.
    """
    walls = {name: float("inf") for name in fns}
    cpus = dict(walls)
    for _ in range(repeats):
        for name, fn in fns.items():
            _, took = timed(fn)
            walls[name], cpus[name] = min(walls[name], took.wall), min(cpus[name], took.cpu)
    return {name: Timing(walls[name], cpus[name]) for name in fns}


def lightning_step_times(
    module: Any, datamodule: Any, steps: int, precision: str = "32-true", warm_up: int = 3
) -> dict[str, float]:
    """Median wall and CPU seconds of an optimizer step of ``module`` in a real Lightning fit on the CPU.

    Args:
        module: a LightningModule.
        datamodule: its LightningDataModule (validation is switched off).
        steps: timed steps, after ``warm_up`` untimed ones.
        precision: Lightning's, e.g. ``32-true`` or ``bf16-mixed``.
        warm_up: first steps left out (allocations, first-call compilation).

    Returns:
        ``steps``, ``wall_seconds``/``cpu_seconds`` (sums) and ``median_wall_seconds``/``median_cpu_seconds``.
    """
    import pytorch_lightning as pl

    class StepTimer(pl.Callback):
        def __init__(self) -> None:
            self.wall: list[float] = []
            self.cpu: list[float] = []
            self.started = (0.0, 0.0)

        def on_train_batch_start(self, trainer: Any, pl_module: Any, batch: Any, batch_idx: int) -> None:
            self.started = (time.perf_counter(), time.process_time())

        def on_train_batch_end(self, trainer: Any, pl_module: Any, outputs: Any, batch: Any, batch_idx: int) -> None:
            self.wall.append(time.perf_counter() - self.started[0])
            self.cpu.append(time.process_time() - self.started[1])

    timer = StepTimer()
    trainer = pl.Trainer(
        accelerator="cpu",
        devices=1,
        max_steps=steps + warm_up,
        limit_val_batches=0,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[timer],
        precision=precision,
    )
    trainer.fit(module, datamodule)
    wall, cpu = timer.wall[warm_up:] or timer.wall, timer.cpu[warm_up:] or timer.cpu
    return {
        "steps": len(wall),
        "wall_seconds": sum(wall),
        "cpu_seconds": sum(cpu),
        "median_wall_seconds": statistics.median(wall),
        "median_cpu_seconds": statistics.median(cpu),
    }


def sescore_step_times(
    regressor: dict,
    hyps: list[str],
    refs: list[str],
    human: list[float],
    steps: int,
    batch_size: int,
    precision: str = "32-true",
) -> dict[str, float]:
    """``lightning_step_times`` of an SEScore module of the given architecture, trained on these pairs.

    Args:
        regressor: ``SEScoreModule`` keyword arguments (encoder, layer_mix, alignment, lora_r, ...).
        hyps, refs, human: training pairs and their scores (clipped to SEScore's [-25, 0]).
        steps: timed optimizer steps.
        batch_size: pairs per step.
        precision: Lightning's precision.

    Returns:
        As ``lightning_step_times``.
    """
    from datasets import Dataset

    from sescore.regressor import SEScoreDataModule, SEScoreModule

    scores = [max(-25.0, min(0.0, h)) for h in human]
    with tempfile.TemporaryDirectory() as tmp:
        Dataset.from_dict({"reference": refs, "candidate": hyps, "score": scores}).save_to_disk(tmp + "/data")
        data = SEScoreDataModule(
            tmp + "/data",
            val_fraction=0.0,
            dev_judgments=str(data_dir() / TED_MQM_FILE),
            dev_items=2,
            batch_size=batch_size,
        )
        module = SEScoreModule(**{"encoder_freeze_fraction": 0.0, **regressor})
        return lightning_step_times(module, data, steps, precision)


# --- machine ------------------------------------------------------------------------------------------------------


def repo_path(path: str | Path) -> str:
    """``path`` as result files record it: relative to the checkout when inside it (never a machine's own path),
    else as given."""
    resolved = Path(path).resolve()
    return resolved.relative_to(REPO).as_posix() if resolved.is_relative_to(REPO) else str(path)


def children_cpu_seconds() -> float:
    """User + system CPU seconds of this process's finished child processes: the cost of a subprocess run (a
    train.py fit, an evaluate.py stress run) as the difference of two readings around it."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def load_average() -> float:
    """One-minute load average: other work on a shared machine slows every timing, so results record it."""
    return round(os.getloadavg()[0], 2)


class LoadSpan:
    """The load average at the start of a run, and ``span()`` = start and now, for the result file."""

    def __init__(self) -> None:
        self.start = load_average()

    def span(self) -> dict[str, float]:
        """``{"start": ..., "end": ...}``."""
        return {"start": self.start, "end": load_average()}


# --- result files -------------------------------------------------------------------------------------------------


def portable(value: Any) -> Any:
    """``value`` with this machine's paths taken out (:func:`nlgmetrics.resources.portable`), relative to the
    checkout."""
    from nlgmetrics.resources import portable as without_paths

    return without_paths(value, REPO)


def write_results(
    name: str,
    result: dict,
    rows: list[dict],
    columns: list[str],
    title: str,
    notes: list[str] | None = None,
    folder: Path | None = None,
) -> None:
    """``bench/results/<name>.json`` and ``<name>.md`` (a table a person can read, then ``notes`` as a list).

    Args:
        name: the file stem.
        result: what the run was (settings, summary); the rows and notes are added, and the machine unless
            ``result`` names it (a result rewritten later keeps the machine it was measured on).
        rows: one dict per table row.
        columns: the keys shown, in order.
        title: the Markdown heading.
        notes: lines under the table.
        folder: where the two files go (default ``RESULTS``, read at the call; another folder for a run whose files
            travel back from elsewhere).
    """
    folder = Path(folder) if folder is not None else RESULTS
    folder.mkdir(parents=True, exist_ok=True)
    result = portable({**result, "machine": result.get("machine") or machine(), "rows": rows, "notes": notes or []})
    rows, notes = result["rows"], result["notes"]
    (folder / f"{name}.json").write_text(json.dumps(result, indent=1))
    lines = [f"# {title}", "", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(fmt(row.get(c)) for c in columns) + " |")
    lines += [""] + [f"- {note}" for note in notes or []] + ([""] if notes else [])
    lines += [f"Machine: {result['machine']}"]
    (folder / f"{name}.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def write_document(name: str, result: dict, markdown: Callable[[dict], str]) -> dict:
    """``bench/results/<name>.json`` and ``<name>.md`` for a recipe that renders its own Markdown.

    Args:
        name: the file stem.
        result: the JSON document (``machine`` added when absent).
        markdown: renders the document.

    Returns:
        The document as written.
    """
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = portable({**result, "machine": result.get("machine") or machine()})
    text = markdown(result)
    (RESULTS / f"{name}.json").write_text(json.dumps(result, indent=1, default=str) + "\n", encoding="utf-8")
    (RESULTS / f"{name}.md").write_text(text, encoding="utf-8")
    print(text)
    return result


def tree_mb(path: Path) -> float:
    """Size of a file, or of every file under a folder, in MiB."""
    if path.is_file():
        return path.stat().st_size / 2**20
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def fmt(value: Any) -> str:
    """A table cell: floats to three decimals (tiny ones in scientific notation), None empty."""
    if value is None:
        return ""
    if isinstance(value, float):
        if 0 < abs(value) < 1e-3:  # a difference of 1e-7 and one of 4e-4 must not both print as 0.000
            return f"{value:.1e}"
        return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
    return str(value)


# --- fresh-process runs -------------------------------------------------------------------------------------------


@dataclass
class ChildRun:
    """How one isolated measurement process ended: its own peak RSS (not the parent's, not a sibling's)."""

    returncode: int
    peak_rss_mb: float
    wall_seconds: float
    killed_over_mb: float | None  # the RSS limit it crossed, when the watchdog ended it


def run_child(
    cmd: list[str],
    rss_limit_mb: float | None = None,
    poll_seconds: float = 0.5,
    log_path: Path | None = None,
    cwd: Path | None = None,
    env: dict | None = None,
) -> ChildRun:
    """Run ``cmd`` in a fresh process and report its own peak memory from ``os.wait4`` (ru_maxrss of that child).

    A fresh process per measurement is the only way to get a per-peer peak: ru_maxrss never goes down, so two
    peers in one process would report the larger of the two. ``rss_limit_mb`` ends the child (by its pid) when
    its resident memory crosses the limit, so a benchmark on a shared machine cannot take everyone's memory.
    The child's output goes to ``log_path`` (appended) or to this process's own output; ``cwd``/``env`` as for
    ``subprocess.Popen``.
    """
    import psutil

    started = time.perf_counter()
    log = open(log_path, "a", encoding="utf-8") if log_path is not None else None
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT if log is not None else None, cwd=cwd, env=env)
    killed: float | None = None
    watched = psutil.Process(proc.pid)
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid:
            break
        if rss_limit_mb is not None and killed is None:
            try:
                if watched.memory_info().rss / 2**20 > rss_limit_mb:
                    killed = rss_limit_mb
                    proc.kill()
            except psutil.NoSuchProcess:
                pass
        time.sleep(poll_seconds)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if log is not None:
        log.close()
    # ru_maxrss is in kilobytes on Linux
    return ChildRun(proc.returncode, usage.ru_maxrss / 1024, time.perf_counter() - started, killed)


def add_worker_options(parser: argparse.ArgumentParser, choices: Sequence[str] | None = None) -> None:
    """The hidden ``--worker NAME`` and ``--out FILE`` a script is called with to measure one thing in a fresh
    process (``run_worker``)."""
    parser.add_argument("--worker", choices=sorted(choices) if choices else None, help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)


def run_worker(
    script: Path, worker_args: list[str], rss_limit_mb: float | None = None, log_path: Path | None = None
) -> tuple[dict | None, ChildRun]:
    """Run ``script --out FILE *worker_args`` with this interpreter in a fresh process; its JSON and how it ended.

    A script under bench/ runs as its module from the checkout (``python -m bench.<name>``, as every bench script
    does), any other file by its path. The JSON is None when the worker failed or was stopped by the memory watchdog.
    """
    script = Path(script).resolve()
    command = ["-m", f"bench.{script.stem}"] if script.parent == REPO / "bench" else [str(script)]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [sys.executable, *command, "--out", str(out), *worker_args]
        run = run_child(cmd, rss_limit_mb, log_path=log_path, cwd=REPO)
        result = json.loads(out.read_text()) if run.returncode == 0 and out.exists() else None
    return result, run


def write_worker_result(path: str, result: dict) -> None:
    """A worker's answer to its parent, written at the very end so a half-finished run leaves no file."""
    Path(path).write_text(json.dumps(result))


def measure_scoring(
    load: Callable[[], Any],
    score: Callable[[], Sequence[float]],
    prepare: Callable[[], Any] | None = None,
    warm_up: Callable[[], Any] | None = None,
) -> dict:
    """Inside a worker: ``prepare`` (e.g. first-use conversion) and ``load`` (the models) timed apart, an untimed
    ``warm_up`` (first-call allocations), the resident memory then, and one timed ``score``.

    Returns:
        ``prepare_s`` (0 without ``prepare``), ``load_s``, ``score_s``, ``scores``, ``rss_after_load_mb``.
    """
    import psutil

    _, prepared = timed(prepare) if prepare else (None, Timing(0.0, 0.0))
    _, loaded = timed(load)
    if warm_up:
        warm_up()
    rss_after_load = psutil.Process().memory_info().rss / 2**20
    scores, scored = timed(score)
    return {
        "prepare_s": prepared.wall,
        "load_s": loaded.wall,
        "score_s": scored.wall,
        "scores": [float(s) for s in scores],
        "rss_after_load_mb": rss_after_load,
    }


def runs_in_turns(script: Path, names: list[str], extra: list[str], repeats: int) -> dict[str, list[dict]]:
    """``script --worker NAME *extra`` for every name, ``repeats`` rounds in turns, each in a fresh process.

    Taking turns (a, b, a, b) rather than blocks (a, a, b, b) makes a load change on a shared machine hit every
    model alike. Each successful run's JSON gets the process's ``peak_rss_mb``; failed runs are left out.
    """
    runs: dict[str, list[dict]] = {name: [] for name in names}
    for _ in range(repeats):
        for name in names:
            result, run = run_worker(script, ["--worker", name, *extra])
            print(f"{name}: exit {run.returncode}, peak {run.peak_rss_mb:.0f} MB", flush=True)
            if result is not None:
                runs[name].append({**result, "peak_rss_mb": run.peak_rss_mb})
    return runs


def best_of_turns(runs: dict[str, list[dict]], reference: str, label: str) -> dict[str, dict | None]:
    """Per name of ``runs_in_turns``: None if every run failed, else the best ``score_s``, its ratio to the
    reference's best, the fastest ``load_s``, the highest ``peak_rss_mb`` and the first run (for the facts every run
    shares). Exits naming ``label`` when the reference itself never finished: no ratio means anything then."""
    if not runs[reference]:
        raise SystemExit(f"the {label} runs failed; see the output above")
    best_base = min(r["score_s"] for r in runs[reference])
    out: dict[str, dict | None] = {}
    for name, done in runs.items():
        best = min((r["score_s"] for r in done), default=None)
        out[name] = (
            None
            if best is None
            else {
                "best": best,
                "ratio": best / best_base,
                "load_s": min(r["load_s"] for r in done),
                "peak_rss_mb": max(r["peak_rss_mb"] for r in done),
                "first": done[0],
            }
        )
    return out


def rows_of_turns(
    runs: dict[str, list[dict]], reference: str, label: str, key: str, count: dict, row: Callable[[dict, dict], dict]
) -> list[dict]:
    """One table row per name of ``runs_in_turns``: ``{key: name, **count, **row(best, first run)}`` and status
    "ok", or ``{key: name, **count}`` with status "failed" when every run of it failed (``best_of_turns`` gives
    ``best`` and exits naming ``label`` when the reference failed)."""
    rows = []
    for name, best in best_of_turns(runs, reference, label).items():
        if best is None:
            rows.append({key: name, **count, "status": "failed"})
        else:
            rows.append({key: name, **row(best, best["first"]), "status": "ok"})
    return rows


def model_turns(
    script: Path, description: str, names: Sequence[str], names_option: str, n: int, name: str
) -> tuple[argparse.Namespace, dict[str, list[dict]] | None]:
    """The command line of a benchmark that times several models of one role on WMT21 outputs in turns.

    Parses ``--n --seed --repeats --threads --<names_option> --name`` (and the hidden worker options). In a worker
    it returns the arguments and no runs (the caller measures); otherwise it runs every model in turns in fresh
    processes and returns their runs (the first model is the reference of every ratio).
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--n", type=int, default=n, help="WMT21 de-en items, one system output each")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument(f"--{names_option}", nargs="+", default=list(names), dest="names")
    parser.add_argument("--name", default=name, help="result file stem under bench/results")
    add_worker_options(parser)
    args = parser.parse_args()
    if args.worker:
        return args, None
    if args.names[0] != names[0]:
        raise SystemExit(f"the first of --{names_option} is the reference of the ratios and must be {names[0]}")
    args.load = LoadSpan()
    extra = ["--n", str(args.n), "--seed", str(args.seed), "--threads", str(args.threads)]
    return args, runs_in_turns(script, args.names, extra, args.repeats)
