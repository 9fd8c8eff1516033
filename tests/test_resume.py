"""nlgmetrics.resume: pickle-free training state, and a crashed SEScore fit resumed to the uninterrupted result;
nlgmetrics.weightfiles: the checks every checkpoint reader shares."""

from __future__ import annotations

import math
import random
from pathlib import Path

import numpy as np
import pytest
import pytorch_lightning as pl
import torch

from nlgmetrics.resume import FORMAT, flatten_state, load_state, save_state, unflatten_state


class Crash(pl.Callback):
    """Stands in for a power cut: fails right after optimizer step ``step`` (before any state of that step is saved,
    because Lightning runs checkpoint-writing callbacks last)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        if trainer.global_step == self.step:
            raise RuntimeError(f"simulated crash at step {self.step}")


class Terminate(pl.Callback):
    """What Lightning raises when the process receives SIGTERM."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx) -> None:
        from pytorch_lightning.utilities.exceptions import SIGTERMException

        if trainer.global_step == 3:
            raise SIGTERMException()


def test_state_round_trip_keeps_types_tensors_and_odd_values(tmp_path):
    state = {
        "state_dict": {"w": torch.arange(6, dtype=torch.float32).reshape(2, 3), "b": torch.zeros(3, dtype=torch.int64)},
        "optimizer_states": [
            {"state": {0: {"step": torch.tensor(4.0)}}, "param_groups": [{"betas": (0.9, 0.999), "params": [0]}]}
        ],
        "floats": [float("nan"), float("inf"), -0.5],
        "none": None,
        "flag": True,
        "tagged_looking": {"__tuple__": "a plain key"},
        "np": np.int64(3),
        "array": np.arange(3, dtype=np.uint32),
        "python_rng": random.getstate(),
    }
    path = save_state(state, tmp_path / "s.safetensors")
    back = load_state(path)
    assert torch.equal(back["state_dict"]["w"], state["state_dict"]["w"])
    assert back["state_dict"]["b"].dtype == torch.int64
    assert back["optimizer_states"][0]["state"][0]["step"].item() == 4.0  # integer key survives
    assert back["optimizer_states"][0]["param_groups"][0]["betas"] == (0.9, 0.999)
    assert math.isnan(back["floats"][0]) and back["floats"][1] == math.inf and back["floats"][2] == -0.5
    assert back["none"] is None and back["flag"] is True and back["np"] == 3
    assert back["tagged_looking"] == {"__tuple__": "a plain key"}
    assert np.array_equal(back["array"], state["array"]) and back["array"].dtype == np.uint32
    assert back["python_rng"] == state["python_rng"]
    assert not list(tmp_path.glob(".s.safetensors.*")), "the temporary file is renamed into place"


def test_values_that_need_pickle_are_refused_by_path():
    with pytest.raises(TypeError, match=r"checkpoint\.callbacks\.x holds a set"):
        flatten_state({"callbacks": {"x": {1, 2}}})
    with pytest.raises(TypeError, match="key"):
        flatten_state({"d": {(1, 2): 3}})
    tree, tensors = flatten_state({"t": torch.ones(2)})
    assert unflatten_state(tree, tensors)["t"].tolist() == [1.0, 1.0]


def test_missing_foreign_and_damaged_files_are_named(tmp_path):
    from safetensors.torch import save_file

    with pytest.raises(FileNotFoundError, match="training state not found"):
        load_state(tmp_path / "none.safetensors")
    save_file({"x": torch.ones(1)}, str(tmp_path / "foreign.safetensors"))
    with pytest.raises(ValueError, match="not a training state written by this toolkit"):
        load_state(tmp_path / "foreign.safetensors")
    good = save_state({"w": torch.ones(100)}, tmp_path / "good.safetensors")
    damaged = tmp_path / "damaged.safetensors"
    damaged.write_bytes(good.read_bytes()[:-50])
    with pytest.raises(ValueError, match="damaged or truncated"):
        load_state(damaged)
    pickled = tmp_path / "lightning.ckpt"
    torch.save({"w": torch.ones(1)}, pickled)
    with pytest.raises(ValueError, match="is a pickled PyTorch file .* not loaded"):
        load_state(pickled)
    assert load_state(good)["w"].shape == (100,) and FORMAT.startswith("nlgmetrics")


