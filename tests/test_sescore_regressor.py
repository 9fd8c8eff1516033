"""SEScore regressor: model, optimiser recipe, data split, fit, export/reload, scorer, metrics, DDP, CLI.

Everything runs on the tiny random BERT from ``tiny_models`` and a synthetic dataset built here, so the file
needs no shared data and no network.
"""

from __future__ import annotations

import csv
import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from ddp_worker import free_port

from nlgmetrics.metaeval import tau_like

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HEAD = (16, 8)


# ------------------------------------------------------------------------------------------------ fixtures
def _synthetic_rows(n_refs: int, seed: int) -> dict[str, list]:
    """Variants that lose k words get score -5k: a signal the tiny model can pick up within one epoch."""
    from tiny_models import tiny_corpus

    rng = np.random.default_rng(seed)
    rows: dict[str, list] = {"reference": [], "candidate": [], "score": [], "variant_index": []}
    for sentence in tiny_corpus(n_refs, seed=seed)[-n_refs:]:
        for variant in range(4):
            words = sentence.split()
            k = variant if len(words) > variant + 1 else 0
            for _ in range(k):
                del words[int(rng.integers(0, len(words)))]
            rows["reference"].append(sentence)
            rows["candidate"].append(" ".join(words))
            rows["score"].append(-5 * k)
            rows["variant_index"].append(variant)
    return rows


@pytest.fixture(scope="module")
def dataset_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from datasets import Dataset

    out = tmp_path_factory.mktemp("sescore_synthesis") / "data"
    Dataset.from_dict(_synthetic_rows(60, seed=3)).save_to_disk(str(out))
    return out


def _write_dev(path: Path, items: int, seed: int = 5) -> Path:
    """A judged file in the shared schema: per item three systems with different human scores."""
    from tiny_models import tiny_corpus

    with open(path, "w", encoding="utf-8") as handle:
        for item, sentence in enumerate(tiny_corpus(items, seed=seed)[-items:]):
            words = sentence.split()
            systems = [
                ("good", sentence, 0.0),
                ("short", " ".join(words[:-2]), -5.0),
                ("half", " ".join(words[::2]), -15.0),
            ]
            for system, hyp, mqm in systems:
                row = {
                    "lp": "en-en",
                    "item_id": item,
                    "system": system,
                    "src": "",
                    "refs": [sentence],
                    "hyp": hyp,
                    "scores": {"mqm": mqm},
                }
                handle.write(json.dumps(row) + "\n")
    return path


@pytest.fixture(scope="module")
def dev_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _write_dev(tmp_path_factory.mktemp("sescore_dev") / "dev.jsonl", items=7)


def _module(encoder: Path, **overrides):
    from sescore.regressor.module import SEScoreModule

    settings = dict(
        encoder=str(encoder),
        hidden_sizes=HEAD,
        layer_mix=True,
        head_lr=1e-2,
        encoder_lr=1e-3,
        encoder_freeze_fraction=0.3,
    )
    settings.update(overrides)
    return SEScoreModule(**settings)


def _small_data(dataset_dir: Path, dev_file: Path):
    """The tiny synthetic set with a 20% val split and the whole dev file: batches of 16, dev batches of 8."""
    from sescore.regressor.datamodule import SEScoreDataModule

    return SEScoreDataModule(
        str(dataset_dir),
        val_fraction=0.2,
        dev_judgments=str(dev_file),
        batch_size=16,
        eval_batch_size=8,
        dev_items=None,
    )


def _trainer(**overrides):
    import pytorch_lightning as pl

    settings = dict(
        accelerator="cpu",
        devices=1,
        max_epochs=1,
        logger=False,
        enable_checkpointing=False,
        enable_progress_bar=False,
        enable_model_summary=False,
        num_sanity_val_steps=0,
    )
    settings.update(overrides)
    return pl.Trainer(**settings)


def _train_mse(regressor, records) -> float:
    from sescore.functional import sescore_scores
    from sescore.regressor.scale import to_target

    preds = sescore_scores(regressor, [r["candidate"] for r in records], [r["reference"] for r in records])
    target = to_target(np.asarray([r["score"] for r in records]), regressor.config.output_scale)
    return float(np.mean((preds - target) ** 2))


@pytest.fixture(scope="module")
def fitted(tiny, dataset_dir, dev_file, tmp_path_factory):
    """One short fit shared by several tests: module, datamodule, loss before/after, exported folder."""
    import pytorch_lightning as pl

    from sescore.regressor.export import ExportBest

    pl.seed_everything(7, verbose=False)
    module = _module(tiny["encoder"])
    data = _small_data(dataset_dir, dev_file)
    data.setup("fit")
    module.regressor.eval()
    before = _train_mse(module.regressor, data.train_records)
    module.regressor.train()
    folder = tmp_path_factory.mktemp("sescore_export") / "best"
    exporter = ExportBest(str(folder))
    _trainer(callbacks=[exporter]).fit(module, data)
    module.regressor.eval()
    after = _train_mse(module.regressor, data.train_records)
    return {"module": module, "data": data, "before": before, "after": after, "folder": folder, "exporter": exporter}


# ------------------------------------------------------------------------------------------------- model
def test_forward_backward_reaches_head_mix_and_encoder_but_not_frozen_embeddings(tiny):
    module = _module(tiny["encoder"], freeze_embeddings=True)
    regressor = module.regressor
    preds = regressor(["the cat runs .", "a dog"], ["the cat runs.", "a big dog"])
    assert preds.shape == (2,) and torch.isfinite(preds).all()
    torch.nn.functional.mse_loss(preds, torch.tensor([1.0, 0.2])).backward()
    assert regressor.head[0].weight.grad.abs().sum() > 0
    assert regressor.layer_mix.weights.grad is not None and regressor.layer_mix.weights.grad.abs().sum() > 0
    grads = {n: p.grad for n, p in regressor.encoder.named_parameters()}
    assert any(g is not None and g.abs().sum() > 0 for n, g in grads.items() if "encoder.layer.1." in n)
    assert all(g is None for n, g in grads.items() if "embeddings" in n or n.startswith("pooler."))


def test_frozen_phase_runs_encoder_without_graph(tiny):
    module = _module(tiny["encoder"])
    preds = module.regressor(["a cat"], ["the cat"], encoder_grad=False)
    preds.sum().backward()
    assert all(p.grad is None for p in module.regressor.encoder.parameters())
    assert module.regressor.head[-1].weight.grad is not None


def test_layerwise_decay_and_separate_learning_rates(tiny):
    from sescore.regressor.optim import layer_depth, param_groups

    assert layer_depth("embeddings.word_embeddings.weight", 2) == 0
    assert layer_depth("encoder.layer.0.attention.self.query.weight", 2) == 1
    assert layer_depth("base_model.model.encoder.layer.1.output.dense.lora_A.default.weight", 2) == 2
    module = _module(tiny["encoder"], freeze_embeddings=False)
    reg = module.regressor
    groups = param_groups(reg.encoder, [reg.layer_mix, reg.head], 1e-3, 5e-3, reg.num_layers, 0.5)
    lrs = {g.get("depth", "head"): g["lr"] for g in groups}
    assert lrs == {0: pytest.approx(2.5e-4), 1: pytest.approx(5e-4), 2: pytest.approx(1e-3), "head": 5e-3}
    counted = sum(p.numel() for g in groups for p in g["params"])
    assert counted == sum(p.numel() for p in reg.parameters() if p.requires_grad)
    with pytest.raises(ValueError, match="layerwise_decay"):
        param_groups(reg.encoder, [reg.head], 1e-3, 5e-3, reg.num_layers, 1.5)


def test_config_rejects_bad_values():
    from sescore.regressor.config import RegressorConfig

    with pytest.raises(ValueError, match="output scale"):
        RegressorConfig(output_scale="percent")
    with pytest.raises(ValueError, match="dropout"):
        RegressorConfig(dropout=1.0)


def test_target_scales():
    from sescore.regressor.scale import describe, to_target

    assert to_target(-25.0, "unit") == 0.0 and to_target(0.0, "unit") == 1.0 and to_target(-5.0, "unit") == 0.8
    assert to_target(-5.0, "raw") == -5.0
    assert describe("unit")["range"] == [0.0, 1.0]


# -------------------------------------------------------------------------------------------------- data
def test_split_by_reference_never_leaks_and_is_stable():
    from sescore.regressor.split import split_by_reference

    rows = _synthetic_rows(200, seed=11)
    refs = rows["reference"]
    train, val = split_by_reference(refs, 0.25, seed=13)
    assert sorted(train + val) == list(range(len(refs)))
    assert not {refs[i] for i in train} & {refs[i] for i in val}
    share = len({refs[i] for i in val}) / len(set(refs))
    assert 0.1 < share < 0.4
    assert split_by_reference(refs, 0.25, seed=13) == (train, val)
    reversed_val = {refs[::-1][i] for i in split_by_reference(refs[::-1], 0.25, 13)[1]}
    assert reversed_val == {refs[i] for i in val}
    assert split_by_reference(refs, 0.25, seed=14)[1] != val
    with pytest.raises(ValueError, match="val_fraction"):
        split_by_reference(refs, 1.0, seed=1)


def test_length_bucket_sampler_covers_every_index_once():
    from torch.utils.data import RandomSampler

    from sescore.regressor.sampler import LengthBucketBatchSampler

    lengths = list(np.random.default_rng(0).integers(1, 100, size=103))
    sampler = LengthBucketBatchSampler(
        RandomSampler(range(103), generator=torch.Generator().manual_seed(1)),
        batch_size=8,
        drop_last=False,
        lengths=lengths,
        pool=4,
        seed=2,
    )
    batches = list(sampler)
    assert len(batches) == len(sampler) == 13
    assert sorted(i for b in batches for i in b) == list(range(103))
    assert all(lengths[b[j]] <= lengths[b[j + 1]] for b in batches for j in range(len(b) - 1))
    assert list(sampler) != batches  # a new order every epoch


