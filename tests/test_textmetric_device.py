"""The torchmetrics shells score on the metric's device: a model loaded before ``.to(device)`` moved the metric is
loaded again there (or moved, for SEScore), while a model object the caller passed in stays where it was put."""

from __future__ import annotations

import torch

from mars import MARS
from menli import MENLI


def test_menli_reloads_its_model_after_the_metric_moved(tiny, monkeypatch):
    metric = MENLI(str(tiny["nli"]))
    loads = []
    original = MENLI._load_model
    monkeypatch.setattr(MENLI, "_load_model", lambda self: loads.append(str(self.device)) or original(self))
    metric._model()
    metric._model()
    assert loads == ["cpu"]  # same device: loaded once
    object.__setattr__(metric, "_model_device", torch.device("meta"))  # as if loaded before a .to()
    metric._model()
    assert loads == ["cpu", "cpu"] and metric._model_device == metric.device


def test_a_model_object_passed_in_is_never_replaced(tiny):
    from nlgmetrics.nli import load_nli

    nli = load_nli(str(tiny["nli"]), "cpu")
    nli_without_spec = type(nli)(**{**nli.__dict__, "spec": None})
    metric = MENLI(nli=nli_without_spec)
    object.__setattr__(metric, "_model_device", torch.device("meta"))
    assert metric._model() is nli_without_spec


def test_mars_takes_the_metrics_device_when_its_config_leaves_it_to_the_run(tiny, tmp_path):
    config = {
        "models": {
            "causal_lm": str(tiny["llama"]),
            "encoder": str(tiny["encoder"]),
            "masked_lm": str(tiny["bert_mlm"]),
            "spacy": "packaged:en_core_web_sm",
        },
        "cache_dir": str(tmp_path / "cache"),
    }
    assert MARS(config)._model().config.device == "cpu"  # "auto" in the config: the metric's device
    assert MARS({**config, "device": "cuda:1"})._model().config.device == "cuda:1"  # named: kept (loads lazily)