def test_loader_continues_an_epoch_where_its_state_says():
    from torch.utils.data import RandomSampler

    from nlgmetrics.resume import ResumableDataLoader
    from sescore.regressor.sampler import LengthBucketBatchSampler

    def loader():
        data = list(range(40))
        sampler = LengthBucketBatchSampler(
            RandomSampler(data, generator=torch.Generator().manual_seed(3)),
            4,
            False,
            lengths=[i % 7 for i in data],
            pool=3,
            seed=3,
        )
        return ResumableDataLoader(data, batch_sampler=sampler, generator=torch.Generator().manual_seed(4))

    straight = loader()
    epochs = [[b.tolist() for b in straight] for _ in range(3)]
    assert epochs[0] != epochs[1], "epochs differ"
    first = loader()
    seen = []
    for batch in first:  # epoch 0 fully, then 4 batches of epoch 1
        seen.append(batch.tolist())
    for i, batch in enumerate(first):
        seen.append(batch.tolist())
        if i == 3:
            break
    state = first.state_dict()
    resumed = loader()
    resumed.load_state_dict(state)
    rest = [b.tolist() for b in resumed] + [b.tolist() for b in resumed]
    assert seen + rest == epochs[0] + epochs[1] + epochs[2]
    at_end = loader()
    list(at_end)
    again = loader()
    again.load_state_dict(at_end.state_dict())  # saved on the epoch's last batch: next epoch starts afresh
    assert [b.tolist() for b in again] == epochs[1]


def _validation_steps(metrics_csv: Path) -> list[int]:
    import csv

    with open(metrics_csv, newline="") as handle:
        return [int(r["step"]) for r in csv.DictReader(handle) if r.get("val_tau_like")]


def _fit(tiny, dataset_dir, dev, tmp_path, name, extra):
    from nlgmetrics.cli import train

    config = Path(__file__).resolve().parents[1] / "configs" / "sescore" / "fit_offline.yaml"
    return train.main(
        [
            "fit",
            "--config",
            str(config),
            "--model.encoder",
            str(tiny["encoder"]),
            "--model.hidden_sizes",
            "[16, 8]",
            "--model.lora_r",
            "4",
            "--model.dropout",
            "0.3",
            "--data.dataset",
            str(dataset_dir),
            "--data.dev_judgments",
            str(dev),
            "--data.val_fraction",
            "0.2",
            "--data.batch_size",
            "16",
            "--trainer.max_epochs",
            "2",
            "--trainer.val_check_interval",
            "4",
            "--trainer.accelerator",
            "cpu",
            "--trainer.devices",
            "1",
            "--trainer.enable_progress_bar",
            "false",
            "--trainer.enable_model_summary",
            "false",
            "--trainer.logger.init_args.save_dir",
            str(tmp_path / "runs"),
            "--export.dirpath",
            str(tmp_path / name),
            "--resume.dirpath",
            str(tmp_path / f"{name}-resume"),
            "--resume.every_n_train_steps",
            "4",
            *extra,
        ]
    )