def test_datamodule_reads_splits_and_dev(dataset_dir, dev_file):
    from sescore.regressor.datamodule import SEScoreDataModule

    data = SEScoreDataModule(str(dataset_dir), val_fraction=0.2, dev_judgments=str(dev_file), dev_items=3)
    data.setup("fit")
    assert len(data.train_records) + len(data.val_records) == 240
    assert not {r["reference"] for r in data.train_records} & {r["reference"] for r in data.val_records}
    assert len(data.dev_records) == 9 and {r["item"] for r in data.dev_records} == {0, 1, 2}
    loaders = data.val_dataloader()
    assert len(loaders) == 2
    batch = next(iter(loaders[1]))
    assert set(batch) == {"candidate", "reference", "human", "row", "item", "set"}
    train_batch = next(iter(data.train_dataloader()))
    assert train_batch["score"].dtype == torch.float32 and len(train_batch["candidate"]) == 8


def test_bad_synthesis_data_is_named(tmp_path, dev_file):
    from datasets import Dataset

    from nlgmetrics.metaeval import InputError
    from sescore.regressor.sources import load_dev_judgments, load_synthesis

    with pytest.raises(InputError, match="no such directory"):
        load_synthesis(tmp_path / "missing")
    Dataset.from_dict({"reference": ["a b"], "candidate": ["a"]}).save_to_disk(str(tmp_path / "nocol"))
    with pytest.raises(InputError, match="missing column"):
        load_synthesis(tmp_path / "nocol")
    Dataset.from_dict({"reference": ["a b"], "candidate": ["a"], "score": [3.0]}).save_to_disk(str(tmp_path / "range"))
    with pytest.raises(InputError, match=r"row 0 has score 3.0"):
        load_synthesis(tmp_path / "range")
    bad = tmp_path / "dev.jsonl"
    bad.write_text(json.dumps({"lp": "x", "item_id": 1, "hyp": "a", "refs": ["b"], "scores": {}}) + "\n")
    with pytest.raises(InputError, match="scores.mqm"):
        load_dev_judgments(bad)


def test_uniform_labels_count_applied_edits_for_the_without_severity_ablation(tmp_path):
    from datasets import Dataset

    from nlgmetrics.metaeval import InputError
    from sescore.regressor.datamodule import SEScoreDataModule
    from sescore.regressor.sources import load_synthesis

    rows = {
        "reference": ["a b c", "a b c", "d e f"],
        "candidate": ["a c", "x b", "d e f g"],
        "score": [-1, -6, -5],
        "num_applied": [1, 2, 1],
    }
    Dataset.from_dict(rows).save_to_disk(str(tmp_path / "ok"))
    assert [r["score"] for r in load_synthesis(tmp_path / "ok")] == [-1.0, -6.0, -5.0]
    assert [r["score"] for r in load_synthesis(tmp_path / "ok", labels="uniform")] == [-1.0, -2.0, -1.0]
    Dataset.from_dict({k: v for k, v in rows.items() if k != "num_applied"}).save_to_disk(str(tmp_path / "old"))
    with pytest.raises(InputError, match="num_applied"):
        load_synthesis(tmp_path / "old", labels="uniform")
    with pytest.raises(ValueError, match="labels must be one of"):
        SEScoreDataModule(str(tmp_path / "ok"), labels="none")


# ------------------------------------------------------------------------------------------ fit + export
def test_one_epoch_fit_lowers_loss_and_exports_best(fitted):
    assert fitted["after"] < 0.7 * fitted["before"], (fitted["before"], fitted["after"])
    exporter = fitted["exporter"]
    assert exporter.exports >= 1 and exporter.best is not None and math.isfinite(exporter.best)
    assert (fitted["folder"] / "model.safetensors").is_file()
    from sescore.regressor.checkpoint import read_hparams

    hparams = read_hparams(fitted["folder"])
    assert hparams["output_scale"]["name"] == "unit" and hparams["output_scale"]["range"] == [0.0, 1.0]
    assert hparams["record"]["monitor"] == "val_tau_like"
    assert hparams["record"]["best"] == pytest.approx(exporter.best)
    assert hparams["record"]["data"]["train_pairs"] == len(fitted["data"].train_records)
    card = (fitted["folder"] / "README.md").read_text()  # the model card is written from the same record
    assert f"{len(fitted['data'].train_records)} training pairs" in card
    assert f"| val_tau_like | {hparams['record']['metrics']['val_tau_like']:.4f} |" in card


def test_export_reload_gives_identical_scores(fitted, tmp_path):
    from sescore.functional import sescore_scores
    from sescore.regressor.checkpoint import export_checkpoint, load_checkpoint

    regressor = fitted["module"].regressor.eval()
    folder = export_checkpoint(regressor, tmp_path / "ckpt", {"note": "test"})
    assert sorted(p.name for p in folder.iterdir()) == ["hparams.yaml", "model.safetensors"]
    reloaded = load_checkpoint(folder)
    hyps = ["the cat runs .", "a dog sees the house", "house", "the cat runs ."]
    refs = ["the cat runs .", "a dog sees the big house", "the house is red", ["x y", "the cat runs ."]]
    np.testing.assert_array_equal(sescore_scores(regressor, hyps, refs), sescore_scores(reloaded, hyps, refs))


def test_lora_checkpoint_is_small_and_reloads(tiny, tmp_path):
    from sescore.functional import sescore_scores
    from sescore.regressor.checkpoint import export_checkpoint, load_checkpoint

    module = _module(tiny["encoder"], lora_r=4, layer_mix=False)
    regressor = module.regressor
    trainable = {n for n, p in regressor.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n or n.startswith("head.") for n in trainable)
    with torch.no_grad():  # adapters start as a no-op; move them so the reload check means something
        for name, parameter in regressor.named_parameters():
            if "lora_B" in name:
                parameter.add_(0.05)
    regressor.eval()
    folder = export_checkpoint(regressor, tmp_path / "lora")
    full = export_checkpoint(_module(tiny["encoder"]).regressor, tmp_path / "full")
    assert (folder / "model.safetensors").stat().st_size < (full / "model.safetensors").stat().st_size
    hyps, refs = ["the cat runs .", "a dog"], ["the cat runs", "a big dog ."]
    np.testing.assert_allclose(
        sescore_scores(load_checkpoint(folder), hyps, refs), sescore_scores(regressor, hyps, refs), atol=1e-5
    )


def test_default_lora_adapts_every_attention_projection_of_bert_and_mpnet_encoders():
    """``--model.encoder packaged:mpnet`` is an issue-13 lever: with a BERT-only pattern LoRA wrapped MPNet's
    feed-forward layers and none of its attention (attn.q/k/v/o), silently. The default reaches both families'
    six projections per block; a pattern that reaches no attention projection is refused by name."""
    from transformers import BertConfig, BertModel, MPNetConfig, MPNetModel

    from nlgmetrics.modelroles.lora import attention_adapters
    from sescore.regressor.config import LoraSettings
    from sescore.regressor.model import add_lora

    shape = dict(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=40,
    )
    for encoder, names in (
        (MPNetModel(MPNetConfig(**shape)), ("attn.q", "attn.k", "attn.v", "attn.o")),
        (BertModel(BertConfig(**shape)), ("self.query", "self.key", "self.value", "output.dense")),
    ):
        wrapped = add_lora(encoder, LoraSettings(r=2, alpha=4))
        adapted, unadapted = attention_adapters(wrapped)
        assert unadapted == [] and len(adapted) == 8
        assert {name.split("encoder.layer.")[1] for name in adapted} == {
            f"{i}.attention.{part}" for i in range(2) for part in names
        }
        ffn = {
            n.rsplit(".lora_A", 1)[0].split("encoder.layer.")[1]
            for n, _ in wrapped.named_modules()
            if n.endswith("lora_A") and "attention" not in n
        }
        assert ffn == {f"{i}.{part}" for i in range(2) for part in ("intermediate.dense", "output.dense")}
    bert_only = r".*encoder\.layer\.\d+\.(attention\.self\.(query|key|value)|intermediate\.dense|output\.dense)"
    with pytest.raises(ValueError, match=r"matches none of the model's 8 attention projections.*attn"):
        add_lora(MPNetModel(MPNetConfig(**shape)), LoraSettings(r=2, alpha=4, target_modules=bert_only))


def test_greedy_alignment_matches_a_loop_and_handles_empty_sides():
    from sescore.regressor.layers import greedy_alignment

    gen = torch.Generator().manual_seed(3)
    cand = torch.nn.functional.normalize(torch.randn(3, 5, 4, generator=gen), dim=-1)
    ref = torch.nn.functional.normalize(torch.randn(3, 6, 4, generator=gen), dim=-1)
    cand_mask = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]], dtype=torch.bool)
    ref_mask = torch.tensor([[1, 1, 0, 0, 0, 0], [1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 0, 0]], dtype=torch.bool)
    got = greedy_alignment(cand, cand_mask, ref, ref_mask)
    for b in range(2):
        sim = cand[b][cand_mask[b]] @ ref[b][ref_mask[b]].T
        p, r = sim.max(1).values.mean(), sim.max(0).values.mean()
        torch.testing.assert_close(got[b], torch.stack([p, r, 2 * p * r / (p + r)]))
    assert torch.equal(got[2], torch.zeros(3))  # empty candidate: no NaN, no credit


