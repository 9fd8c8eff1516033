"""MARS augmentation cost over reference length: seconds per reference at ~25, 50, 100 and 200 words.

References are the leading sentences of WikiText-103 paragraphs (``corpus/wikitext_paragraphs_a.txt`` of the
shared data) cut at the first sentence end at or after the target word count (kept within 0.85-1.3x of it),
without a context, so the reference length is the only thing that changes; one ROC row (whole five-sentence
stories with their first-sentence context, as in ``bench_mars.py``) ties the curve to the 2 s target's data.

The peer (``--peer``) is the same references augmented in the same run by another variant, in turns so load
changes hit both alike: ``unbounded`` = the config without its cost bound (``masking.window_words: 0``, the
paper: every word of the reference may become a blank), or ``dynamic`` = the old code path (transformers'
``DynamicCache``, which ``torch.cat``s the whole KV cache on every decoding step). The augmented texts of all
variants are compared (the window changes them only for references longer than it). Each run is time-boxed
(``--time-box`` seconds, SIGALRM): a run that does not finish is reported as "> box" and its texts are not compared.

Where the time goes comes from simple timers around the decoder's parts (a few microseconds per call):
model forward without attention and cache, attention (transformers' attention function), KV-cache appends,
dropping finished rows (``keep_rows``), planning + sampling, LM head + judge bookkeeping (``_absorb``), and the
rest (spaCy masking, tokenisation, Python). Wall and CPU seconds are recorded; with 2 torch threads on a busy
machine the CPU time includes threads spinning at barriers, so the load average is recorded too.

    python bench/bench_mars_length.py [--words 25 50 100 200] [--n 16 16 16 8] [--time-box 600] [--threads 2]
        [--variants config unbounded] [--peer unbounded] [--name mars_length_window]
        # about 15 min on 2 cores with the defaults (the unbounded 200-word references take ~9 s each)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import MARS_TARGET_S_PER_REFERENCE, REPO, RESULTS, data_dir, repo_path, roc_references, write_results  # noqa: E402

WIKITEXT = Path("corpus") / "wikitext_paragraphs_a.txt"
CONTEXTS = Path("corpus") / "wikitext_paragraphs_b.txt"  # other paragraphs: long contexts (--context-words)
VARIANTS = {
    "config": "config as given (growing KV cache)",
    "unbounded": "config without the window (masking.window_words 0, the paper)",
    "dynamic": "config as given, old DynamicCache (torch.cat per step)",
}
PARTS = ("model", "attention", "cache_append", "keep_rows", "sampling", "absorb", "other")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z\"'(])")


def wikitext_references(words: int, n: int, path: Path | None = None) -> list[str]:
    """``n`` references of about ``words`` words: leading sentences of distinct paragraphs."""
    file = path or data_dir() / WIKITEXT
    refs: list[str] = []
    with open(file, encoding="utf-8") as handle:
        for line in handle:
            taken: list[str] = []
            for sentence in _SENTENCE_END.split(line.strip()):
                taken.append(sentence)
                if len(" ".join(taken).split()) >= 0.85 * words:
                    break
            count = len(" ".join(taken).split())
            if 0.85 * words <= count <= 1.3 * words:
                refs.append(" ".join(taken))
                if len(refs) == n:
                    return refs
    raise SystemExit(f"{file} has only {len(refs)} paragraphs with a {words}-word lead, asked for {n}")


def wikitext_contexts(words: int, n: int, path: Path | None = None) -> list[str]:
    """``n`` contexts of exactly ``words`` words, each from consecutive paragraphs of the other WikiText file.

    They are unrelated to the references: only their length matters here (a long source document, as in
    summarisation, is fed before every row and widens every attention step, up to ``max_context_tokens``).
    """
    file = path or data_dir() / CONTEXTS
    with open(file, encoding="utf-8") as handle:
        paragraphs = [line.split() for line in handle if line.strip()]
    out: list[str] = []
    start = 0
    while len(out) < n and start < len(paragraphs):
        taken: list[str] = []
        while len(taken) < words and start < len(paragraphs):
            taken += paragraphs[start]
            start += 1
        if len(taken) >= words:
            out.append(" ".join(taken[:words]))
    if len(out) < n:
        raise SystemExit(f"{file} has too few words for {n} contexts of {words} words")
    return out


class TimeBoxExceeded(Exception):
    pass


@contextmanager
def time_box(seconds: float) -> Iterator[None]:
    """Raise ``TimeBoxExceeded`` in the main thread after ``seconds`` (the decoder loop is Python, so it stops
    within one decoding step)."""

    def expire(signum: int, frame: Any) -> None:
        raise TimeBoxExceeded

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


class Profile:
    """Seconds spent in the decoder's parts, by wrapping their functions (installed once, read per run)."""

    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.steps = 0
        self.slots = 0
        self.real_tokens = 0
        self.max_width = 0

    def reset(self) -> None:
        self.__init__()  # type: ignore[misc]

    def _wrap(self, owner: Any, name: str, part: str, getter: Callable[[Any], Any] = getattr) -> None:
        original = getter(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.seconds[part] += time.perf_counter() - started

        if isinstance(owner, dict):
            owner[name] = timed
        else:
            setattr(owner, name, timed)

    def install(self) -> None:
        from transformers.cache_utils import DynamicLayer
        from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

        from mars.cloze import ClozeAugmenter
        from mars.lockstep import GrowingLayer, LockstepBatch

        profile = self
        step = LockstepBatch.step

        def counted_step(batch: LockstepBatch, chunks: Any) -> Any:
            started = time.perf_counter()
            try:
                return step(batch, chunks)
            finally:
                profile.seconds["step"] += time.perf_counter() - started
                profile.steps += 1
                profile.slots += len(chunks) * max(1, max(len(c) for c in chunks))
                profile.real_tokens += sum(len(c) for c in chunks)
                profile.max_width = max(profile.max_width, batch.mask.shape[1])

        LockstepBatch.step = counted_step  # type: ignore[method-assign]
        self._wrap(LockstepBatch, "keep_rows", "keep_rows")
        self._wrap(DynamicLayer, "update", "cache_append")
        self._wrap(GrowingLayer, "update", "cache_append")
        self._wrap(ClozeAugmenter, "_sample", "sampling")
        self._wrap(ClozeAugmenter, "_absorb", "absorb")
        self._wrap(ALL_ATTENTION_FUNCTIONS._global_mapping, "sdpa", "attention", getter=lambda d, k: d[k])

    def shares(self, total: float) -> dict[str, float]:
        """Seconds per part; ``model`` = decoding steps less attention and cache appends, ``other`` = the rest."""
        s = self.seconds
        parts = {
            "model": s["step"] - s["attention"] - s["cache_append"],
            "attention": s["attention"],
            "cache_append": s["cache_append"],
            "keep_rows": s["keep_rows"],
            "sampling": s["sampling"],
            "absorb": s["absorb"],
        }
        parts["other"] = total - sum(parts.values())
        return parts


def run_variant(
    scorer: Any, growing: bool, refs: list[str], srcs: list[str], box: float, profile: Profile
) -> dict[str, Any]:
    """Augment from scratch with one scorer and cache kind inside a time box: times, profile, outputs (None if
    boxed out)."""
    scorer._cache = None  # cache_dir is None: a fresh in-memory cache
    scorer._get("augmenter").growing_cache = growing
    profile.reset()
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        with time_box(box):
            out = scorer.augment(refs, srcs)
    except TimeBoxExceeded:
        out = None
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {
        "wall": wall,
        "cpu": cpu,
        "outputs": out,
        "parts": profile.shares(wall),
        "steps": profile.steps,
        "slots": profile.slots,
        "real_tokens": profile.real_tokens,
        "max_width": profile.max_width,
    }


def plot(rows: list[dict], path: Path, threads: int) -> None:
    """s/reference against words per variant: CPU seconds (solid; steady on a busy machine) and wall seconds
    (dashed; what the 2 s target is about). Runs stopped by the time box are drawn as open markers (lower bounds)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 4.2))
    for variant, label in VARIANTS.items():
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--words", type=int, nargs="+", default=[25, 50, 100, 200])
    parser.add_argument("--n", type=int, nargs="+", default=[16, 16, 16, 8], help="references per length")
    parser.add_argument(
        "--context-words",
        type=int,
        default=0,
        help="also measure each length with a context of this many words (0 = no such rows)",
    )
    parser.add_argument("--roc", type=int, default=16, help="ROC references for the anchor row (0 = none)")
    parser.add_argument("--variants", nargs="+", default=["config", "unbounded"], choices=list(VARIANTS))
    parser.add_argument("--peer", default="unbounded", choices=list(VARIANTS), help="variant the ratios divide by")
    parser.add_argument("--time-box", type=float, default=600.0, help="seconds per run before it is stopped")
    parser.add_argument("--config", default=str(REPO / "configs" / "mars" / "offline.yaml"))
    parser.add_argument("--threads", type=int, default=2, help="torch threads (the target is for 2 CPU cores)")
    parser.add_argument("--name", default="mars_length_window", help="results file stem in bench/results/")
    args = parser.parse_args()
    if len(args.n) not in (1, len(args.words)):
        raise SystemExit("--n takes one count or one per --words entry")

    import torch

    import mars

    torch.set_num_threads(args.threads)
    counts = args.n * len(args.words) if len(args.n) == 1 else args.n
    sets: list[tuple[str, int, list[str], list[str]]] = []
    if args.roc:
        roc_refs, roc_srcs = roc_references(args.roc)
        sets.append(("roc", round(sum(len(r.split()) for r in roc_refs) / len(roc_refs)), roc_refs, roc_srcs))
    for words, n in zip(args.words, counts):
        refs = wikitext_references(words, n)
        sets.append(("wikitext", words, refs, [""] * len(refs)))
        if args.context_words:
            sets.append(
                (
                    f"wikitext+{args.context_words}w context",
                    words,
                    refs,
                    wikitext_contexts(args.context_words, len(refs)),
                )
            )

    scorer = mars.build(args.config, overrides={"cache_dir": None, "progress": False})
    unbounded = mars.build(args.config, overrides={"cache_dir": None, "progress": False, "masking.window_words": 0})
    unbounded._models = scorer._models  # the same loaded models (LM, spaCy, idf): only the masking differs
    scorers = {"config": scorer, "unbounded": unbounded, "dynamic": scorer}
    scorer.templates(sets[0][2][:1], sets[0][3][:1])  # warm-up: spaCy pipeline, models, vocabulary masks
    augmenter = scorer._get("augmenter")
    augmenter._vocab_masks()
    tokenizer = augmenter.tokenizer
    profile = Profile()
    profile.install()

    load_before = os.getloadavg()
    rows: list[dict[str, Any]] = []
    for kind, words, refs, srcs in sets:
        runs = {v: run_variant(scorers[v], v != "dynamic", refs, srcs, args.time_box, profile) for v in args.variants}
        finished = {v: r for v, r in runs.items() if r["outputs"] is not None}
        old = runs.get(args.peer)
        tokens = sum(len(tokenizer(r, add_special_tokens=False)["input_ids"]) for r in refs)
        for variant, run in runs.items():
            n = len(refs)
            identical = None
            if len(finished) == len(runs) > 1:
                identical = all(r["outputs"] == run["outputs"] for r in finished.values())
            parts = run["parts"]
            rows.append(
                {
                    "set": kind,
                    "variant": variant,
                    "words": words,
                    "mean_words": sum(len(r.split()) for r in refs) / n,
                    "mean_tokens": tokens / n,
                    "references": n,
                    "finished": run["outputs"] is not None,
                    "wall_s_per_reference": run["wall"] / n,
                    "cpu_s_per_reference": run["cpu"] / n,
                    "wall_ms_per_token": 1000 * run["wall"] / tokens,
                    "wall_ratio_to_peer": (run["wall"] / old["wall"]) if old and old["outputs"] is not None else None,
                    "cpu_ratio_to_peer": (run["cpu"] / old["cpu"]) if old and old["outputs"] is not None else None,
                    "identical_texts": identical,
                    "steps": run["steps"],
                    "max_cache_width": run["max_width"],
                    "padding_share": 1 - run["real_tokens"] / run["slots"] if run["slots"] else None,
                    **{f"{p}_share": parts[p] / run["wall"] for p in PARTS},
                    "seconds": {p: parts[p] for p in PARTS},
                }
            )
            print(json.dumps({k: v for k, v in rows[-1].items() if k != "seconds"}), flush=True)
    load_after = os.getloadavg()

    contended = max(load_before[0], load_after[0]) > torch.get_num_threads() + 0.5
    result = {
        "config": repo_path(args.config),
        "time_box_s": args.time_box,
        "words": args.words,
        "references": counts,
        "roc_references": args.roc,
        "window_words": scorer.config.masking.window_words,
        "peer": args.peer,
        "lockstep_references": scorer.config.cloze.lockstep_references,
        "ratios": [r for r in scorer.config.masking.ratios if r > 0],
        "target_s_per_reference": MARS_TARGET_S_PER_REFERENCE,
        "torch_threads": torch.get_num_threads(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "load_average_before": list(load_before),
        "load_average_after": list(load_after),
        "contended": contended,
        "signature": scorer.signature(),
    }
    notes = [
        "wikitext rows: leading sentences of WikiText-103 paragraphs, no context (+context rows: the same references "
        "after an unrelated WikiText context of that many words); roc: whole stories with their first sentence as "
        "context. One run per variant and length, variants in turns; the plot shows the wikitext rows.",
        f"A run stopped by the {args.time_box:.0f} s time box has finished = False; its s/reference is a lower bound.",
        "Shares are of the run's wall time: model = decoding steps less attention and cache appends; absorb = LM "
        "head, log-softmax and judge bookkeeping; other = spaCy masking, tokenisation, Python.",
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}: with other jobs on the cores, 2 threads spinning at "
        "OpenMP barriers (the default) were over 20x slower than 1 thread; PASSIVE avoids that.",
    ]
    title = (
        f"MARS augmentation cost over reference length ({torch.get_num_threads()} torch threads, "
        f"lockstep batches of up to {scorer.config.cloze.lockstep_references} references, load "
        f"{load_before[0]:.2f} -> {load_after[0]:.2f}{', CONTENDED' if contended else ''})"
    )
    columns = [
        "set",
        "variant",
        "words",
        "mean_words",
        "mean_tokens",
        "references",
        "finished",
        "wall_s_per_reference",
        "cpu_s_per_reference",
        "wall_ms_per_token",
        "wall_ratio_to_peer",
        "cpu_ratio_to_peer",
        "identical_texts",
        "steps",
        "max_cache_width",
    ] + [f"{p}_share" for p in PARTS]
    write_results(args.name, result, rows, columns, title, notes)
    plot(rows, RESULTS / f"{args.name}.png", torch.get_num_threads())


if __name__ == "__main__":
    main()