def test_crashed_fit_resumes_to_the_uninterrupted_weights(tiny, tmp_path, capsys):
    from datasets import Dataset
    from test_sescore_regressor import _synthetic_rows, _write_dev

    dataset_dir = tmp_path / "data"
    Dataset.from_dict(_synthetic_rows(60, seed=3)).save_to_disk(str(dataset_dir))
    dev = _write_dev(tmp_path / "dev.jsonl", items=5)
    assert _fit(tiny, dataset_dir, dev, tmp_path, "straight", []) == 0
    crash = ["--trainer.callbacks+=test_resume.Crash", "--trainer.callbacks.step", "7"]
    with pytest.raises(RuntimeError, match="simulated crash at step 7"):
        _fit(tiny, dataset_dir, dev, tmp_path, "crashed", crash)
    assert "the last resume state is" in capsys.readouterr().err
    saved = load_state(tmp_path / "crashed-resume" / "last.safetensors")
    # 13 batches per epoch, validation after every 4th: the state due at step 4 waits for step 5
    assert saved["global_step"] == 5 and saved["epoch"] == 0
    exporter = next(v for k, v in saved["callbacks"].items() if k.startswith("ExportBest"))
    assert exporter["best"] is not None, "the state holds what the validation after step 4 found"
    resume = ["--ckpt_path", str(tmp_path / "crashed-resume" / "last.safetensors")]
    assert _fit(tiny, dataset_dir, dev, tmp_path, "crashed", resume) == 0

    straight = load_state(tmp_path / "straight-resume" / "last.safetensors")
    resumed = load_state(tmp_path / "crashed-resume" / "last.safetensors")
    assert straight["global_step"] == resumed["global_step"] == 26  # the end of training is saved too
    logs = [_validation_steps(f) for f in sorted((tmp_path / "runs").rglob("metrics.csv"))]
    assert len(logs) == 3 and logs[0] == logs[1] + logs[2], "every validation ran once: none lost, none repeated"
    assert straight["frozen_weights"]["keys"], "LoRA's frozen encoder weights are left out of the state"
    for key, value in straight["state_dict"].items():
        assert torch.allclose(resumed["state_dict"][key], value, atol=1e-6), key
    moments = [s["exp_avg"] for s in straight["optimizer_states"][0]["state"].values()]
    again = [s["exp_avg"] for s in resumed["optimizer_states"][0]["state"].values()]
    assert all(torch.allclose(a, b, atol=1e-7) for a, b in zip(moments, again))
    # the exported best model is the same one too
    from sescore.regressor.checkpoint import read_hparams

    assert (
        read_hparams(tmp_path / "straight")["record"]["global_step"]
        == read_hparams(tmp_path / "crashed")["record"]["global_step"]
    )
    assert not list(tmp_path.rglob("*.ckpt")), "no pickled checkpoint is ever written"

    # the same fit in pieces (--resume.stop_after_minutes): a budget of 0 minutes ends each piece after its first
    # step that no dev check follows; a piece exits with its own status, and the pieces end where one run ends
    from nlgmetrics.resume import PieceEnded

    state = tmp_path / "pieces-resume" / "last.safetensors"
    capsys.readouterr()
    ended = PieceEnded.EXIT_STATUS
    assert _fit(tiny, dataset_dir, dev, tmp_path, "pieces", ["--resume.stop_after_minutes", "0"]) == ended
    assert "piece ended after its 0 minutes at step 1" in capsys.readouterr().err
    assert load_state(state)["global_step"] == 1
    budget = ["--resume.stop_after_minutes", "0", "--ckpt_path", str(state)]
    assert _fit(tiny, dataset_dir, dev, tmp_path, "pieces", budget) == ended
    assert load_state(state)["global_step"] == 2
    assert _fit(tiny, dataset_dir, dev, tmp_path, "pieces", ["--ckpt_path", str(state)]) == 0
    pieces = load_state(state)
    assert pieces["global_step"] == 26
    for key, value in straight["state_dict"].items():
        assert torch.allclose(pieces["state_dict"][key], value, atol=1e-6), key
    runs = sorted((tmp_path / "runs").rglob("metrics.csv"))[3:]  # the pieces' (a piece without a dev check has none)
    assert logs[0] == [step for f in runs for step in _validation_steps(f)], "no dev check added, none lost"
    assert (
        read_hparams(tmp_path / "pieces")["record"]["global_step"]
        == read_hparams(tmp_path / "straight")["record"]["global_step"]
    )


def test_a_piece_budget_needs_a_state_to_continue_from():
    from nlgmetrics.resume import ResumeState

    with pytest.raises(ValueError, match="every_n_train_steps > 0"):
        ResumeState(every_n_train_steps=0, stop_after_minutes=30)
    with pytest.raises(ValueError, match="stop_after_minutes must be"):
        ResumeState(stop_after_minutes=-1)


# 6 steps per epoch with validation at each epoch's end: the state due at step 6 is saved at 7 (first of epoch 2)
@pytest.mark.parametrize("crash_step,saved_step", [(7, 7), (9, 8)])
def test_crashed_nli_training_resumes_to_the_uninterrupted_adapter(tiny, tmp_path, monkeypatch, crash_step, saved_step):
    from safetensors.torch import load_file
    from test_nli import _tiny_nli_data

    from nlgmetrics.nli.checkpoint import LoraShape
    from nlgmetrics.nli.training import NLITrainConfig, train_nli
    from nlgmetrics.resume import ResumeState

    data = _tiny_nli_data(tmp_path / "train.jsonl")

    def config(name: str, **extra) -> NLITrainConfig:
        return NLITrainConfig(
            base=str(tiny["encoder"]),
            train_files=[str(data)],
            test_files={},
            dev_size=6,
            batch_size=8,
            epochs=2,
            lr=1e-3,
            lora=LoraShape(r=2, alpha=4, target_modules=r".*\.(query|value)"),
            output=str(tmp_path / name),
            accelerator="cpu",
            devices=1,
            resume_every=2,
            **extra,
        )

    train_nli(config("straight"))  # 6 steps per epoch, 12 in all
    original = ResumeState.on_train_batch_end

    def crash_after(self, trainer, *args):
        original(self, trainer, *args)
        if trainer.global_step == crash_step:
            raise RuntimeError("simulated crash")

    monkeypatch.setattr(ResumeState, "on_train_batch_end", crash_after)
    with pytest.raises(RuntimeError, match="simulated crash"):
        train_nli(config("crashed"))
    monkeypatch.undo()
    state = tmp_path / "crashed.resume" / "last.safetensors"
    assert load_state(state)["global_step"] == saved_step
    report = train_nli(config("crashed", resume_from=str(state)))
    assert report["resumed_from"] == str(state)
    straight = load_state(tmp_path / "straight.resume" / "last.safetensors")
    resumed = load_state(state)
    assert straight["global_step"] == resumed["global_step"] == 12  # the end of training is saved too
    for key, value in straight["state_dict"].items():
        assert torch.allclose(resumed["state_dict"][key], value, atol=1e-6), key
    shipped = [load_file(str(tmp_path / name / "adapter.safetensors")) for name in ("straight", "crashed")]
    assert all(torch.equal(shipped[0][k], shipped[1][k]) for k in shipped[0]), "the exported fp16 adapters agree"
    # the frozen base is named and hashed, not stored: the state holds what trains (LoRA, pooler, classifier)
    frozen = straight["frozen_weights"]["keys"]
    assert len(frozen) > len(straight["state_dict"]) and not set(frozen) & set(straight["state_dict"])
    assert any("lora_" in k for k in straight["state_dict"]) and not any("lora_" in k for k in frozen)
    if crash_step == 7:  # once is enough: a state whose frozen weights differ from the base is refused by name
        straight["frozen_weights"]["sha256"] = "0" * 64
        tampered = save_state(straight, tmp_path / "tampered.safetensors")
        with pytest.raises(ValueError, match="trained on other frozen weights"):
            train_nli(config("tampered", resume_from=str(tampered)))