def test_alignment_regressor_starts_as_bertscore_and_survives_export(tiny, tmp_path):
    """At initialisation the alignment variant is exactly BERTScore-F1 on the same encoder layer; after a
    change to the head it still reloads to identical scores (token states go through the scorer's cache)."""
    from nlgmetrics.baselines.scorers import BERTScorer
    from sescore.functional import sescore_scores
    from sescore.regressor.checkpoint import export_checkpoint, load_checkpoint

    regressor = _module(tiny["encoder"], layer_mix=False, alignment=True).regressor.eval()
    hyps = ["the cat runs .", "a dog sees the house", "house", "the cat runs ."]
    refs = ["the cat runs .", "a dog sees the big house", "the house is red", ["x y", "the cat runs ."]]
    from sescore.regressor.scale import bound_to_range

    raw = np.asarray(BERTScorer(encoder=str(tiny["encoder"])).score(hyps, refs))
    expected = bound_to_range(raw, "unit")
    np.testing.assert_allclose(sescore_scores(regressor, hyps, refs), expected, atol=1e-5)
    single = sescore_scores(regressor, hyps[:1], refs[:1])  # batch composition does not change a score
    np.testing.assert_allclose(single, sescore_scores(regressor, hyps, refs)[:1], atol=1e-6)
    with torch.no_grad():
        regressor.head[-1].bias.add_(0.25)
    folder = export_checkpoint(regressor, tmp_path / "align")
    reloaded = load_checkpoint(folder)
    assert reloaded.config.alignment and reloaded.align_skip is not None
    np.testing.assert_array_equal(sescore_scores(regressor, hyps, refs), sescore_scores(reloaded, hyps, refs))
    np.testing.assert_allclose(sescore_scores(reloaded, hyps, refs), bound_to_range(raw + 0.25, "unit"), atol=1e-5)
    assert sescore_scores(reloaded, hyps, refs).max() < 1.0  # the head overshoots; the declared range holds


def test_lexical_chrf_feature_starts_at_zero_weight_trains_and_survives_export(tiny, dataset_dir, dev_file, tmp_path):
    """A chrF input to the head (the learned combination of issue 56): untrained, the model is still F1 of the
    alignment; after training the skip weighs chrF; an export reloads with the feature and scores the same;
    scores of one pair do not depend on the batch; a config that cannot carry it is refused by name."""
    import sacrebleu

    from sescore.functional import sescore_scores
    from sescore.regressor.checkpoint import export_checkpoint, load_checkpoint
    from sescore.regressor.config import RegressorConfig
    from sescore.regressor.features import lexical_features

    hyps = ["the cat runs .", "a dog sees the house", "house", "the cat runs ."]
    refs = ["the cat runs .", "a dog sees the big house", "the house is red", ["x y", "the cat runs ."]]
    features = lexical_features(["chrf"], ["a dog sees the house"], ["a dog sees the big house"])
    assert features.shape == (1, 1)
    assert features[0, 0] == np.float32(
        sacrebleu.CHRF().sentence_score("a dog sees the house", ["a dog sees the big house"]).score / 100
    )
    plain = _module(tiny["encoder"], layer_mix=False, alignment=True).regressor.eval()
    module = _module(tiny["encoder"], layer_mix=False, alignment=True, lexical=["chrf"], encoder_freeze_fraction=0.0)
    assert module.regressor.config.lexical == ("chrf",)
    np.testing.assert_allclose(
        sescore_scores(module.regressor.eval(), hyps, refs), sescore_scores(plain, hyps, refs), atol=1e-6
    )
    module.regressor.train()
    data = _small_data(dataset_dir, dev_file)
    _trainer(limit_train_batches=4, limit_val_batches=2).fit(module, data)
    regressor = module.regressor.eval()
    assert float(regressor.align_skip.weight[0, 3]) != 0.0  # the chrF input moved
    scores = sescore_scores(regressor, hyps, refs)
    np.testing.assert_allclose(sescore_scores(regressor, hyps[1:2], refs[1:2]), scores[1:2], atol=1e-6)
    reloaded = load_checkpoint(export_checkpoint(regressor, tmp_path / "chrf"))
    assert reloaded.config.lexical == ("chrf",)
    np.testing.assert_array_equal(sescore_scores(reloaded, hyps, refs), scores)
    assert "lexical" not in plain.config.to_dict()  # checkpoints without the feature keep their old hparams
    with pytest.raises(ValueError, match="need alignment: true"):
        RegressorConfig(lexical=("chrf",))
    with pytest.raises(ValueError, match="unknown lexical features"):
        RegressorConfig(alignment=True, lexical=("bleurt",))
    with pytest.raises(ValueError, match="reads the pair features"):
        states = regressor.encode(regressor.tokenize(["a", "b"]), False)
        regressor.predict_states(states.rows(slice(0, 1)), states.rows(slice(1, 2)))


def test_nli_features_start_at_zero_weight_train_and_are_checked_on_load(tiny, dataset_dir, dev_file, tmp_path):
    """NLI probabilities as head inputs (the learned combination of issue 56): four features in a fixed order,
    the untrained model is still F1 of the alignment, training moves their skip weights, an export names the NLI
    model and its hash, reloads and scores the same, and a checkpoint whose NLI weights changed is refused."""
    import yaml

    from nlgmetrics.nli.model import load_nli
    from sescore.functional import sescore_scores
    from sescore.regressor.card import write_model_card
    from sescore.regressor.checkpoint import CheckpointError, export_checkpoint, load_checkpoint
    from sescore.regressor.config import RegressorConfig
    from sescore.regressor.features import NLI_FEATURES, nli_features

    nli_path = str(tiny["nli"])
    nli = load_nli(nli_path, "cpu")
    hyps = ["the cat runs .", "a dog sees the house", "house", "the cat runs ."]
    refs = ["the cat runs .", "a dog sees the big house", "the house is red", ["x y", "the cat runs ."]]
    features = nli_features(nli, ["a dog sees the house", "house"], ["a dog sees the big house", "the house"])
    forward = nli.predict_proba(["a dog sees the big house"], ["a dog sees the house"])[0]
    backward = nli.predict_proba(["a dog sees the house"], ["a dog sees the big house"])[0]
    assert features.shape == (2, len(NLI_FEATURES)) == (2, 4)
    np.testing.assert_allclose(features[0], [forward[0], forward[2], backward[0], backward[2]], rtol=1e-6)

    plain = _module(tiny["encoder"], layer_mix=False, alignment=True).regressor.eval()
    module = _module(tiny["encoder"], layer_mix=False, alignment=True, nli=nli_path, encoder_freeze_fraction=0.0)
    assert module.regressor.config.extra_inputs == 4
    np.testing.assert_allclose(
        sescore_scores(module.regressor.eval(), hyps, refs), sescore_scores(plain, hyps, refs), atol=1e-6
    )
    module.regressor.train()
    _trainer(limit_train_batches=4, limit_val_batches=2).fit(module, _small_data(dataset_dir, dev_file))
    regressor = module.regressor.eval()
    assert bool(regressor.align_skip.weight[0, 3:].ne(0).all())  # every NLI input moved
    scores = sescore_scores(regressor, hyps, refs)
    np.testing.assert_allclose(sescore_scores(regressor, hyps[1:2], refs[1:2]), scores[1:2], atol=1e-6)
    folder = export_checkpoint(regressor, tmp_path / "nli")
    hparams = yaml.safe_load((folder / "hparams.yaml").read_text())
    assert hparams["regressor"]["nli"] == nli_path and hparams["nli_hash"] == regressor.nli_hash
    card = write_model_card(folder).read_text(encoding="utf-8")
    assert f"NLI entailment/contradiction probabilities of `{nli_path}`" in card and regressor.nli_hash in card
    reloaded = load_checkpoint(folder)
    assert reloaded.config.nli == nli_path
    np.testing.assert_array_equal(sescore_scores(reloaded, hyps, refs), scores)
    assert "nli" not in plain.config.to_dict()  # checkpoints without the feature keep their old hparams

    hparams["nli_hash"] = "0" * 12  # the named NLI model is no longer the one it was trained with
    (folder / "hparams.yaml").write_text(yaml.safe_dump(hparams))
    with pytest.raises(CheckpointError, match="NLI features of"):
        load_checkpoint(folder)
    with pytest.raises(ValueError, match="need alignment: true"):
        RegressorConfig(nli=nli_path)
    with pytest.raises(ValueError, match="must name an NLI model"):
        RegressorConfig(alignment=True, nli=" ")


def test_nli_pairs_are_kept_in_a_file_for_the_next_process(tiny, tmp_path, monkeypatch):
    """With $NLGMETRICS_NLI_PAIRS a later process (here: the process-wide memo emptied) reads the pairs an
    earlier one scored from the NLI model's file and never calls the model for them; unset, nothing is written."""
    import nlgmetrics.modelroles.memo as memo
    import sescore.regressor.features as features_module

    hyps = ["the cat runs .", "a dog sees the house", "the cat runs ."]
    refs = ["the cat sat .", "a dog sees the big house", "the cat sat ."]
    folder = tmp_path / "pairs"
    monkeypatch.setattr(memo, "MODELS", memo.ModelMemo())
    monkeypatch.setenv(features_module.NLI_PAIRS_ENV, str(folder))
    first = _module(tiny["encoder"], layer_mix=False, alignment=True, nli=str(tiny["nli"])).regressor
    features = first.pair_inputs(hyps, refs)
    path = features_module.nli_pair_file(first.nli_model().hash)
    assert path.parent == folder and len(path.read_text().splitlines()) == 1 + 2 * 2  # header, 2 pairs x 2 ways

    monkeypatch.setattr(memo, "MODELS", memo.ModelMemo())  # a new process: only the file remembers
    second = _module(tiny["encoder"], layer_mix=False, alignment=True, nli=str(tiny["nli"])).regressor

    def no_model(*args, **kwargs):
        raise AssertionError("the NLI model was called for a pair the file holds")

    with monkeypatch.context() as patch:  # the loaded NLI model may be shared: patched for this check only
        patch.setattr(second.nli_model().nli, "predict_proba", no_model)
        np.testing.assert_array_equal(second.pair_inputs(hyps, refs), features)

    monkeypatch.delenv(features_module.NLI_PAIRS_ENV)
    monkeypatch.setattr(memo, "MODELS", memo.ModelMemo())
    third = _module(tiny["encoder"], layer_mix=False, alignment=True, nli=str(tiny["nli"])).regressor
    np.testing.assert_allclose(third.pair_inputs(hyps, refs), features, atol=1e-6)
    assert features_module.nli_pair_file("abc") is None and len(path.read_text().splitlines()) == 5


