"""The synthesis run: load models, read input, process missing blocks of this shard, merge, summarise.

Thin shell around the pure parts (planning, budget, edits, severity) and the model parts (fillers, NLI).
"""

from __future__ import annotations

import hashlib
import json
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from sescore.synthesis import store
from sescore.synthesis.config import SynthesisConfig, to_dict
from sescore.synthesis.fillers import build_filler
from sescore.synthesis.inputs import InputReport, cap_lengths, read_sentences
from sescore.synthesis.pipeline import Sentence, SynthesisModels, synthesize_group
from sescore.synthesis.stopwatch import Stopwatch
from sescore.synthesis.summary import plot_histogram, summarize_rows, summarize_sessions

SUMMARY = "summary.json"
HISTOGRAM = "score_histogram.png"


def load_models(config: SynthesisConfig, device: str | None = None) -> SynthesisModels:
    """Fillers the operation mix needs (one per distinct config) and the NLI model; GPU when present."""
    from nlgmetrics.nli import load_nli

    device = device or (None if config.device in (None, "auto") else config.device)
    fillers = {name: build_filler(filler, device) for name, filler in config.fillers_in_use().items()}
    rules = None
    if config.rule_kinds_in_use():
        from sescore.synthesis.rules import load_rule_context

        rules = load_rule_context(config.rules, config.language)
    encoder = None
    if config.uses_neighbours():
        from nlgmetrics.modelroles import load_encoder

        encoder = load_encoder(config.neighbours.encoder, device=device)
    nli = load_nli(config.severity.nli, device=device)
    return SynthesisModels(fillers=fillers, nli=nli, rules=rules, neighbour_encoder=encoder)


def attach_neighbours(config: SynthesisConfig, models: SynthesisModels, sentences: Sequence[Sentence]) -> None:
    """Each sentence's nearest other sentence of the whole input (neighbour edits), unless already given.

    The pool is every usable sentence of the input, past ``--limit`` too, so a sentence's neighbour (and hence its
    rows) does not depend on the limit, the block or the shard.
    """
    if not config.uses_neighbours() or models.neighbours is not None:
        return
    from sescore.synthesis.neighbours import neighbour_texts

    if models.neighbour_encoder is None:
        raise ValueError("neighbour edits need models.neighbour_encoder (an encoder role model)")
    found = neighbour_texts([s.text for s in sentences], models.neighbour_encoder, config.neighbours.batch_size)
    models.neighbours = {s.index: text for s, text in zip(sentences, found)}


def prepare_sentences(
    config: SynthesisConfig,
    models: SynthesisModels,
    sentences: list[Sentence],
    report: InputReport,
    limit: int | None = None,
) -> tuple[list[Sentence], int]:
    """Every sentence left after the fillers' length caps, and how many of them (from the front) the run keeps.

    Sentences past ``limit`` are returned too: the last kept model-call group must still be computed with its
    full-run neighbours, or batch effects would make ``--limit N`` rows differ from the full run's first rows.
    ``report`` counts what happened (``used`` = kept).
    """
    caps = [(f.count_tokens, f.max_tokens) for _, f in sorted(models.fillers.items())]
    sentences = cap_lengths(sentences, caps, config.long_lines, report)
    keep = len(sentences) if limit is None else min(limit, len(sentences))
    report.used = keep
    return sentences, keep


@dataclass(frozen=True)
class Group:
    """One model-call group: the unit that is computed, kept after a kill, and never split by a block."""

    index: int  # over the whole input: sentences index*size .. (index+1)*size - 1
    sentences: tuple[Sentence, ...]  # what the model calls see
    keep: int  # how many of them (from the front) get rows stored