def test_sigterm_ends_train_py_fit_with_a_failure_status(tiny, tmp_path, capsys):
    from datasets import Dataset
    from test_sescore_regressor import _synthetic_rows, _write_dev

    dataset_dir = tmp_path / "data"
    Dataset.from_dict(_synthetic_rows(30, seed=3)).save_to_disk(str(dataset_dir))
    dev = _write_dev(tmp_path / "dev.jsonl", items=5)
    status = _fit(tiny, dataset_dir, dev, tmp_path, "terminated", ["--trainer.callbacks+=test_resume.Terminate"])
    assert status == 143, "a terminated fit must not exit as if it had finished"
    assert "terminated (SIGTERM)" in capsys.readouterr().err


def test_read_format_yaml_names_the_owner_and_the_file_for_each_way_a_checkpoint_yaml_is_broken(tmp_path):
    from nlgmetrics.weightfiles import read_format_yaml

    class Broken(Exception):
        pass

    file = tmp_path / "hparams.yaml"
    with pytest.raises(Broken, match=r"^model X: no hparams.yaml$"):
        read_format_yaml(file, "fmt/1", "model X", Broken)
    with pytest.raises(Broken, match=r"^model X: export was interrupted$"):
        read_format_yaml(file, "fmt/1", "model X", Broken, missing="export was interrupted")
    file.write_bytes(b"format: [fmt/1\n")
    with pytest.raises(Broken, match=r"^model X: hparams.yaml is not valid YAML"):
        read_format_yaml(file, "fmt/1", "model X", Broken)
    file.write_bytes(b"format: \xff\xfe\n")
    with pytest.raises(Broken, match=r"^model X: hparams.yaml is not valid YAML"):
        read_format_yaml(file, "fmt/1", "model X", Broken)
    for body in ("format: fmt/2\n", "- format: fmt/1\n", ""):
        file.write_text(body)
        with pytest.raises(Broken, match=r"^model X: hparams.yaml is not a 'fmt/1' file$"):
            read_format_yaml(file, "fmt/1", "model X", Broken)
    file.write_text("format: fmt/1\nlayers: 3\n")
    assert read_format_yaml(file, "fmt/1", "model X", Broken) == {"format": "fmt/1", "layers": 3}


def test_training_bounds_glibcs_malloc_arenas_unless_the_user_chose(monkeypatch):
    import ctypes
    import sys

    from nlgmetrics.cli import train

    calls = []

    class _Libc:
        def mallopt(self, param, value):
            calls.append((param, value))
            return 1

    monkeypatch.setattr(ctypes, "CDLL", lambda name: _Libc())
    monkeypatch.setattr(sys, "platform", "linux")
    for name in ("MALLOC_ARENA_MAX", "MALLOC_TRIM_THRESHOLD_", "NLGMETRICS_MALLOC"):
        monkeypatch.delenv(name, raising=False)
    assert train.bound_malloc() and calls == [(train.M_ARENA_MAX, 2), (train.M_TRIM_THRESHOLD, 128 * 2**20)]
    calls.clear()
    monkeypatch.setenv("MALLOC_ARENA_MAX", "4")  # the user's own setting wins
    assert not train.bound_malloc() and calls == []
    monkeypatch.delenv("MALLOC_ARENA_MAX")
    monkeypatch.setenv("NLGMETRICS_MALLOC", "default")
    assert not train.bound_malloc() and calls == []