def test_bound_to_range_keeps_the_middle_and_the_order():
    """SEScore's declared range is a promise: overshooting heads are squashed smoothly, strictly monotone, and
    scores away from the ends are returned unchanged (so rankings and every Kendall statistic stay the same)."""
    from sescore.regressor.scale import bound_to_range

    x = np.linspace(-1.0, 2.0, 3001)
    y = bound_to_range(x, "unit")
    assert (y > 0).all() and (y < 1).all()
    assert (np.diff(y) > 0).all()
    middle = (x >= 0.1) & (x <= 0.9)
    np.testing.assert_array_equal(y[middle], x[middle])
    raw = bound_to_range(np.array([-40.0, -12.5, 3.0]), "raw")
    assert -25 < raw[0] < raw[1] == -12.5 < raw[2] < 0


def test_alignment_fit_trains_the_skip(tiny, dataset_dir, dev_file):

    module = _module(tiny["encoder"], alignment=True, encoder_freeze_fraction=0.0)
    skip_before = module.regressor.align_skip.weight.detach().clone()
    data = _small_data(dataset_dir, dev_file)
    trainer = _trainer(limit_train_batches=4, limit_val_batches=2)
    trainer.fit(module, data)
    assert not torch.equal(module.regressor.align_skip.weight.detach(), skip_before)
    assert math.isfinite(float(trainer.callback_metrics["train_loss"]))


# ------------------------------------------------------------------------------ within-reference ranking
def test_group_by_reference_keeps_every_row_once_in_reference_chunks():
    from sescore.regressor.datamodule import collate_pairs, group_by_reference

    rows = [{"reference": r, "candidate": f"{r}-{i}", "score": -float(i)} for i, r in enumerate("aabaaab")]
    groups = group_by_reference(rows, 3)
    assert [(g["reference"], g["candidates"]) for g in groups] == [
        ("a", ["a-0", "a-1", "a-3"]),
        ("a", ["a-4", "a-5"]),
        ("b", ["b-2", "b-6"]),
    ]
    assert sorted(c for g in groups for c in g["candidates"]) == sorted(r["candidate"] for r in rows)
    batch = collate_pairs(groups[1:])
    assert batch["candidate"] == ["a-4", "a-5", "b-2", "b-6"]
    assert batch["reference"] == ["a", "a", "b", "b"]
    assert batch["group"].tolist() == [0, 0, 1, 1]
    assert batch["score"].tolist() == [-4.0, -5.0, -2.0, -6.0]
    with pytest.raises(ValueError, match="group_size"):
        group_by_reference(rows, 0)


def test_rank_loss_orders_pairs_within_groups_only():
    from sescore.regressor.module import within_group_rank_loss

    target = torch.tensor([1.0, 0.8, 0.8, 1.0, 0.0])
    group = torch.tensor([0, 0, 0, 1, 1])
    right = torch.tensor([0.9, 0.5, 0.4, 0.2, 0.1])  # every ordered pair in order; group 1 far below group 0
    wrong = torch.tensor([0.4, 0.5, 0.9, 0.1, 0.2])
    # pairs: (0,1), (0,2) in group 0 (1 and 2 tie: no pair), (3,4) in group 1; never across groups
    expected = torch.nn.functional.softplus(-torch.tensor([0.4, 0.5, 0.1]) / 0.05).mean()
    assert torch.allclose(within_group_rank_loss(right, target, group, 0.05), expected)
    assert within_group_rank_loss(wrong, target, group, 0.05) > within_group_rank_loss(right, target, group, 0.05)
    ties = within_group_rank_loss(right.requires_grad_(), torch.ones(5), group, 0.05)
    assert float(ties.detach()) == 0.0 and ties.requires_grad  # no ordered pair: zero that keeps the graph (DDP)


def test_layer_mix_can_start_at_the_last_layer(tiny, fitted):
    uniform = _module(tiny["encoder"]).regressor.layer_mix
    assert torch.allclose(torch.softmax(uniform.weights, 0), torch.full_like(uniform.weights, 1 / len(uniform.weights)))
    last = torch.softmax(_module(tiny["encoder"], layer_mix_last_logit=8.0).regressor.layer_mix.weights, 0)
    assert float(last[-1]) > 0.99 and float(last[:-1].max()) < 0.01
    with pytest.raises(ValueError, match="layer_mix"):
        _module(tiny["encoder"], layer_mix=False, layer_mix_last_logit=8.0)
    with pytest.raises(ValueError, match="init_from"):
        _module(tiny["encoder"], init_from=str(fitted["folder"]), layer_mix_last_logit=8.0)


def test_rank_loss_fit_on_reference_groups(tiny, dataset_dir, dev_file):
    from sescore.regressor.datamodule import SEScoreDataModule

    data = SEScoreDataModule(
        str(dataset_dir),
        val_fraction=0.2,
        dev_judgments=str(dev_file),
        batch_size=4,
        eval_batch_size=8,
        dev_items=None,
        group_variants=4,
    )
    data.setup("fit")
    assert all(len(g["candidates"]) == 4 for g in data.train_records)  # the fixture has 4 variants per reference
    assert data.describe()["train_pairs"] == 4 * len(data.train_records)
    batch = next(iter(data.train_dataloader()))
    assert len(batch["candidate"]) == 16 and batch["group"].tolist() == [g for g in range(4) for _ in range(4)]
    trainer = _trainer(limit_train_batches=3, limit_val_batches=1)
    trainer.fit(_module(tiny["encoder"], rank_weight=1.0, encoder_freeze_fraction=0.0), data)
    assert math.isfinite(float(trainer.callback_metrics["train_rank_loss"]))
    assert float(trainer.callback_metrics["train_loss"]) > float(trainer.callback_metrics["train_mse"])

    ungrouped = SEScoreDataModule(
        str(dataset_dir), val_fraction=0.2, dev_judgments=str(dev_file), batch_size=4, eval_batch_size=8, dev_items=None
    )
    with pytest.raises(ValueError, match="group_variants"):
        _trainer(limit_train_batches=1, limit_val_batches=1).fit(
            _module(tiny["encoder"], rank_weight=1.0, encoder_freeze_fraction=0.0), ungrouped
        )
    with pytest.raises(ValueError, match="rank_weight"):
        _module(tiny["encoder"], rank_weight=-1.0)


# --------------------------------------------------------------------------------------- bad checkpoints
def _broken(source: Path, target: Path, how: str) -> Path:
    shutil.copytree(source, target)
    if how == "no_yaml":
        (target / "hparams.yaml").unlink()
    elif how == "bad_yaml":
        (target / "hparams.yaml").write_text("format: [unclosed\n")
    elif how == "wrong_format":
        (target / "hparams.yaml").write_text("format: something-else\n")
    elif how == "no_weights":
        (target / "model.safetensors").unlink()
    elif how == "bad_weights":
        (target / "model.safetensors").write_bytes(b"\x00\x01 definitely not safetensors")
    elif how == "pickled_weights":  # a torch.save file under the expected name: named as such, never unpickled
        import torch

        torch.save({"w": torch.ones(1)}, target / "model.safetensors")
    elif how == "hash":
        text = (target / "hparams.yaml").read_text()
        import yaml

        body = yaml.safe_load(text)
        body["encoder_hash"] = "000000000000"
        (target / "hparams.yaml").write_text(yaml.safe_dump(body))
    elif how == "shape":
        import yaml

        body = yaml.safe_load((target / "hparams.yaml").read_text())
        body["regressor"]["hidden_sizes"] = [12, 8]
        (target / "hparams.yaml").write_text(yaml.safe_dump(body))
    return target


@pytest.mark.parametrize(
    "how, message",
    [
        ("missing_dir", "no such directory"),
        ("no_yaml", "no hparams.yaml"),
        ("bad_yaml", "not valid YAML"),
        ("wrong_format", "is not a 'nlgmetrics-sescore-regressor/1' file"),
        ("no_weights", "no model.safetensors"),
        ("bad_weights", "model.safetensors is damaged or truncated"),
        ("pickled_weights", "model.safetensors is a pickled PyTorch file .* not loaded"),
        ("hash", "weight hash 000000000000"),
        ("shape", "does not fit"),
    ],
)
def test_bad_checkpoint_directories_fail_clearly(fitted, tmp_path, how, message):
    from nlgmetrics.modelroles import ModelRoleError
    from sescore.regressor.checkpoint import CheckpointError, load_checkpoint

    path = tmp_path / "missing" if how == "missing_dir" else _broken(fitted["folder"], tmp_path / how, how)
    with pytest.raises(CheckpointError, match=message) as caught:
        load_checkpoint(path)
    assert isinstance(caught.value, ModelRoleError) and str(path) in str(caught.value)


# -------------------------------------------------------------------------------------- scorer + metrics
def test_scorer_restores_order_takes_max_over_references_and_signs(fitted):
    from sescore.scorer import SEScoreScorer

    scorer = SEScoreScorer(checkpoint=str(fitted["folder"]), batch_size=2, device="cpu")
    hyps = ["a", "the cat runs quickly today .", "dog", "the big red house is old"]
    refs = ["a b c", "the cat runs today .", "a dog", "the red house is old"]
    together = scorer.score(hyps, refs)
    alone = [scorer.score([h], [r])[0] for h, r in zip(hyps, refs)]
    np.testing.assert_allclose(together, alone, atol=1e-5)
    multi = scorer.score(hyps[:2], [[refs[0], "zzz"], ["qq", refs[1]]])
    best = [max(scorer.score([h], [r])[0] for r in rs) for h, rs in zip(hyps[:2], [[refs[0], "zzz"], ["qq", refs[1]]])]
    np.testing.assert_allclose(multi, best, atol=1e-5)
    signature = scorer.signature()
    assert signature.startswith("sescore|ckpt:best@") and "|scale:unit|" in signature and "refs:max" in signature
    with pytest.raises(ValueError, match="hypotheses=2, references=1"):
        scorer.score(hyps[:2], refs[:1])
    with pytest.raises(ValueError, match="needs references"):
        scorer.score(hyps, None)


