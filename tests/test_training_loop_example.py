"""``examples/training_loop.py`` runs as written, on the tiny models, and logs what the metrics compute.

The example is the documented way to use SEScore, MENLI and MARS inside a Lightning loop, so it is held to three
promises: every epoch logs each metric, the logged value is the score of that epoch's hypotheses computed directly
(by each metric's Scorer), and nothing leaks from one epoch into the next (nor from the sanity check into the
first): an accumulated state would log a mix of two epochs' hypotheses, which differ because the toy generator
learns.
"""

from __future__ import annotations

import csv
import importlib.util
import sys
import warnings
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Any

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
EXAMPLE = REPO / "examples" / "training_loop.py"
N_ITEMS = 4
EPOCHS = 2


def _import_example() -> ModuleType:
    """The example module by path: examples/ never goes on sys.path for the session."""
    name = "nlgmetrics_examples_training_loop"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look the module up by name
    spec.loader.exec_module(module)
    return module


def _tiny_sescore_checkpoint(tiny: dict[str, Path], root: Path) -> str:
    """An exported SEScore regressor on the tiny encoder, its head moved off zero so scores vary."""
    from sescore.regressor.checkpoint import export_checkpoint
    from sescore.regressor.module import SEScoreModule

    torch.manual_seed(0)
    module = SEScoreModule(encoder=str(tiny["encoder"]), hidden_sizes=[16], layer_mix=True)
    with torch.no_grad():
        module.regressor.head[-1].weight.normal_(0.0, 0.5)
    return str(export_checkpoint(module.regressor.eval(), root / "sescore"))


def _tiny_mars_config(tiny: dict[str, Path], root: Path) -> dict[str, Any]:
    """MARS on the tiny Llama and encoder, two masking ratios: the cheapest run that still augments."""
    return {
        "models": {
            "causal_lm": str(tiny["llama"]),
            "encoder": str(tiny["encoder"]),
            "spacy": "packaged:en_core_web_sm",
        },
        "masking": {"ratios": [0.0, 0.4]},
        "cloze": {"lockstep_references": 4},
        "cache_dir": str(root / "mars_cache"),
        "progress": False,
        "device": "cpu",
    }


