"""The device paths a GPU user takes, on tiny models: scoring on a device equals scoring on the CPU within a stated
tolerance, a SEScore fit step and an NLI fit step run under bf16 autocast, and the command line scores with
``--device`` and ``--devices 1``.

The device is ``$NLGMETRICS_TEST_DEVICE`` (default ``cpu``): the normal suite runs these paths on the CPU (bf16
autocast, Lightning's single-device strategy, the CLI's device flags), and ``bench/gpu_check.sh`` runs the same file
with ``cuda`` on a machine that has one. With ``$NLGMETRICS_DEVICE_REPORT`` set, each check appends its timings and
differences to that JSON-lines file, which the script turns into ``bench/results/gpu.json``.

Tolerance: float32 scores on a GPU differ from the CPU's in the last digits (other kernels, other summation
order), so "equal" is ``max |device - cpu| <= 1e-4`` on scores in [0, 1] (or SEScore's unit scale); bf16 fit steps
are checked for finite losses and changed weights, not for equality.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import numpy as np
import pytest
import torch

DEVICE = os.environ.get("NLGMETRICS_TEST_DEVICE", "cpu")
REPORT = os.environ.get("NLGMETRICS_DEVICE_REPORT")
TOLERANCE = 1e-4
HYPS = ["the cat sat on the mat", "a dog runs in the park today", "no one came", "the man reads a long book"]
REFS = ["the cat sat on a mat", "a dog ran in the park", "nobody came at all", "a man reads the book"]

if DEVICE.startswith("cuda") and not torch.cuda.is_available():
    pytest.skip(f"NLGMETRICS_TEST_DEVICE={DEVICE} but torch sees no CUDA device", allow_module_level=True)


def _record(check: str, **values) -> None:
    if REPORT:
        with open(REPORT, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"check": check, "device": DEVICE, **values}) + "\n")


def _timed(function):
    started = time.perf_counter()
    result = function()
    if DEVICE.startswith("cuda"):
        torch.cuda.synchronize()
    return result, time.perf_counter() - started


@pytest.fixture(scope="module")
def sescore_checkpoint(tiny, tmp_path_factory):
    """A tiny SEScore checkpoint, fitted for a few steps on the device under bf16 autocast, then exported."""
    import pytorch_lightning as pl
    from datasets import Dataset
    from tiny_models import tiny_corpus

    from sescore.regressor.datamodule import SEScoreDataModule
    from sescore.regressor.export import ExportBest
    from sescore.regressor.module import SEScoreModule

    root = tmp_path_factory.mktemp("device_sescore")
    rng = np.random.default_rng(0)
    rows: dict[str, list] = {"reference": [], "candidate": [], "score": [], "variant_index": []}
    for sentence in tiny_corpus(24, seed=1)[-24:]:
        for k in range(3):
            words = sentence.split()
            for _ in range(min(k, len(words) - 1)):
                del words[int(rng.integers(0, len(words)))]
            rows["reference"].append(sentence)
            rows["candidate"].append(" ".join(words))
            rows["score"].append(-5.0 * k)
            rows["variant_index"].append(k)
    Dataset.from_dict(rows).save_to_disk(str(root / "data"))
    pl.seed_everything(7, verbose=False)
    module = SEScoreModule(encoder=str(tiny["encoder"]), hidden_sizes=(16, 8), head_lr=1e-2, encoder_lr=1e-3)
    data = SEScoreDataModule(str(root / "data"), val_fraction=0.2, dev_judgments=None, batch_size=8)
    before = {k: v.detach().clone() for k, v in module.regressor.state_dict().items()}
    trainer = pl.Trainer(
        accelerator="gpu" if DEVICE.startswith("cuda") else "cpu",
        devices=1,
        precision="bf16-mixed",
        max_steps=4,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
        callbacks=[ExportBest(str(root / "ckpt"), monitor="val_loss", mode="min")],
    )
    _, seconds = _timed(lambda: trainer.fit(module, data))
    after = module.regressor.state_dict()
    changed = sum(not torch.equal(before[k], after[k].detach().to(before[k].device)) for k in before)
    loss = float(trainer.callback_metrics.get("train_loss", torch.tensor(float("nan"))))
    _record("sescore fit, 4 steps, bf16-mixed", seconds=round(seconds, 3), changed_tensors=changed, loss=loss)
    return root / "ckpt", changed, loss


def test_sescore_fit_step_runs_in_bf16_on_the_device(sescore_checkpoint):
    folder, changed, loss = sescore_checkpoint
    assert changed > 0, "no weight moved: the optimizer stepped nothing"
    assert np.isfinite(loss)
    assert (folder / "model.safetensors").is_file()


def test_nli_fit_step_runs_in_bf16_on_the_device(tiny, tmp_path):
    from nlgmetrics.nli import load_nli
    from nlgmetrics.nli.checkpoint import LoraShape
    from nlgmetrics.nli.training import NLITrainConfig, train_nli

    rows = [
        {"premise": f"the {a} runs", "hypothesis": h.format(a), "label": label, "source": "toy"}
        for a in ("cat", "dog", "man", "child")
        for label, h in enumerate(("a {} runs", "a {} sleeps", "no {} runs"))
    ] * 3
    data = tmp_path / "nli.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    config = NLITrainConfig(
        base=str(tiny["encoder"]),
        train_files=[str(data)],
        test_files={"toy": str(data)},
        dev_size=6,
        batch_size=8,
        epochs=1,
        lr=1e-3,
        precision="bf16-mixed",
        lora=LoraShape(r=2, alpha=4, target_modules=r".*\.(query|value)"),
        output=str(tmp_path / "ckpt"),
        accelerator="gpu" if DEVICE.startswith("cuda") else "cpu",
        devices=1,
        resume_every=0,
    )
    report, seconds = _timed(lambda: train_nli(config))
    accuracy = report["tests"]["toy"]["raw"]["accuracy"]
    _record("nli fit, 1 epoch, bf16-mixed", seconds=round(seconds, 3), accuracy=accuracy)
    assert 0.0 <= accuracy <= 1.0
    probs = load_nli(str(tmp_path / "ckpt"), DEVICE).predict_proba(["the cat runs"], ["a cat runs"])
    assert probs.shape == (1, 3) and np.allclose(probs.sum(), 1.0, atol=1e-4)


def _options(name: str, tiny, checkpoint: Path) -> dict:
    return {
        "bertscore": {"encoder": str(tiny["encoder"])},
        "menli": {"nli_model": str(tiny["nli"])},
        "sescore": {"checkpoint": [str(checkpoint)]},
    }[name]


@pytest.mark.parametrize("name", ["bertscore", "menli", "sescore"])
def test_scores_on_the_device_equal_the_cpu_scores(name, tiny, sescore_checkpoint):
    from nlgmetrics import load_metric

    options = _options(name, tiny, sescore_checkpoint[0])
    cpu = np.asarray(load_metric(name, device="cpu", **options).score(HYPS, REFS))
    metric = load_metric(name, device=DEVICE, **options)
    scores, seconds = _timed(lambda: np.asarray(metric.score(HYPS, REFS)))
    difference = float(np.max(np.abs(scores - cpu)))
    _record(f"score {name}", seconds=round(seconds, 4), max_abs_difference=difference, tolerance=TOLERANCE)
    assert difference <= TOLERANCE, f"{name} on {DEVICE} differs from the CPU by {difference:.2e}"


def test_the_command_line_scores_with_device_and_devices_1(tiny, tmp_path, capsys):
    from nlgmetrics.cli.evaluate import main

    hyps, refs = tmp_path / "hyps.txt", tmp_path / "refs.txt"
    hyps.write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    refs.write_text("\n".join(REFS) + "\n", encoding="utf-8")
    results = {}
    for device in dict.fromkeys(["cpu", DEVICE]):
        argv = ["score", "--metric", "bertscore", "--encoder", str(tiny["encoder"]), "--hyps", str(hyps)]
        argv += ["--refs", str(refs), "--device", device, "--devices", "1"]
        code, seconds = _timed(lambda: main(argv))
        assert code == 0
        results[device] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
        if device == DEVICE:
            _record("command line score --devices 1", seconds=round(seconds, 3))
    assert results[DEVICE]["n"] == len(HYPS)
    difference = abs(results[DEVICE]["system_score"] - results["cpu"]["system_score"])
    assert difference <= TOLERANCE