def test_default_checkpoint_constant_points_into_the_package():
    from sescore.regressor import DEFAULT_CHECKPOINT, MINILM_V2_CHECKPOINT
    from sescore.scorer import V1_CHECKPOINT

    assert Path(DEFAULT_CHECKPOINT).parts[-3:] == ("sescore", "checkpoints", "mpnet-v2")
    assert Path(MINILM_V2_CHECKPOINT).parts[-3:] == ("sescore", "checkpoints", "minilm-v2")
    assert Path(V1_CHECKPOINT).parts[-3:] == ("sescore", "checkpoints", "minilm-news")


GERMAN_REFS = [
    "Das Unternehmen meldete im dritten Quartal einen Gewinn von 12 Millionen Euro.",
    "Die Polizei sagte, die zwei Männer seien am Freitagabend in der Nähe des Bahnhofs festgenommen worden.",
]
GERMAN_BAD = [
    "Das Unternehmen meldete im dritten Quartal keinen Gewinn von 12 Millionen Euro.",
    "Die Polizei sagte, die neun Männer seien am Freitagabend festgenommen worden.",
]


@pytest.mark.parametrize("which", ["default", "minilm-v2", "v1", "me5-de"])
def test_shipped_checkpoints_are_small_load_offline_and_penalise_errors(which):
    """The embedded models (the default on MPNet, stored as float16; the MiniLM ensemble of three; v1; the German
    checkpoint on me5-small): every file under 12 MiB, each model rebuilt over its packaged encoder with a model
    card, and the metric ranks an untouched candidate above the same sentence with a negated verb, a wrong number
    and a dropped phrase (German sentences for the German checkpoint, which declares German)."""
    from sescore.regressor import DEFAULT_CHECKPOINT, MINILM_V2_CHECKPOINT
    from sescore.regressor.checkpoint import checkpoint_languages, read_hparams
    from sescore.scorer import V1_CHECKPOINT, SEScoreScorer, checkpoint_folders
    from sescore.shipped import SHIPPED

    folders = {"default": DEFAULT_CHECKPOINT, "minilm-v2": MINILM_V2_CHECKPOINT, "v1": V1_CHECKPOINT}
    folder = Path(folders.get(which) or SHIPPED / which)
    assert all(f.stat().st_size < 12 * 2**20 for f in folder.rglob("*") if f.is_file())
    members = checkpoint_folders(folder)
    assert len(members) == (3 if which == "minilm-v2" else 1)
    assert (folder / "README.md").is_file() and all((Path(m) / "README.md").is_file() for m in members)
    encoders = {read_hparams(m)["encoder"] for m in members}
    expected = {"default": "packaged:mpnet", "me5-de": "packaged:me5-small"}.get(which, "packaged:minilm")
    assert encoders == {expected}
    if which == "default":
        assert read_hparams(folder)["weights"]["dtype"] == "float16"
    assert all(checkpoint_languages(m) == (["de"] if which == "me5-de" else ["en"]) for m in members)
    refs = [
        "The company reported a profit of 12 million dollars in the third quarter.",
        "Police said the two men were arrested on Friday night near the station.",
    ]
    bad = [
        "The company did not report a profit of 12 million dollars in the third quarter.",
        "Police said the nine men were arrested on Friday night.",
    ]
    if which == "me5-de":
        refs, bad = GERMAN_REFS, GERMAN_BAD
    scorer = SEScoreScorer(device="cpu") if which == "default" else SEScoreScorer(str(folder), device="cpu")
    scores = scorer.score(refs + bad, refs + refs)
    assert all(0.0 <= s <= 1.0 for s in scores)
    assert scores[0] > scores[2] and scores[1] > scores[3], scores


def test_left_at_its_default_sescore_scores_german_with_the_german_checkpoint():
    """No checkpoint named: German references go to the shipped German checkpoint (its signature says so and the
    scores are its own), English ones to the English default."""
    from nlgmetrics import load_metric
    from sescore.scorer import SEScoreScorer
    from sescore.shipped import SHIPPED

    scorer = load_metric("sescore", device="cpu", progress=False)
    german = scorer.score(GERMAN_BAD, GERMAN_REFS)
    assert "ckpt:me5-de@" in scorer.signature()
    assert german == SEScoreScorer(str(SHIPPED / "me5-de"), device="cpu").score(GERMAN_BAD, GERMAN_REFS)
    scorer.score(["The council passed the budget."], ["The council approved the new budget."])
    assert "ckpt:mpnet-v2@" in scorer.signature()


def test_dev_tau_like_dedupes_and_matches_metaeval():
    from sescore.regressor.selection import DevTauLike

    rng = np.random.default_rng(0)
    preds, human, items = rng.normal(size=12), rng.integers(-10, 1, size=12).astype(float), np.repeat(np.arange(4), 3)
    metric = DevTauLike()
    order = rng.permutation(12)
    metric.update(
        torch.tensor(preds[order]), torch.tensor(order), torch.tensor(human[order]), torch.tensor(items[order])
    )
    metric.update(torch.tensor(preds[:2]), torch.tensor([0, 1]), torch.tensor(human[:2]), torch.tensor(items[:2]))
    assert float(metric.compute()) == pytest.approx(tau_like(preds, human, items.tolist()))


def test_validation_encodes_each_distinct_text_once_and_scores_as_forward(tiny, dataset_dir, dev_file):
    """The dev check keeps an item's pairs together and encodes each distinct text of a batch once: the same
    scores as encoding both texts of every pair, for fewer encoder rows (the v2 recipe's dev mix: 8,720 pair
    texts, 1,712 distinct)."""
    from sescore.regressor.datamodule import SEScoreDataModule, collate_pairs, grouped_longest_first

    module = _module(tiny["encoder"], alignment=True)
    module.regressor.eval()
    data = SEScoreDataModule(
        str(dataset_dir), val_fraction=0.2, dev_judgments=str(dev_file), eval_batch_size=6, dev_items=None
    )
    data.setup("fit")
    for records, key in ((data.dev_records, lambda r: r["item"]), (data.val_records, lambda r: r["reference"])):
        seen = [key(r) for r in records]
        runs = [k for i, k in enumerate(seen) if i == 0 or seen[i - 1] != k]
        assert len(runs) == len(set(runs)) > 1, "rows sharing texts must be next to each other"
        assert grouped_longest_first(records) == records  # already in that order
    encoded: list[int] = []
    tokenize = module.regressor.tokenize
    module.regressor.tokenize = lambda texts, pad_to=None: encoded.append(len(texts)) or tokenize(texts, pad_to)
    for records in (data.dev_records, data.val_records):
        for start in range(0, len(records), 6):
            batch = collate_pairs(records[start : start + 6])
            with torch.no_grad():
                pairwise = module.regressor(batch["candidate"], batch["reference"], encoder_grad=False)
                distinct = module.regressor(batch["candidate"], batch["reference"], encoder_grad=False, distinct=True)
            torch.testing.assert_close(distinct, pairwise, atol=1e-6, rtol=0)
            assert encoded[-2:] == [2 * len(batch["candidate"]), len(set(batch["candidate"]) | set(batch["reference"]))]
    assert sum(encoded[1::2]) < 0.75 * sum(encoded[0::2]), encoded  # whole items per batch: references shared
    with pytest.raises(ValueError, match="2 candidates but 1 references"):
        module.regressor(["a", "b"], ["a"], encoder_grad=False, distinct=True)


def test_grouped_validation_order_is_a_pure_function_of_the_rows():
    from sescore.regressor.datamodule import grouped_longest_first

    rows = [
        {"candidate": "a b", "reference": "r one", "item": 0},
        {"candidate": "a b c d e", "reference": "x y", "item": 1},
        {"candidate": "c", "reference": "r one", "item": 0},
        {"candidate": "a b c", "reference": "r one", "item": 0},
        {"candidate": "q", "reference": "x y", "item": 1},
    ]
    ordered = grouped_longest_first(rows)
    # item 1's longest pair (12 characters) is longer than item 0's (10): item 1 first, each item longest first
    assert [r["candidate"] for r in ordered] == ["a b c d e", "q", "a b c", "a b", "c"]
    assert grouped_longest_first(list(rows)) == ordered