@pytest.fixture(scope="module")
def run(tiny: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> SimpleNamespace:
    """One two-epoch run of the example, with a callback that records each epoch's hypotheses and metric state."""
    import pytorch_lightning as pl

    example = _import_example()
    root = tmp_path_factory.mktemp("training_loop")
    items = example.load_items(limit=N_ITEMS)
    checkpoint, mars_config = _tiny_sescore_checkpoint(tiny, root), _tiny_mars_config(tiny, root)
    module = example.ToyTranslator(
        items, sescore_checkpoint=checkpoint, nli_model=str(tiny["nli"]), mars_config=mars_config, metric_batch_size=2
    )
    epochs: list[dict[str, Any]] = []

    class Recorder(pl.Callback):
        """Runs before the module's on_validation_epoch_end: sees the state that compute() is about to read."""

        def on_validation_epoch_end(self, trainer: pl.Trainer, pl_module: pl.LightningModule) -> None:
            if trainer.sanity_checking:
                return
            hyps = pl_module.generate(torch.arange(N_ITEMS))
            sizes = {
                name: sum(len(part) for part in metric.scores)
                for name, metric in (
                    ("sescore", pl_module.sescore),
                    ("menli", pl_module.menli),
                    ("mars", pl_module.mars),
                )
            }
            epochs.append({"epoch": trainer.current_epoch, "hyps": hyps, "state_sizes": sizes})

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Lightning's advice on dataloader workers and the like
        trainer = example.fit(
            module,
            items,
            epochs=EPOCHS,
            accelerator="cpu",
            batch_size=2,
            log_dir=root / "logs",
            callbacks=[Recorder()],
            num_sanity_val_steps=1,
            enable_progress_bar=False,
            enable_model_summary=False,
        )
    return SimpleNamespace(
        example=example,
        module=module,
        trainer=trainer,
        epochs=epochs,
        items=items,
        checkpoint=checkpoint,
        mars_config=mars_config,
        nli=str(tiny["nli"]),
    )


def _logged_by_epoch(trainer: Any) -> dict[int, dict[str, float]]:
    """The CSV logger's validation rows: epoch -> {metric name: value}."""
    text = (Path(trainer.logger.log_dir) / "metrics.csv").read_text(encoding="utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    logged: dict[int, dict[str, float]] = {}
    for row in rows:
        values = {k: float(v) for k, v in row.items() if k.startswith("val/") and v != ""}
        if values:
            logged.setdefault(int(row["epoch"]), {}).update(values)
    return logged


def _direct_means(run: SimpleNamespace, hyps: list[str]) -> dict[str, float]:
    """Each metric's mean over ``hyps``, from its Scorer on the same models (not from the Metric class)."""
    from mars.scorer import build
    from menli.scorer import MENLIScorer
    from sescore.scorer import SEScoreScorer

    refs = [item.reference for item in run.items]
    scores = {
        "val/sescore": SEScoreScorer(run.checkpoint, device="cpu").score(hyps, refs),
        "val/menli": MENLIScorer(run.nli, device="cpu").score(hyps, refs),
        "val/mars": build(run.mars_config).score(hyps, refs),
    }
    return {name: sum(values) / len(values) for name, values in scores.items()}


@pytest.fixture(scope="module")
def direct(run: SimpleNamespace) -> dict[int, dict[str, float]]:
    """Epoch -> each metric's mean over that epoch's hypotheses, scored once for both tests that need it."""
    return {record["epoch"]: _direct_means(run, record["hyps"]) for record in run.epochs}


def test_every_epoch_logs_each_metric_equal_to_direct_scoring(run, direct):
    logged = _logged_by_epoch(run.trainer)
    assert sorted(logged) == sorted(direct) == list(range(EPOCHS))
    for epoch, values in logged.items():
        assert set(values) == set(run.example.METRIC_NAMES)
        for name in run.example.METRIC_NAMES:  # two updates of 2 vs one batch: same to the last bits
            assert values[name] == pytest.approx(direct[epoch][name], rel=1e-9, abs=1e-12), (epoch, name)
    last = logged[EPOCHS - 1]
    for name in run.example.METRIC_NAMES:
        assert float(run.trainer.callback_metrics[name]) == pytest.approx(last[name], rel=1e-9, abs=1e-12)


def test_metrics_are_reset_between_epochs_and_after_the_sanity_check(run, direct):
    assert [record["epoch"] for record in run.epochs] == list(range(EPOCHS))
    first, second = run.epochs[0]["hyps"], run.epochs[1]["hyps"]
    assert first != second, "the toy generator should change its outputs between epochs, or this test proves nothing"
    for record in run.epochs:  # only this epoch's items, never the sanity batch's or the previous epoch's
        assert record["state_sizes"] == {"sescore": N_ITEMS, "menli": N_ITEMS, "mars": N_ITEMS}
    logged = _logged_by_epoch(run.trainer)
    for name in run.example.METRIC_NAMES:
        accumulated = (direct[0][name] + direct[1][name]) / 2  # a forgotten reset: both epochs' N_ITEMS scores
        if direct[0][name] != pytest.approx(direct[1][name], rel=1e-4):
            assert logged[1][name] != pytest.approx(accumulated, rel=1e-4), name
    for metric in (run.module.sescore, run.module.menli, run.module.mars):
        assert metric.scores == []  # reset after the last epoch too


def test_metrics_ride_along_as_modules_without_parameters(run):
    module = run.module
    children = dict(module.named_children())
    assert {"sescore", "menli", "mars"} <= set(children)  # so the Trainer's .to(device) reaches their state
    assert [name for name, _ in module.named_parameters()] == ["logits"]  # the optimizer sees the generator only
    assert set(module.state_dict()) == {"logits"}  # no metric model or state in a checkpoint
    for metric in (module.sescore, module.menli, module.mars):
        assert metric.device == module.device


def test_command_line_defaults_are_the_shipped_models(capsys):
    from menli.scorer import DEFAULT_NLI
    from sescore.scorer import DEFAULT_CHECKPOINT

    example = _import_example()
    with pytest.raises(SystemExit) as exit_info:
        example.main(["--help"])
    assert exit_info.value.code == 0
    text = " ".join(capsys.readouterr().out.split())
    for default in (DEFAULT_CHECKPOINT, DEFAULT_NLI, "mars/offline.yaml"):
        assert default in text
