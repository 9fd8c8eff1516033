"""SEScore throughput: scoring segments/second against the bare encoder forward, and training steps/second.

The scoring peer is the encoder's forward pass on the same, already tokenised, length-sorted batches of the
texts the scorer encodes (each distinct hypothesis and reference once); the ratio is what the toolkit adds on
top (tokenisation, sorting, pooling, the head, order restoration). A second peer encodes hypothesis and
reference of every segment (2N texts), which is what a pair-at-a-time implementation pays.
Training: optimizer steps per second of ``SEScoreModule`` in a Lightning loop (forward, backward, AdamW).

    python bench/bench_sescore.py [--checkpoint sescore/checkpoints/minilm-news]   # v1, one model
    python bench/bench_sescore.py --checkpoint sescore/checkpoints/mpnet-v2 --train-steps 0 --name sescore_default
        # the default (one model on MPNet)
    python bench/bench_sescore.py --checkpoint sescore/checkpoints/minilm-v2 --train-steps 0 --name sescore_minilm_v2
        # an ensemble: the rows above for its first member, plus the whole ensemble's scoring
    python bench/bench_sescore.py --encoder packaged:minilm --untrained    # before the shipped model exists
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import data_dir, write_results  # noqa: E402


def best_times(fn, repeats: int) -> tuple[float, float]:
    """Best wall time and best CPU time of this process over ``repeats`` runs.

    On a shared machine wall time includes waiting for other jobs; with one thread (OMP_NUM_THREADS=1) the
    process CPU time is the work itself, so the ratios below use CPU time and the wall times are reported too.
    """
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return min(walls), min(cpus)


def _regressor(args: argparse.Namespace):
    """(the model the single-model rows time, what it is, the checkpoint's model folders: one, or an ensemble's)."""
    from sescore.regressor.checkpoint import load_checkpoint
    from sescore.regressor.model import RegressorConfig, build_regressor

    if args.untrained:
        regressor = build_regressor(RegressorConfig(encoder=args.encoder, layer_mix=args.layer_mix))
        return regressor.eval(), f"untrained head over {args.encoder}", []
    if not Path(args.checkpoint).is_dir():
        raise SystemExit(f"no checkpoint at {args.checkpoint}; train it or run with --encoder packaged:minilm --untrained")
    from sescore.regressor.scoring import checkpoint_folders

    members = checkpoint_folders(args.checkpoint)  # an ensemble folder: the single-model rows time its first member
    what = args.checkpoint if len(members) == 1 else f"{args.checkpoint}, first of {len(members)} members"
    return load_checkpoint(members[0], "cpu"), what, members


def _train_steps_per_second(args: argparse.Namespace, hyps: list[str], refs: list[str], human: list[float],
                            precision: str = "32-true") -> dict:
    """Median CPU time of optimizer steps after a warm-up, in a real Lightning fit (``precision``: Lightning's, e.g.
    bf16-mixed; ``bench_precision.py`` times both)."""
    import pytorch_lightning as pl
    from datasets import Dataset

    from sescore.regressor.datamodule import SEScoreDataModule
    from sescore.regressor.module import SEScoreModule

    class StepTimer(pl.Callback):
        def __init__(self) -> None:
            self.times: list[float] = []
            self.cpu: list[float] = []
            self._start = self._cpu = 0.0

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            self._start, self._cpu = time.perf_counter(), time.process_time()

        def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
            self.times.append(time.perf_counter() - self._start)
            self.cpu.append(time.process_time() - self._cpu)

    scores = [max(-25.0, min(0.0, h)) for h in human]
    with tempfile.TemporaryDirectory() as tmp:
        Dataset.from_dict({"reference": refs, "candidate": hyps, "score": scores}).save_to_disk(tmp + "/data")
        data = SEScoreDataModule(tmp + "/data", val_fraction=0.0, dev_judgments=str(_dev_file()), dev_items=2,
                                 batch_size=args.train_batch_size)
        module = SEScoreModule(encoder=args.encoder, layer_mix=args.layer_mix, encoder_freeze_fraction=0.0,
                               alignment=args.alignment, lora_r=args.lora_r, lora_alpha=args.lora_alpha,
                               hidden_sizes=args.hidden_sizes)
        timer = StepTimer()
        trainer = pl.Trainer(accelerator="cpu", devices=1, max_steps=args.train_steps + 3, limit_val_batches=0,
                             logger=False, enable_checkpointing=False, enable_progress_bar=False,
                             enable_model_summary=False, num_sanity_val_steps=0, callbacks=[timer],
                             precision=precision)
        trainer.fit(module, data)
    steady, steady_cpu = timer.times[3:] or timer.times, timer.cpu[3:] or timer.cpu
    return {"what": f"training step (batch {args.train_batch_size}, fwd+bwd+AdamW)", "items": len(steady),
            "unit": "steps", "wall_seconds": sum(steady), "cpu_seconds": sum(steady_cpu),
            "per_second": 1.0 / statistics.median(steady_cpu), "ratio_to_bare": None,
            "median_wall_seconds": statistics.median(steady), "median_cpu_seconds": statistics.median(steady_cpu)}


def _dev_file() -> Path:
    return data_dir() / "judgments" / "mt_mqm_wmt21_ted_zhen.jsonl"


def main() -> None:
    from sescore.regressor.scoring import DEFAULT_CHECKPOINT

    parser = argparse.ArgumentParser()
    parser.add_argument("--checkpoint", default=DEFAULT_CHECKPOINT)
    parser.add_argument("--encoder", default="packaged:minilm", help="with --untrained: the encoder to time")
    parser.add_argument("--untrained", action="store_true", help="random head over --encoder (no checkpoint needed)")
    parser.add_argument("--layer-mix", action="store_true", help="with --untrained: mix all layers (v1 architecture)")
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--train-steps", type=int, default=20)
    parser.add_argument("--train-batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--name", default="sescore", help="result file stem under bench/results")
    args = parser.parse_args()

    import torch

    from nlgmetrics.metaeval import read_jsonl
    from nlgmetrics.modelroles.batching import length_sorted_batches
    from sescore.regressor.scoring import sescore_scores

    rows = read_jsonl(_dev_file())[: args.segments]
    hyps = [r["hyp"] for r in rows]
    refs = [r["refs"][0] for r in rows]
    regressor, what, members = _regressor(args)
    # the training timing uses the checkpoint's own architecture (LoRA, alignment, head), or the untrained one's
    config = regressor.config
    args.encoder, args.layer_mix, args.alignment = config.encoder, config.layer_mix, config.alignment
    args.hidden_sizes = config.hidden_sizes
    args.lora_r, args.lora_alpha = (config.lora.r, config.lora.alpha) if config.lora else (None, 16)
    tokenizer, encoder, max_length = regressor.tokenizer, regressor.encoder, regressor.config.max_length
    hidden_states = regressor.layer_mix is not None

    def pre_tokenised(texts: list[str]) -> list[dict]:
        return [tokenizer([texts[i] for i in b], padding=True, truncation=True, max_length=max_length,
                          return_tensors="pt") for b in length_sorted_batches([len(t) for t in texts], args.batch_size)]

    unique = list(dict.fromkeys(hyps + refs))
    unique_batches = pre_tokenised(unique)
    pair_batches = pre_tokenised(hyps + refs)

    def bare(batches: list[dict]) -> None:
        with torch.inference_mode():
            for enc in batches:
                encoder(**enc, output_hidden_states=hidden_states)

    def toolkit() -> None:
        sescore_scores(regressor, hyps, refs, batch_size=args.batch_size)

    bare(unique_batches[:2])  # warm-up
    toolkit()
    w_bare, t_bare = best_times(lambda: bare(unique_batches), args.repeats)
    w_pairs, t_pairs = best_times(lambda: bare(pair_batches), args.repeats)
    w_toolkit, t_toolkit = best_times(toolkit, args.repeats)
    n = len(rows)
    out = [
        {"what": f"bare encoder forward, {len(unique)} distinct texts (pre-tokenised)", "items": n,
         "unit": "segments", "wall_seconds": w_bare, "cpu_seconds": t_bare, "per_second": n / t_bare,
         "ratio_to_bare": 1.0},
        {"what": "sescore_scores (tokenise, encode distinct texts, pool, head)", "items": n, "unit": "segments",
         "wall_seconds": w_toolkit, "cpu_seconds": t_toolkit, "per_second": n / t_toolkit,
         "ratio_to_bare": t_toolkit / t_bare},
        {"what": f"bare encoder forward, hyp+ref per segment ({2 * n} texts)", "items": n, "unit": "segments",
         "wall_seconds": w_pairs, "cpu_seconds": t_pairs, "per_second": n / t_pairs,
         "ratio_to_bare": t_pairs / t_bare},
    ]
    if len(members) > 1:
        from sescore.regressor.checkpoint import load_checkpoint
        from sescore.regressor.scoring import ensemble_scores

        regressors = [regressor] + [load_checkpoint(m, "cpu") for m in members[1:]]
        ensemble_scores(regressors, hyps[:64], refs[:64], batch_size=args.batch_size)  # warm-up
        w_ens, t_ens = best_times(lambda: ensemble_scores(regressors, hyps, refs, batch_size=args.batch_size),
                                  args.repeats)
        out.append({"what": f"ensemble_scores, all {len(members)} members (the folder's score)", "items": n,
                    "unit": "segments", "wall_seconds": w_ens, "cpu_seconds": t_ens, "per_second": n / t_ens,
                    "ratio_to_bare": t_ens / t_bare})
    if args.train_steps > 0:
        out.append(_train_steps_per_second(args, hyps, refs, [float(r["scores"]["mqm"]) for r in rows]))
    write_results(
        args.name,
        {"model": what, "encoder": args.encoder, "encoder_hash": regressor.encoder_hash, "layer_mix": args.layer_mix,
         "batch_size": args.batch_size, "segments": n, "distinct_texts": len(unique),
         "overhead_vs_bare": t_toolkit / t_bare - 1.0, "overhead_target": 0.2, "timing": "process CPU time"},
        out, ["what", "items", "unit", "cpu_seconds", "wall_seconds", "per_second", "ratio_to_bare"],
        f"SEScore throughput ({what}, CPU, batch {args.batch_size}; per_second and ratios from CPU time)",
    )


if __name__ == "__main__":
    main()