def _ddp_worker(rank: int, world: int, port: int, checkpoint: str, hyps: list, refs: list, out_dir: str) -> None:
    from ddp_worker import gloo_group

    from sescore.metric import SEScore
    from sescore.regressor.selection import DevTauLike

    torch.set_num_threads(1)
    with gloo_group(rank, world, port):
        mine = slice(rank * len(hyps) // world, (rank + 1) * len(hyps) // world)
        per_sample = SEScore(checkpoint=checkpoint, per_sample=True, batch_size=2)
        per_sample.update(hyps[mine], refs[mine])
        mean = SEScore(checkpoint=checkpoint, batch_size=3)
        mean.update(hyps[mine], refs[mine])
        tau = DevTauLike()
        n = len(hyps)
        rows = torch.arange(n)[mine]
        if rank == 1:  # a distributed sampler pads with a duplicate of an earlier row
            rows = torch.cat([rows, torch.tensor([0])])
        preds = torch.tensor([len(hyps[i]) % 5 for i in rows.tolist()], dtype=torch.float64)
        human = torch.tensor([float(-(i % 3)) for i in rows.tolist()])
        tau.update(preds, rows, human, rows // 3)
        result = {
            "per_sample": per_sample.compute().tolist(),
            "mean": float(mean.compute()),
            "tau": float(tau.compute()),
        }
        Path(out_dir, f"rank{rank}.json").write_text(json.dumps(result))


def test_metric_state_merges_across_two_processes(fitted, tmp_path):
    import torch.multiprocessing as mp

    from sescore.metric import SEScore

    checkpoint = str(fitted["folder"])
    hyps = ["a cat", "the dog runs .", "house", "a big red car drives", "the man", "she reads a story ."]
    refs = ["a cat .", "the dog runs", "the house", "a red car drives .", ["a man", "the man ."], "she reads ."]
    mp.start_processes(
        _ddp_worker,
        args=(2, free_port(), checkpoint, hyps, refs, str(tmp_path)),
        nprocs=2,
        start_method="spawn",
        join=True,
    )
    single = SEScore(checkpoint=checkpoint, per_sample=True)
    single.update(hyps, refs)
    expected = single.compute().numpy()
    preds = [len(h) % 5 for h in hyps]
    expected_tau = tau_like(preds, [-(i % 3) for i in range(6)], [i // 3 for i in range(6)])
    for rank in (0, 1):
        result = json.loads((tmp_path / f"rank{rank}.json").read_text())
        np.testing.assert_allclose(result["per_sample"], expected, atol=1e-6)
        assert result["mean"] == pytest.approx(float(expected.mean()), abs=1e-6)
        assert result["tau"] == pytest.approx(expected_tau)


def test_metric_is_not_part_of_a_host_modules_parameters(fitted):
    from sescore.metric import SEScore

    host = torch.nn.Module()
    host.metric = SEScore(checkpoint=str(fitted["folder"]))
    host.metric.update(["a cat"], ["the cat"])
    assert list(host.parameters()) == [] and host.state_dict() == {}
    assert host.metric.compute().shape == ()


def test_lightning_ddp_validation_gathers_dev_predictions(tiny, dataset_dir, dev_file):
    """val_tau_like with two CPU processes (gloo) equals the single-process value, padding included.

    Lightning's ddp_fork forks the test process; after a session has run thread and process pools the forked
    ranks can deadlock on a lock held at fork time, so the check runs in a fresh pytest process of its own.
    """
    if os.environ.get("NLGMETRICS_DDP_FRESH") != "1":
        node = f"{Path(__file__).resolve()}::test_lightning_ddp_validation_gathers_dev_predictions"
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", node],
            env={**os.environ, "NLGMETRICS_DDP_FRESH": "1"},
            capture_output=True,
            text=True,
            timeout=600,
            cwd=Path(__file__).resolve().parents[1],
        )
        assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
        return
    import pytorch_lightning as pl
    import torch

    # One intra-op thread before any tensor work: forked ranks inherit an OpenMP pool they cannot use (libgomp
    # waits at its team barrier for threads that were not forked), which hung this test whenever OMP_NUM_THREADS
    # was set; with one thread torch runs its loops inline and never starts that pool.
    torch.set_num_threads(1)

    from sescore.regressor.datamodule import SEScoreDataModule

    pl.seed_everything(1, verbose=False)
    module = _module(tiny["encoder"])
    data = SEScoreDataModule(
        str(dataset_dir), val_fraction=0.2, dev_judgments=str(dev_file), eval_batch_size=4, dev_items=7
    )  # 21 pairs: the distributed sampler pads one
    single = _trainer().validate(module, data, verbose=False)
    environ = dict(os.environ)
    try:
        double = _trainer(devices=2, strategy="ddp_fork").validate(module, data, verbose=False)
    finally:  # Lightning leaves MASTER_PORT, WORLD_SIZE... behind; later tests must not inherit them
        os.environ.clear()
        os.environ.update(environ)
    assert math.isfinite(single[-1]["val_tau_like"])
    assert double[-1]["val_tau_like"] == pytest.approx(single[-1]["val_tau_like"], abs=1e-9)


# ---------------------------------------------------------------------------------------------------- CLI
@pytest.mark.parametrize(
    "config,extra",
    [
        ("fit_offline.yaml", []),
        ("fit_offline_v2.yaml", ["--data.dev_mix", "null", "--data.batch_size", "2"]),  # grouped batches, ranking loss
    ],
)
def test_train_py_fit_runs_end_to_end(tiny, dataset_dir, tmp_path, config, extra):
    from nlgmetrics.cli import train

    dev = _write_dev(tmp_path / "dev.jsonl", items=5)
    export_dir = tmp_path / "exported"
    status = train.main(
        [
            "fit",
            "--config",
            str(Path(__file__).resolve().parents[1] / "configs" / "sescore" / config),
            *extra,
            "--model.encoder",
            str(tiny["encoder"]),
            "--model.hidden_sizes",
            "[16, 8]",
            "--model.lora_r",
            "4",
            "--data.dataset",
            str(dataset_dir),
            "--data.dev_judgments",
            str(dev),
            "--data.val_fraction",
            "0.2",
            "--trainer.max_epochs",
            "1",
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
            str(export_dir),
        ]
    )
    assert status == 0
    from sescore.regressor.checkpoint import read_hparams

    hparams = read_hparams(export_dir)
    assert hparams["regressor"]["lora"]["r"] == 4 and hparams["record"]["model_hparams"]["lora_r"] == 4
    assert not list(tmp_path.rglob("*.ckpt")), "Lightning's pickled checkpoints must stay off"
    metrics_files = list((tmp_path / "runs").rglob("metrics.csv"))
    assert metrics_files
    with open(metrics_files[0], newline="") as handle:
        logged = [row for row in csv.DictReader(handle) if row.get("val_tau_like")]
    assert logged and all(math.isfinite(float(r["val_tau_like"])) for r in logged)
    assert list((tmp_path / "runs").rglob("config.yaml")), "LightningCLI saves the resolved config"
    if "v2" in config:
        assert hparams["record"]["model_hparams"]["rank_weight"] > 0
        assert hparams["record"]["data"]["group_variants"] == 10


# ------------------------------------------------------------------------------- human-judgment fine-tuning
def _write_darr(path: Path, pairs: int, seed: int = 9) -> Path:
    """WMT DARR-shaped pairs, gzipped like the shared file: the better candidate is the reference itself."""
    import gzip

    from tiny_models import tiny_corpus

    with gzip.open(path, "wt", encoding="utf-8") as handle:
        for index, sentence in enumerate(tiny_corpus(pairs, seed=seed)[:pairs]):
            words = sentence.split()
            row = {
                "lp": "xx-en",
                "item_id": index,
                "src": "",
                "refs": [sentence],
                "better": {"system": "a", "hyp": sentence},
                "worse": {"system": "b", "hyp": " ".join(words[::2])},
            }
            handle.write(json.dumps(row) + "\n")
    return path


def test_judged_pairs_from_darr_and_from_scored_rows(tmp_path, dev_file):
    from nlgmetrics.metaeval import InputError
    from sescore.regressor.sources import load_judged_pairs

    darr = load_judged_pairs(_write_darr(tmp_path / "darr.jsonl.gz", 12))
    assert len(darr) == 12 and set(darr[0]) == {"reference", "better", "worse"}
    assert darr[0]["better"] == darr[0]["reference"]
    subset = load_judged_pairs(tmp_path / "darr.jsonl.gz", limit=5, seed=1)
    assert len(subset) == 5 and subset == load_judged_pairs(tmp_path / "darr.jsonl.gz", limit=5, seed=1)
    assert subset != load_judged_pairs(tmp_path / "darr.jsonl.gz", limit=5, seed=2)
    scored = load_judged_pairs(dev_file, "mqm")
    assert len(scored) == 7 * 3  # three systems with distinct scores: three ordered pairs per item
    assert all(r["better"] != r["worse"] for r in scored)
    assert len(load_judged_pairs(dev_file, "mqm", min_gap=5.0)) == 7 * 2  # the 0 vs -5 pairs drop out
    with pytest.raises(InputError, match="human score key"):
        load_judged_pairs(dev_file)


def test_dev_tau_like_over_a_mix_is_the_mean_of_the_sets():
    import torch

    from nlgmetrics.metaeval import tau_like
    from sescore.regressor.selection import DevTauLike

    rng = np.random.default_rng(0)
    human = rng.normal(size=24)
    preds = human + rng.normal(scale=1.0, size=24)
    items = np.repeat(np.arange(8), 3)
    sets = (items >= 6).astype(int)  # unequal sets: the mean of sets differs from the pooled tau-like
    metric = DevTauLike()
    metric.update(torch.tensor(preds), torch.arange(24), torch.tensor(human), torch.tensor(items), torch.tensor(sets))
    expected = np.mean([tau_like(preds[sets == s], human[sets == s], items[sets == s].tolist()) for s in (0, 1)])
    assert float(metric.compute()) == pytest.approx(expected)
    assert expected != pytest.approx(tau_like(preds, human, items.tolist()))


def test_dev_mix_records_come_from_the_select_half_of_every_set(tmp_path, dev_file):
    from nlgmetrics.metaeval import rows_in_half
    from sescore.regressor.sources import load_dev_mix

    other = _write_dev(tmp_path / "other.jsonl", items=6, seed=11)
    mix = tmp_path / "mix.yaml"
    mix.write_text(
        f"split_seed: 0\nsets:\n  - {{name: a, path: {dev_file}, human: mqm}}\n"
        f"  - {{name: b, path: {other}, human: mqm, exclude_systems: [half]}}\n"
    )
    records = load_dev_mix(str(mix), "select", items_per_set=None, data_root=tmp_path)
    rows_a = rows_in_half([json.loads(x) for x in open(dev_file)], "select", 0)
    assert sum(r["set"] == 0 for r in records) == len(rows_a)
    assert {r["set"] for r in records} == {0, 1}
    assert len({r["row"] for r in records}) == len(records)  # rows numbered across sets
    assert not {r["item"] for r in records if r["set"] == 0} & {r["item"] for r in records if r["set"] == 1}


def test_fit_on_judged_pairs_from_a_synthetic_checkpoint(tiny, fitted, tmp_path, dev_file):
    """Stage two (COMET-style): start from the exported synthetic-data model, fine-tune on DARR pairs with the
    pairwise loss; the pair accuracy of the training pairs goes up and the export is a loadable checkpoint."""
    import pytorch_lightning as pl

    from sescore.functional import sescore_scores
    from sescore.regressor.checkpoint import load_checkpoint
    from sescore.regressor.datamodule import SEScoreDataModule
    from sescore.regressor.export import ExportBest
    from sescore.regressor.module import SEScoreModule

    with pytest.raises(ValueError, match="exactly one training source"):
        SEScoreDataModule(str(fitted["folder"]), judged=str(dev_file))
    darr = _write_darr(tmp_path / "darr.jsonl.gz", 48)
    pl.seed_everything(3, verbose=False)
    module = SEScoreModule(init_from=str(fitted["folder"]), head_lr=1e-2, encoder_lr=1e-3, encoder_freeze_fraction=0.0)
    assert module.config == load_checkpoint(fitted["folder"]).config
    data = SEScoreDataModule(
        judged=str(darr), val_fraction=0.0, dev_judgments=str(dev_file), dev_items=None, batch_size=8
    )
    data.setup("fit")

    def accuracy(regressor) -> float:
        recs = data.train_records
        better = sescore_scores(regressor, [r["better"] for r in recs], [r["reference"] for r in recs])
        worse = sescore_scores(regressor, [r["worse"] for r in recs], [r["reference"] for r in recs])
        return float(np.mean(better - worse))

    module.regressor.eval()
    before = accuracy(module.regressor)
    module.regressor.train()
    folder = tmp_path / "judged"
    _trainer(callbacks=[ExportBest(str(folder))], max_epochs=3).fit(module, data)
    module.regressor.eval()
    assert accuracy(module.regressor) > before
    reloaded = load_checkpoint(folder)
    assert reloaded.config == module.config


def test_model_card_of_a_judged_fine_tune_names_judgments_start_and_dev_mix():
    """A DARR fine-tune's card must not claim a synthesis dataset, the run's unused architecture arguments, or a
    dev file it never read; learning rates keep their digits."""
    from sescore.regressor.card import render_model_card

    hparams = {
        "encoder": "packaged:minilm",
        "encoder_hash": "abc",
        "regressor": {
            "hidden_sizes": [768, 384],
            "dropout": 0.1,
            "max_length": 256,
            "alignment": True,
            "lora": {"r": 16, "alpha": 32, "dropout": 0.1},
        },
        "record": {
            "monitor": "val_tau_like",
            "mode": "max",
            "metrics": {"val_tau_like": 0.115},
            "model_hparams": {"head_lr": 5e-05, "lora_r": None, "init_from": "runs/x/v2"},
            "data": {
                "dataset": None,
                "judged": "darr.jsonl.gz",
                "judged_score": None,
                "train_pairs": 9,
                "val_pairs": 1,
                "val_fraction": 0.1,
                "dev_mix": "devmix/default.yaml",
                "dev_half": "select",
                "dev_items_per_set": 40,
                "dev_judgments": None,
            },
        },
    }
    card = render_model_card(hparams, 2**20)
    assert "- Human judgments: `darr.jsonl.gz`, relative-ranking pairs" in card and "Synthesis dataset" not in card
    assert "- Started from the checkpoint `runs/x/v2`" in card
    data_section = card.split("## Training data")[1].split("## Recipe")[0]
    assert "on the dev mix `devmix/default.yaml` (select half, 40 items per set)" in data_section
    assert "None" not in data_section
    assert "| head_lr | 5e-05 |" in card and "| lora_r | 16 |" in card


def test_model_card_output_line_reads_as_formula_then_meaning():
    from sescore.regressor.card import render_model_card

    card = render_model_card({"output_scale": {"formula": "(25 + s) / 25", "meaning": "1 = no error"}}, 0)
    assert "Output: `(25 + s) / 25` (1 = no error)." in card


def test_an_fp16_stored_encoder_trains_in_float32(tiny, tmp_path):
    """Converted bases (me5-small) are stored in fp16 and transformers keeps the stored dtype: the regressor's
    encoder must come up in float32 like its head, or the first forward fails on mixed dtypes."""
    import shutil

    import torch
    from transformers import AutoModel

    from sescore.regressor.model import load_base_encoder

    half = tmp_path / "half"
    shutil.copytree(tiny["encoder"], half)
    AutoModel.from_pretrained(tiny["encoder"]).half().save_pretrained(half)
    assert AutoModel.from_pretrained(half).dtype == torch.float16  # the trap this guards against
    encoder, _, _ = load_base_encoder(str(half))
    assert {p.dtype for p in encoder.parameters()} == {torch.float32}


def _as_if_trained(regressor, seed: int):
    """Seeded noise on every LoRA and head tensor: a stand-in for training that moves both (B leaves zero)."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in regressor.named_parameters():
            if "lora_" in name or name.startswith("head."):
                parameter.add_(0.1 * torch.randn(parameter.shape, generator=gen))
    return regressor


def test_interpolated_checkpoint_moves_weights_linearly_between_start_and_trained(tiny, tmp_path):
    """WiSE-FT export: weight 0 is the start, 1 the trained model, 0.5 has every merged weight half-way
    (LoRA update B @ A scaled, not its factors averaged); mismatched or trained starts are refused."""
    from sescore.functional import sescore_scores
    from sescore.regressor.checkpoint import (
        CheckpointError,
        export_checkpoint,
        interpolate_checkpoints,
        load_checkpoint,
    )

    regressor = _module(tiny["encoder"], lora_r=4, alignment=True).regressor.eval()
    start = export_checkpoint(regressor, tmp_path / "start")
    trained = export_checkpoint(_as_if_trained(regressor, seed=4), tmp_path / "trained")
    hyps, refs = ["the cat runs .", "a dog sees the house", "house"], ["the cat runs", "a big dog .", "the house"]
    ends = {w: interpolate_checkpoints(start, trained, w, tmp_path / f"w{w}") for w in (0.0, 0.5, 1.0)}
    np.testing.assert_allclose(
        sescore_scores(load_checkpoint(ends[0.0]), hyps, refs),
        sescore_scores(load_checkpoint(start), hyps, refs),
        atol=1e-6,
    )
    np.testing.assert_allclose(
        sescore_scores(load_checkpoint(ends[1.0]), hyps, refs),
        sescore_scores(load_checkpoint(trained), hyps, refs),
        atol=1e-6,
    )
    merged = {w: load_checkpoint(ends[w]).state_dict() for w in (0.0, 0.5, 1.0)}
    moved = [k for k in merged[0.0] if not torch.allclose(merged[0.0][k], merged[1.0][k])]
    assert any(k.startswith("encoder.") for k in moved) and any(k.startswith("head.") for k in moved)
    for key in moved:
        torch.testing.assert_close(merged[0.5][key], (merged[0.0][key] + merged[1.0][key]) / 2, atol=1e-6, rtol=0)
    from sescore.regressor.card import write_model_card

    card = write_model_card(ends[0.5]).read_text()  # the trained run's facts, and where between the ends this is
    assert f"0.5000 of the way from `{start}`" in card and f"to `{trained}`" in card
    middle = sescore_scores(load_checkpoint(ends[0.5]), hyps, refs)
    assert not np.allclose(middle, sescore_scores(load_checkpoint(trained), hyps, refs))
    with pytest.raises(CheckpointError, match="non-zero B"):
        interpolate_checkpoints(trained, trained, 0.5, tmp_path / "bad")
    other = export_checkpoint(_module(tiny["encoder"], lora_r=8, alignment=True).regressor, tmp_path / "other")
    with pytest.raises(CheckpointError, match="different tensors|different 'regressor'"):
        interpolate_checkpoints(other, trained, 0.5, tmp_path / "bad")
    with pytest.raises(CheckpointError, match=r"in \[0, 1\]"):
        interpolate_checkpoints(start, trained, 1.5, tmp_path / "bad")
    assert not (tmp_path / "bad").exists()


def test_ensemble_averages_its_members_scores_and_refuses_mixed_scales(tiny, tmp_path):
    """Several checkpoints score as the mean of their scores (a seed ensemble), with a signature naming every
    member; one checkpoint keeps its single-model signature (devmix caches stay valid); scales must agree."""
    from sescore.functional import ensemble_scores, sescore_scores
    from sescore.regressor.checkpoint import export_checkpoint, load_checkpoint
    from sescore.scorer import SEScoreScorer

    folders = []
    for seed in (1, 2):
        regressor = _as_if_trained(_module(tiny["encoder"], lora_r=4, alignment=True).regressor.eval(), seed)
        folders.append(str(export_checkpoint(regressor, tmp_path / f"seed{seed}")))
    hyps = ["the cat runs .", "a dog sees the house", "house"]
    refs = [["the cat runs", "cats run ."], "a big dog .", "the house"]
    alone = [np.asarray(SEScoreScorer(f, batch_size=2, device="cpu").score(hyps, refs)) for f in folders]
    assert not np.allclose(alone[0], alone[1])
    ensemble = SEScoreScorer(folders, batch_size=2, device="cpu")
    np.testing.assert_allclose(ensemble.score(hyps, refs), (alone[0] + alone[1]) / 2, atol=1e-6)
    single = SEScoreScorer(folders[0], device="cpu").signature()
    assert single.startswith("sescore|ckpt:seed1@") and "ensemble" not in single
    signature = ensemble.signature()
    assert signature.startswith("sescore|ensemble:mean[ckpt:seed1@") and "ckpt:seed2@" in signature
    raw = _module(tiny["encoder"], lora_r=4, alignment=True, output_scale="raw").regressor.eval()
    with pytest.raises(ValueError, match="different output scales"):
        ensemble_scores([load_checkpoint(folders[0]), raw], hyps, refs)
    with pytest.raises(ValueError, match="at least one checkpoint"):
        ensemble_scores([], hyps, refs)
    np.testing.assert_allclose(
        ensemble_scores([load_checkpoint(folders[1])], hyps, refs),
        sescore_scores(load_checkpoint(folders[1]), hyps, refs),
    )
    from sescore.metric import SEScore  # the torchmetrics form takes the same list

    metric = SEScore(checkpoint=folders, per_sample=True, batch_size=2)
    metric.update(hyps, refs)
    np.testing.assert_allclose(metric.compute().numpy(), (alone[0] + alone[1]) / 2, atol=1e-6)
    one = SEScore(checkpoint=Path(folders[0]), per_sample=True, batch_size=2)  # a Path is one folder, not a list
    one.update(hyps, refs)
    np.testing.assert_allclose(one.compute().numpy(), alone[0], atol=1e-6)


def test_ensemble_folder_scores_as_its_members_and_refuses_bad_packs(tiny, tmp_path):
    """``train.py ensemble`` packs checkpoints into one folder that scores exactly as ``--checkpoint A B``
    (scorer, torchmetrics form, evaluate.py); broken packs and broken ensemble.yaml files are named, and a
    refused pack writes nothing."""
    import yaml

    from nlgmetrics.cli.train import main as train_main
    from sescore.metric import SEScore
    from sescore.regressor.checkpoint import (
        ENSEMBLE_NAME,
        CheckpointError,
        ensemble_members,
        export_checkpoint,
        load_checkpoint,
        pack_ensemble,
    )
    from sescore.scorer import V1_CHECKPOINT, SEScoreScorer, checkpoint_folders

    folders = []
    for seed in (1, 2):
        regressor = _as_if_trained(_module(tiny["encoder"], lora_r=4, alignment=True).regressor.eval(), seed)
        folders.append(str(export_checkpoint(regressor, tmp_path / f"run{seed}")))
    out = tmp_path / "packed"
    assert train_main(["ensemble", "--members", *folders, "--names", "a", "b", "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "a", "b", ENSEMBLE_NAME]
    assert all((out / m / "README.md").is_file() for m in ("a", "b"))
    card = (out / "README.md").read_text()
    assert "mean of 2 SEScore checkpoints" in card and "`a/README.md`" in card and "`b/README.md`" in card
    assert checkpoint_folders(out) == [str(out / "a"), str(out / "b")]
    assert checkpoint_folders([out, folders[0]]) == [str(out / "a"), str(out / "b"), folders[0]]
    hyps = ["the cat runs .", "a dog sees the house", "house"]
    refs = [["the cat runs", "cats run ."], "a big dog .", "the house"]
    listed = SEScoreScorer(folders, batch_size=2, device="cpu").score(hyps, refs)
    assert SEScoreScorer(str(out), batch_size=2, device="cpu").score(hyps, refs) == listed
    metric = SEScore(checkpoint=out, per_sample=True, batch_size=2)
    metric.update(hyps, refs)
    np.testing.assert_allclose(metric.compute().numpy(), listed, atol=1e-12)
    with pytest.raises(CheckpointError, match="is an ensemble"):
        load_checkpoint(out)
    # refused packs: nothing written
    with pytest.raises(CheckpointError, match="exists"):
        pack_ensemble(folders, out)
    with pytest.raises(CheckpointError, match="2 member folders but 1 names"):
        pack_ensemble(folders, tmp_path / "p1", names=["a"])
    with pytest.raises(CheckpointError, match="at least two"):
        pack_ensemble(folders[:1], tmp_path / "p2")
    with pytest.raises(CheckpointError, match="distinct"):
        pack_ensemble(folders, tmp_path / "p3", names=["a", "a"])
    with pytest.raises(CheckpointError, match="listed twice"):
        pack_ensemble([folders[0], folders[0]], tmp_path / "p3", names=["a", "b"])
    with pytest.raises(CheckpointError, match="no such directory"):
        pack_ensemble([folders[0], str(tmp_path / "missing")], tmp_path / "p4")
    with pytest.raises(CheckpointError, match="itself an ensemble"):
        pack_ensemble([folders[0], str(out)], tmp_path / "p5")
    raw = export_checkpoint(
        _module(tiny["encoder"], lora_r=4, alignment=True, output_scale="raw").regressor, tmp_path / "raw"
    )
    with pytest.raises(CheckpointError, match="different output scales"):
        pack_ensemble([folders[0], str(raw)], tmp_path / "p6")
    assert not any((tmp_path / f"p{i}").exists() for i in range(1, 7))
    assert not list(tmp_path.glob(".*partial"))
    with pytest.raises(ValueError, match="shipped"):
        pack_ensemble(folders, Path(V1_CHECKPOINT).parent / "mine")
    assert train_main(["ensemble", "--members", folders[0], "--out", str(tmp_path / "p7")]) == 2
    # hand-edited ensemble.yaml files
    spec = yaml.safe_load((out / ENSEMBLE_NAME).read_text())
    for change, message in [
        ({"members": ["a", "../run1"]}, "not a folder inside"),
        ({"members": ["a", "gone"]}, "'gone' is missing"),
        ({"members": []}, "non-empty list"),
        ({"members": ["a", "a"]}, "listed twice"),
        ({"combine": "max"}, "only 'mean'"),
        ({"format": "other/1"}, "is not a 'nlgmetrics-sescore-ensemble/1' file"),
    ]:
        (out / ENSEMBLE_NAME).write_text(yaml.safe_dump({**spec, **change}))
        with pytest.raises(CheckpointError, match=message):
            ensemble_members(out)
    (out / ENSEMBLE_NAME).write_text("members: [a\n")
    with pytest.raises(CheckpointError, match="not valid YAML"):
        SEScoreScorer(str(out)).checkpoints


def test_pack_stores_float16_weights_that_score_like_the_float32_export(tiny, tmp_path):
    """``train.py pack`` (and ``ensemble --dtype float16``) halve a checkpoint for shipping: the weights are stored as
    float16, loaded as float32, so scores move only by that rounding; bad requests are refused and write nothing."""
    from safetensors.torch import load_file

    from nlgmetrics.cli.train import main as train_main
    from sescore.regressor.checkpoint import CheckpointError, export_checkpoint, pack_checkpoint, read_hparams
    from sescore.scorer import V1_CHECKPOINT, SEScoreScorer

    regressor = _as_if_trained(_module(tiny["encoder"], lora_r=4, alignment=True).regressor.eval(), 1)
    source = export_checkpoint(regressor, tmp_path / "run", {"dataset": str(Path.cwd() / "runs" / "data")})
    out = tmp_path / "packed"
    assert train_main(["pack", "--checkpoint", str(source), "--out", str(out), "--note", "best of one"]) == 0
    stored = load_file(str(out / "model.safetensors"))
    original = load_file(str(source / "model.safetensors"))
    assert sorted(stored) == sorted(original) and all(v.dtype == torch.float16 for v in stored.values())
    assert (out / "model.safetensors").stat().st_size < 0.6 * (source / "model.safetensors").stat().st_size
    hparams = read_hparams(out)
    assert hparams["weights"]["dtype"] == "float16" and hparams["record"]["dataset"] == "runs/data"
    card = (out / "README.md").read_text()
    assert "Chosen: best of one" in card and "stored as float16" in card
    hyps = ["the cat runs .", "a dog sees the house", "house", "the the the"]
    refs = ["the cat runs", "a big dog .", "the house", "the cat sat on the mat"]
    full = np.asarray(SEScoreScorer(str(source), batch_size=2, device="cpu").score(hyps, refs))
    half = np.asarray(SEScoreScorer(str(out), batch_size=2, device="cpu").score(hyps, refs))
    assert not np.array_equal(full, half)  # the rounding is real ...
    np.testing.assert_allclose(half, full, atol=2e-3)  # ... and small
    ensemble = tmp_path / "ens16"
    assert (
        train_main(
            [
                "ensemble",
                "--members",
                str(source),
                str(out),
                "--names",
                "a",
                "b",
                "--out",
                str(ensemble),
                "--dtype",
                "float16",
            ]
        )
        == 0
    )
    assert all(
        v.dtype == torch.float16
        for m in ("a", "b")
        for v in load_file(str(ensemble / m / "model.safetensors")).values()
    )
    with pytest.raises(CheckpointError, match="exists"):
        pack_checkpoint(source, out)
    with pytest.raises(CheckpointError, match="is an ensemble"):
        pack_checkpoint(ensemble, tmp_path / "p1")
    with pytest.raises(CheckpointError, match="dtype 'bfloat16'"):
        pack_checkpoint(source, tmp_path / "p2", dtype="bfloat16")
    with pytest.raises(CheckpointError, match="no such directory"):
        pack_checkpoint(tmp_path / "missing", tmp_path / "p3")
    with pytest.raises(ValueError, match="shipped"):
        pack_checkpoint(source, Path(V1_CHECKPOINT).parent / "mine")
    assert not any((tmp_path / f"p{i}").exists() for i in range(1, 4)) and not list(tmp_path.glob(".*partial"))
    assert train_main(["pack", "--checkpoint", str(source), "--out", str(out)]) == 2


def test_the_train_cli_offers_exactly_the_stored_dtypes():
    """train.py's pack/ensemble commands (``sescore.regressor.pack_cli``) write the dtype choices out (no model import
    for --help); they must not drift from the loader's."""
    from sescore.regressor.checkpoint import STORED_DTYPES
    from sescore.regressor.pack_cli import STORED_DTYPES as offered

    assert offered == STORED_DTYPES