def plan_blocks(sentences: Sequence[Sentence], keep: int, block_size: int, group_size: int) -> list[list[Group]]:
    """The groups of each block of the first ``keep`` sentences.

    Groups are cut from the whole sentence list, so a group keeps the same neighbours (hence the same batched
    model calls, hence the same rows) whatever the block size or shard it ends up in.
    """
    if block_size < 1 or group_size < 1 or block_size % group_size:
        raise ValueError(f"block size {block_size} must be a positive multiple of the group size {group_size}")
    if not 0 <= keep <= len(sentences):
        raise ValueError(f"cannot keep {keep} of {len(sentences)} sentences")
    blocks = []
    for start in range(0, keep, block_size):
        stop = min(start + block_size, keep)
        blocks.append(
            [
                Group(
                    g, tuple(sentences[g * group_size : (g + 1) * group_size]), min(group_size, stop - g * group_size)
                )
                for g in range(start // group_size, -(-stop // group_size))
            ]
        )
    return blocks


def shard_blocks(num_blocks: int, shard_index: int, num_shards: int) -> list[int]:
    """Block b belongs to shard b mod n: deterministic, balanced, and independent of run order."""
    if num_shards < 1 or not 0 <= shard_index < num_shards:
        raise ValueError(f"need 0 <= shard-index < num-shards, got {shard_index} of {num_shards}")
    return [b for b in range(num_blocks) if b % num_shards == shard_index]


def settings_of(config: SynthesisConfig, report: InputReport, limit: int | None) -> dict:
    """The manifest keys known before any model is loaded: checked first, so a changed setting costs no load."""
    return {
        "format": store.FORMAT,
        "config_hash": config.hash(),
        "config": {k: v for k, v in to_dict(config).items() if k not in config.RUNTIME_KEYS},
        "seed": config.seed,
        "input_sha256": report.sha256,
        "limit": limit,
        "block_size": config.block_size,
    }


def build_manifest(
    config: SynthesisConfig, models: SynthesisModels, sentences: list[Sentence], report: InputReport, limit: int | None
) -> dict:
    indices = ",".join(str(s.index) for s in sentences)
    return {
        **settings_of(config, report, limit),
        "input": report.as_dict(),
        "num_sentences": len(sentences),
        "num_blocks": -(-len(sentences) // config.block_size),
        "sentence_indices_sha256": hashlib.sha256(indices.encode()).hexdigest(),
        "models": models.hashes(),
        "calibration_matches_nli": _check_calibration(config, models) if config.severity.calibration else None,
    }


def _check_calibration(config: SynthesisConfig, models: SynthesisModels) -> bool | None:
    """Warn when the threshold was calibrated for other NLI weights: the labels would be miscalibrated."""
    record = config.severity.calibration
    if not record:
        return None
    loaded = getattr(models.nli, "hash", None)
    if record.get("nli_hash") != loaded:
        warnings.warn(
            f"severity.threshold was calibrated for NLI weights {record.get('nli_hash')}, but {config.severity.nli} "
            f"has {loaded}; rerun `train.py synthesize calibrate --config ... --write`",
            stacklevel=2,
        )
        return False
    return True


@dataclass
class RunResult:
    output: Path
    blocks_written: int
    blocks_skipped: int
    merged: bool
    summary: dict | None


def run_synthesis(
    config: SynthesisConfig,
    input_path: str | Path,
    output: str | Path,
    limit: int | None = None,
    shard_index: int = 0,
    num_shards: int = 1,
    models: SynthesisModels | None = None,
    progress: bool = True,
    merge: bool | None = None,
) -> RunResult:
    """Write this shard's missing blocks, then (single shard, or ``merge=True``) merge and summarise."""
    from tqdm.auto import tqdm

    if limit is not None and limit < 1:
        raise ValueError(f"--limit must be >= 1, got {limit}")
    output = Path(output)
    read, report = read_sentences(input_path, config.bad_utf8)
    store.check_settings(output, settings_of(config, report, limit))
    started = time.perf_counter()
    models = models or load_models(config)
    load_seconds = time.perf_counter() - started
    sentences, keep = prepare_sentences(config, models, read, report, limit)
    attach_neighbours(config, models, sentences)
    manifest = build_manifest(config, models, sentences[:keep], report, limit)
    store.check_or_write_manifest(output, manifest)
    blocks = plan_blocks(sentences, keep, config.block_size, config.sentences_per_call)
    mine = shard_blocks(len(blocks), shard_index, num_shards)
    done = store.completed_blocks(output)
    saved = store.completed_groups(output)
    todo = [b for b in mine if b not in done]
    clock = Stopwatch()
    loop_start, cpu_start = time.perf_counter(), time.process_time()
    processed = rows_written = 0
    # the bar shows the whole shard and starts at what earlier runs kept: 16/60 after a resume, not 0/44
    kept = sum(g.keep for b in mine for g in blocks[b] if b in done or g.index in saved)
    with tqdm(
        total=sum(g.keep for b in mine for g in blocks[b]),
        initial=kept,
        desc="synthesis",
        unit="sent",
        disable=not progress,
    ) as bar:
        for b in todo:
            rows = []
            for group in blocks[b]:
                if group.index in saved:
                    rows.extend(store.read_rows(saved[group.index]))
                    continue
                kept_lines = {sentence.index for sentence in group.sentences[: group.keep]}
                new_rows = [
                    r
                    for r in synthesize_group(group.sentences, models, config, clock)
                    if r["sentence_index"] in kept_lines
                ]
                store.write_group(output, group.index, new_rows)
                rows.extend(new_rows)
                processed += group.keep
                rows_written += len(new_rows)
                bar.update(group.keep)
            store.write_block(output, b, rows)
            store.remove_groups(output, [group.index for group in blocks[b]])
    session = {
        "shard_index": shard_index,
        "num_shards": num_shards,
        "blocks": todo,
        "sentences": processed,
        "rows": rows_written,
        "wall_seconds": round(time.perf_counter() - loop_start, 4),
        "cpu_seconds": round(time.process_time() - cpu_start, 4),
        "load_seconds": round(load_seconds, 4),
        "model_seconds": clock.as_dict(),
        "pid": os.getpid(),
        "device": str(getattr(models.nli, "device", "?")),
    }
    if todo:
        name = f"session-{shard_index:03d}of{num_shards:03d}-{time.time_ns()}.json"
        store.write_json(store.work_dir(output) / "sessions" / name, session)
    should_merge = (num_shards == 1) if merge is None else merge
    summary = merge_outputs([output], output, config.severity.minor) if should_merge else None
    return RunResult(output, len(todo), len(mine) - len(todo), should_merge, summary)


def merge_outputs(sources: Sequence[str | Path], output: str | Path, minor: int | None = None) -> dict:
    """Combine the blocks of one or more run folders into one dataset + summary.json + score_histogram.png."""
    manifest, blocks = store.collect_blocks(sources)
    output = Path(output)
    dataset = store.merge_blocks(blocks, manifest, output)
    minor = manifest["config"]["severity"]["minor"] if minor is None else minor
    summary = summarize_rows(
        dataset.select_columns(["sentence_index", "score", "num_planned", "num_applied", "history"]), minor
    )
    sessions = []
    for source in sources:
        for path in sorted((store.work_dir(source) / "sessions").glob("session-*.json")):
            sessions.append(json.loads(path.read_text(encoding="utf-8")))
    summary.update(
        {
            "config_name": manifest["config"]["name"],
            "config_hash": manifest["config_hash"],
            "seed": manifest["seed"],
            "models": manifest["models"],
            "input": manifest["input"],
            "limit": manifest["limit"],
            "calibration_matches_nli": manifest.get("calibration_matches_nli"),
            "rate": summarize_sessions(sessions),
        }
    )
    store.write_json(output / SUMMARY, summary)
    plot_histogram(
        summary["score_histogram"],
        output / HISTOGRAM,
        f"{manifest['config']['name']} ({manifest['config_hash']}): {summary['rows']} variants",
    )
    return summary


__all__ = [
    "Group",
    "attach_neighbours",
    "RunResult",
    "load_models",
    "merge_outputs",
    "plan_blocks",
    "prepare_sentences",
    "run_synthesis",
    "settings_of",
    "shard_blocks",
]
