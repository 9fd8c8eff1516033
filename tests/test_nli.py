"""NLI: label order from the checkpoint, batching, LoRA training/export/reload and its safety checks."""

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from nlgmetrics.modelroles import ModelRoleError
from nlgmetrics.nli import canonical_order, load_nli
from nlgmetrics.nli.checkpoint import LoraShape
from nlgmetrics.nli.labels import LabelOrderError
from nlgmetrics.nli.training import (
    NLITrainConfig,
    expected_calibration_error,
    fit_temperature,
    length_grouped_order,
    split_dev,
    train_nli,
)


def test_canonical_order_reads_id2label():
    assert canonical_order({0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}) == [2, 1, 0]
    assert canonical_order({"0": "entailment", "1": "neutral", "2": "contradiction"}) == [0, 1, 2]
    with pytest.raises(LabelOrderError, match="LABEL_0"):
        canonical_order({0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"})


def test_predict_proba_is_canonical_and_batch_invariant(tiny):
    import torch

    model = load_nli(str(tiny["nli"]))
    premises = ["the cat sat", "a man reads a story today in the city", "she sings", "dogs run"]
    hyps = ["a cat sat", "the man writes", "he sings", "dogs walk slowly"]
    probs = model.predict_proba(premises, hyps, batch_size=1)
    np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-6)
    np.testing.assert_allclose(model.predict_proba(premises, hyps, batch_size=3), probs, atol=1e-6)
    # tiny classifier labels are (c, n, e): canonical column 0 must be the model's logit 2
    enc = model.tokenizer(premises[:1], hyps[:1], return_tensors="pt")
    with torch.inference_mode():
        raw = torch.softmax(model.model(**enc).logits, -1)[0].numpy()
    np.testing.assert_allclose(probs[0], raw[[2, 1, 0]], atol=1e-6)
    with pytest.raises(ValueError, match="premises=2, hypotheses=1"):
        model.predict_proba(["a", "b"], ["c"])


def test_truncation_keeps_both_texts(tiny):
    model = load_nli(str(tiny["nli"]))
    long = " ".join(["the old man reads a story"] * 200)
    probs = model.predict_proba([long], ["a dog"])
    assert probs.shape == (1, 3) and np.isfinite(probs).all()


def test_token_lengths_are_the_same_whatever_the_chunk(tiny):
    """Lengths are computed a chunk at a time (memory); chunking must not change a single length."""
    from nlgmetrics.modelroles.batching import token_lengths

    tokenizer = load_nli(str(tiny["nli"])).tokenizer
    rng = np.random.default_rng(3)
    words = ["the", "old", "man", "reads", "a", "story", "dogs", "run"]
    premises = [" ".join(rng.choice(words, size=int(rng.integers(1, 90)))) for _ in range(23)]
    hyps = [" ".join(rng.choice(words, size=int(rng.integers(1, 40)))) for _ in range(23)]
    whole = tokenizer(premises, hyps, truncation=False)["input_ids"]
    untruncated = token_lengths(tokenizer, premises, None, hyps, chunk=5)
    assert untruncated == [len(ids) for ids in whole] and max(untruncated) > 64
    capped = token_lengths(tokenizer, premises, 64, hyps, chunk=4)
    assert capped == token_lengths(tokenizer, premises, 64, hyps, chunk=1000) == [min(n, 64) for n in untruncated]
    assert token_lengths(tokenizer, premises, 16, chunk=7) == token_lengths(tokenizer, premises, 16, chunk=1)
    with pytest.raises(ValueError, match="23 texts but 2 pair texts"):
        token_lengths(tokenizer, premises, 64, hyps[:2])


def test_length_grouped_batches_cover_everything_once_and_are_seeded():
    lengths = list(np.random.default_rng(1).integers(1, 100, size=103))
    a = length_grouped_order(lengths, 8, np.random.default_rng(5), pool=3)
    b = length_grouped_order(lengths, 8, np.random.default_rng(5), pool=3)
    assert a == b
    assert sorted(i for batch in a for i in batch) == list(range(103))
    # the point of the grouping: a batch's lengths are close, far closer than in batches of a random order
    spread = np.mean([np.ptp([lengths[i] for i in batch]) for batch in a])
    shuffled = np.random.default_rng(5).permutation(103)
    random_spread = np.mean([np.ptp([lengths[i] for i in shuffled[s : s + 8]]) for s in range(0, 103, 8)])
    assert spread < random_spread / 2, (spread, random_spread)


def test_commercial_only_drops_the_noncommercial_sources_before_the_limit(tmp_path):
    from nlgmetrics.nli.training import read_nli_jsonl

    sources = ["snli", "SICK", "mnli", "anli_r1", "sick_trial", "breaking", "anli"]
    path = tmp_path / "mixed.jsonl"
    path.write_text(
        "\n".join(
            json.dumps({"premise": f"p{i}", "hypothesis": "h", "label": i % 3, "source": s})
            for i, s in enumerate(sources)
        )
    )
    assert [r["source"] for r in read_nli_jsonl(path)] == sources
    assert [r["source"] for r in read_nli_jsonl(path, commercial_only=True)] == ["snli", "mnli", "breaking"]
    assert [r["source"] for r in read_nli_jsonl(path, commercial_only=True, limit=2)] == ["snli", "mnli"]


def _xnli_like(path):
    rows = [
        {
            "premise": f"p{i} {lang}",
            "hypothesis": f"h{i}",
            "label": i % 3,
            "lang": lang,
            "split": split,
            "source": "somewhere/data/xnli/" + split,
        }
        for split in ("dev", "test")
        for lang in ("de", "fr")
        for i in range(20)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


def test_nli_file_specs_filter_by_split_and_language_and_subset_the_same_items(tmp_path):
    from nlgmetrics.nli.training import file_label, read_nli_file

    path = _xnli_like(tmp_path / "xnli.jsonl")
    assert len(read_nli_file(str(path))) == 80
    dev = read_nli_file({"path": str(path), "splits": ["dev"]})
    assert len(dev) == 40 and {r["split"] for r in dev} == {"dev"}
    de = read_nli_file({"path": str(path), "splits": "test", "langs": ["de"], "limit": 7})
    fr = read_nli_file({"path": str(path), "splits": "test", "langs": ["fr"], "limit": 7})
    assert len(de) == 7 and {r["lang"] for r in de} == {"de"}
    # same seed, same positions: aligned translations give the same items in every language
    assert [r["hypothesis"] for r in de] == [r["hypothesis"] for r in fr]
    other = read_nli_file({"path": str(path), "splits": "test", "langs": ["de"], "limit": 7, "subset_seed": 1})
    assert [r["hypothesis"] for r in other] != [r["hypothesis"] for r in de]
    assert file_label({"path": "x.jsonl", "splits": ["dev"]}) == "x.jsonl (splits=['dev'])"


def test_nli_file_specs_refuse_typos_and_empty_selections_but_not_a_noncommercial_file(tmp_path):
    from nlgmetrics.nli.training import read_nli_file

    path = _xnli_like(tmp_path / "xnli.jsonl")
    with pytest.raises(ValueError, match=r"unknown key\(s\) lang;"):
        read_nli_file({"path": str(path), "lang": ["de"]})
    with pytest.raises(ValueError, match="selects no rows"):
        read_nli_file({"path": str(path), "langs": ["xx"]})
    with pytest.raises(ValueError, match="'path' key"):
        read_nli_file({"splits": ["dev"]})
    # XNLI is CC BY-NC: commercial_only leaves the file out (an empty list), it does not fail the recipe
    assert read_nli_file({"path": str(path), "splits": ["dev"]}, commercial_only=True) == []


def test_dev_split_keeps_premises_apart():
    rows = [{"premise": f"p{i // 3}", "hypothesis": f"h{i}", "label": i % 3} for i in range(60)]
    train, dev = split_dev(rows, 10, seed=0)
    assert {r["premise"] for r in train}.isdisjoint({r["premise"] for r in dev})
    assert len(train) + len(dev) == 60 and len(dev) >= 10


def test_calibration_helpers():
    assert expected_calibration_error(np.array([1.0, 1.0, 0.0]), np.array([1, 1, 0])) == pytest.approx(0.0)
    assert expected_calibration_error(np.array([0.9] * 10), np.array([0] * 10)) == pytest.approx(0.9)
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 3, size=400)
    logits = np.eye(3)[labels] * 2.0 + rng.normal(size=(400, 3))
    assert fit_temperature(logits * 5, labels) > fit_temperature(logits, labels)  # overconfident -> larger T


def _tiny_nli_data(path, n=48):
    rng = np.random.default_rng(0)
    words = ["cat", "dog", "man", "woman", "child", "car"]
    rows = []
    for i in range(n):
        a, b = rng.choice(words, 2, replace=False)
        label = i % 3
        hyp = {0: f"a {a} runs", 1: f"a {a} sleeps", 2: f"no {a} runs"}[label]
        rows.append({"premise": f"the {a} runs with the {b}", "hypothesis": hyp, "label": label, "source": "toy"})
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def trained_adapter(tiny, tmp_path_factory):
    root = tmp_path_factory.mktemp("adapter")
    data = _tiny_nli_data(root / "train.jsonl")
    config = NLITrainConfig(
        base=str(tiny["encoder"]),
        train_files=[str(data)],
        test_files={"toy": str(data)},
        dev_size=6,
        batch_size=8,
        epochs=1,
        lr=1e-3,
        lora=LoraShape(r=2, alpha=4, target_modules=r".*\.(query|value)"),
        output=str(root / "ckpt"),
        accelerator="cpu",
        devices=1,
    )
    report = train_nli(config)
    return root / "ckpt", report


def test_training_writes_a_small_safetensors_yaml_checkpoint(trained_adapter):
    ckpt, report = trained_adapter
    assert sorted(p.name for p in ckpt.iterdir()) == ["README.md", "adapter.safetensors", "nli.yaml", "report.json"]
    assert "| toy |" in (ckpt / "README.md").read_text()
    assert 0.0 <= report["tests"]["toy"]["raw"]["accuracy"] <= 1.0
    assert report["temperature"] > 0
    assert report["trainable_parameters"] > 0
    # LoRA's B matrices start at zero: non-zero ones show that optimizer steps were taken and saved
    from safetensors import safe_open

    with safe_open(str(ckpt / "adapter.safetensors"), "pt") as tensors:
        lora_b = [tensors.get_tensor(k) for k in tensors.keys() if "lora_B" in k]
    assert lora_b and all(float(b.abs().max()) > 0 for b in lora_b)


def test_a_failing_test_pass_keeps_the_trained_adapter(tiny, tmp_path):
    """Training takes hours on CPU; an error while scoring the test sets must not throw the weights away."""
    data = _tiny_nli_data(tmp_path / "train.jsonl")
    config = NLITrainConfig(
        base=str(tiny["encoder"]),
        train_files=[str(data)],
        test_files={"gone": str(tmp_path / "missing.jsonl")},
        dev_size=6,
        batch_size=8,
        epochs=1,
        lr=1e-3,
        lora=LoraShape(r=2, alpha=4, target_modules=r".*\.(query|value)"),
        output=str(tmp_path / "ckpt"),
        accelerator="cpu",
        devices=1,
    )
    with pytest.raises(Exception, match="missing.jsonl"):
        train_nli(config)
    assert json.loads((tmp_path / "ckpt" / "report.json").read_text())["tests"] == "pending"
    import yaml

    record = yaml.safe_load((tmp_path / "ckpt" / "nli.yaml").read_text())["record"]
    assert record["report"]["tests"] == "pending", "the YAML record says the same as report.json"
    model = load_nli(str(tmp_path / "ckpt"))
    assert model.predict_proba(["the cat runs"], ["a cat runs"]).shape == (1, 3)

    # the missing file appears: --tests-only finishes the run without training, through the command line
    import shutil

    from nlgmetrics.nli import cli

    shutil.copy(data, tmp_path / "missing.jsonl")
    weights = (tmp_path / "ckpt" / "adapter.safetensors").read_bytes()
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text(yaml.safe_dump(_plain_config(config)))
    assert cli.main(["--config", str(recipe), "--tests-only"]) == 0
    report = json.loads((tmp_path / "ckpt" / "report.json").read_text())
    assert report["tests"]["gone"]["raw"]["n"] == 48
    assert report["train_rows"] > 0, "the training part of the report is kept"
    record = yaml.safe_load((tmp_path / "ckpt" / "nli.yaml").read_text())["record"]
    assert record["report"]["tests"]["gone"]["raw"]["accuracy"] == report["tests"]["gone"]["raw"]["accuracy"]
    assert "| gone | 48 |" in (tmp_path / "ckpt" / "README.md").read_text()
    assert (tmp_path / "ckpt" / "adapter.safetensors").read_bytes() == weights, "the weights are not rewritten"
    assert cli.main(["--config", str(recipe), "--tests-only", "--output", str(tmp_path / "none")]) == 2


def _plain_config(config: NLITrainConfig) -> dict:
    from dataclasses import asdict

    return {k: v for k, v in asdict(config).items() if v is not None}


def test_adapter_reloads_to_the_same_predictions(trained_adapter, tiny):
    ckpt, _ = trained_adapter
    model = load_nli(str(ckpt))
    premises, hyps = ["the cat runs with the dog"], ["no cat runs"]
    first = model.predict_proba(premises, hyps)
    from nlgmetrics.nli.model import unload_nli

    unload_nli(model)
    reloaded = load_nli(str(ckpt))
    assert reloaded is not model  # loaded again from the folder
    again = reloaded.predict_proba(premises, hyps)
    np.testing.assert_allclose(first, again, atol=1e-6)


def test_adapter_refuses_a_different_base(trained_adapter, tiny, tmp_path):
    ckpt, _ = trained_adapter
    moved = tmp_path / "moved"
    shutil.copytree(ckpt, moved)
    text = (moved / "nli.yaml").read_text().replace(str(tiny["encoder"]), str(tiny["bert_mlm"]))
    (moved / "nli.yaml").write_text(text)
    with pytest.raises(ModelRoleError, match="weight hash"):
        load_nli(str(moved))


def test_corrupt_or_incomplete_checkpoints_fail_clearly(trained_adapter, tmp_path):
    ckpt, _ = trained_adapter
    broken = tmp_path / "broken"
    shutil.copytree(ckpt, broken)
    (broken / "adapter.safetensors").write_bytes(b"\x00garbage")
    with pytest.raises(ModelRoleError, match="adapter.safetensors is damaged or truncated"):
        load_nli(str(broken))
    import torch

    torch.save({"w": torch.ones(1)}, broken / "adapter.safetensors")
    with pytest.raises(ModelRoleError, match="is a pickled PyTorch file .* not loaded"):
        load_nli(str(broken))
    (broken / "nli.yaml").write_text("format: [unclosed")
    with pytest.raises(ModelRoleError, match="not valid YAML"):
        load_nli(str(broken))
    missing = tmp_path / "missing"
    shutil.copytree(ckpt, missing)
    (missing / "adapter.safetensors").unlink()
    with pytest.raises(ModelRoleError, match="no adapter.safetensors"):
        load_nli(str(missing))


def test_length_grouped_sampler_shards_ranks_disjointly():
    from nlgmetrics.nli.training import LengthGroupedSampler

    lengths = list(np.random.default_rng(2).integers(1, 60, size=101))
    single = list(LengthGroupedSampler(lengths, 4, seed=3))
    shards = [list(LengthGroupedSampler(lengths, 4, seed=3, rank=r, world_size=2)) for r in (0, 1)]
    assert len(shards[0]) == len(shards[1]) == len(single) // 2
    assert shards[0] + shards[1] != [] and not set(map(tuple, shards[0])) & set(map(tuple, shards[1]))
    assert set(map(tuple, shards[0] + shards[1])) <= set(map(tuple, single))


@pytest.mark.parametrize("base", ["packaged:minilm", "packaged:me5-small"])
def test_model_card_names_its_base_and_shows_only_measured_numbers(tmp_path, base):
    from nlgmetrics.nli.training import write_model_card

    (tmp_path / "adapter.safetensors").write_bytes(b"\0" * 2**20)
    report = {
        "train_rows": 90,
        "dev_rows": 10,
        "trainable_parameters": 1234,
        "temperature": 1.5,
        "train_seconds": 120.0,
        "history": [],
        "tests": {
            "snli": {
                "raw": {"n": 5, "accuracy": 0.6, "entailment_ece": 0.1},
                "calibrated": {"n": 5, "accuracy": 0.6, "entailment_ece": 0.05, "entailment_brier": 0.2},
            }
        },
    }
    card = write_model_card(
        NLITrainConfig(base=base, epochs=1), report, tmp_path, recipe=("configs/nli/x.yaml",)
    ).read_text()
    assert card.startswith(f"# NLI adapter: 3-way NLI over {base} (LoRA)")
    assert "| snli | 5 | 0.600 | 0.100 | 0.050 | 0.200 |" in card
    assert "full fine-tune" not in card  # no run behind such a number is kept
    assert "Retrain: `python train.py nli --config configs/nli/x.yaml`." in card
    assert "1.0 MB" in card and "2.0 min of training" in card
    assert "classifier and pooler trained in full" in card  # LoraShape's default modules_to_save


def test_model_card_names_the_modules_actually_trained_in_full(tmp_path):
    """MPNet's classifier has no pooler: its card must not claim one was trained."""
    from nlgmetrics.nli.checkpoint import LoraShape
    from nlgmetrics.nli.training import write_model_card

    (tmp_path / "adapter.safetensors").write_bytes(b"\0" * 1024)
    report = {
        "train_rows": 9,
        "dev_rows": 1,
        "trainable_parameters": 7,
        "temperature": 1.0,
        "train_seconds": 6.0,
        "history": [],
        "tests": {},
    }
    config = NLITrainConfig(base="packaged:mpnet", epochs=1, lora=LoraShape(modules_to_save=["classifier"]))
    card = write_model_card(config, report, tmp_path).read_text()
    assert "; classifier trained in full (7 trainable parameters)" in card and "pooler" not in card


def test_every_shipped_nli_adapter_is_small_fp16_and_names_a_packaged_base():
    """Issue rule: shipped weights stay in git only as small files (<= 12 MiB each, fp16)."""
    import yaml
    from safetensors import safe_open

    from nlgmetrics.modelroles.resolve import PACKAGED

    root = Path(__file__).resolve().parents[1] / "nlgmetrics" / "nli" / "checkpoints"
    folders = sorted(p for p in root.iterdir() if p.is_dir())
    assert {f.name for f in folders} >= {"minilm-lora", "me5-lora", "me5-distill"}
    for folder in folders:
        assert all(f.stat().st_size <= 12 * 2**20 for f in folder.iterdir()), folder
        config = yaml.safe_load((folder / "nli.yaml").read_text())
        assert config["base"].startswith("packaged:") and config["base"].split(":", 1)[1] in PACKAGED, config["base"]
        with safe_open(str(folder / "adapter.safetensors"), "pt") as weights:
            assert {str(weights.get_slice(k).get_dtype()) for k in weights.keys()} == {"F16"}, folder


def test_mpnet_recipe_puts_lora_on_every_attention_and_ffn_projection_of_an_mpnet_classifier():
    """MPNet names its attention projections attn.q/k/v/o (BERT: attention.self.query/...), so the default regex
    would leave attention untouched; the recipe's own target_modules must reach all six projections per layer."""
    import yaml
    from transformers import MPNetConfig, MPNetForSequenceClassification

    from nlgmetrics.nli.checkpoint import LoraShape, wrap_with_lora
    from nlgmetrics.resources import config_path

    raw = yaml.safe_load(config_path("configs/nli/mpnet_lora.yaml").read_text(encoding="utf-8"))
    assert raw["base"] == "packaged:mpnet" and raw["output"].startswith("runs/")
    config = MPNetConfig(
        vocab_size=64,
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=40,
        num_labels=3,
    )
    peft_model = wrap_with_lora(MPNetForSequenceClassification(config), LoraShape(**raw["lora"]))
    wrapped = {
        name.split("mpnet.encoder.")[1].rsplit(".lora_A", 1)[0]
        for name, _ in peft_model.named_modules()
        if name.endswith("lora_A")
    }
    expected = {
        f"layer.{i}.{part}"
        for i in range(2)
        for part in (
            "attention.attn.q",
            "attention.attn.k",
            "attention.attn.v",
            "attention.attn.o",
            "intermediate.dense",
            "output.dense",
        )
    }
    assert wrapped == expected
    trainable = {n for n, p in peft_model.named_parameters() if p.requires_grad}
    assert any("classifier" in n for n in trainable)
    assert not any("word_embeddings" in n for n in trainable)
    default = wrap_with_lora(MPNetForSequenceClassification(config), LoraShape())  # the shared default: the same set
    assert {
        name.split("mpnet.encoder.")[1].rsplit(".lora_A", 1)[0]
        for name, _ in default.named_modules()
        if name.endswith("lora_A")
    } == expected
    bert_only = r".*encoder\.layer\.\d+\.(attention\.self\.(query|key|value)|attention\.output\.dense|output\.dense)"
    with pytest.raises(ValueError, match="matches none of the model's 8 attention projections"):
        wrap_with_lora(MPNetForSequenceClassification(config), LoraShape(target_modules=bert_only))


# ------------------------------------------------------------------------------------------------ distillation
def test_pair_files_of_both_schemas_with_split_filter(tmp_path):
    from nlgmetrics.nli.distill import NO_LABEL, read_pair_file, without_sentences

    sts = tmp_path / "sts.jsonl"
    sts.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"split": "train", "s1": "A dog runs.", "s2": "A dog is running."},
                {"split": "test", "s1": "A cat sits.", "s2": "A cat is sitting."},
            ]
        ),
        encoding="utf-8",
    )
    rows = read_pair_file(sts, splits=["train"])
    assert [(r["premise"], r["hypothesis"]) for r in rows] == [
        ("A dog runs.", "A dog is running."),
        ("A dog is running.", "A dog runs."),
    ]
    assert {r["label"] for r in rows} == {NO_LABEL}
    nli = tmp_path / "nli.jsonl"
    nli.write_text(
        json.dumps({"premise": "p", "hypothesis": "h", "label": 2})
        + "\n"
        + json.dumps({"premise": "p", "hypothesis": "h2"}),
        encoding="utf-8",
    )
    assert [r["label"] for r in read_pair_file(nli)] == [2, NO_LABEL]
    assert len(without_sentences(rows, {"a dog  RUNS."})) == 0
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"text": "x"}), encoding="utf-8")
    with pytest.raises(ValueError, match="bad.jsonl:1: a pair needs premise/hypothesis or s1/s2"):
        read_pair_file(bad)


def test_teacher_probabilities_are_cached_and_survive_a_cut_line(tmp_path):
    from nlgmetrics.nli.distill import teacher_probabilities

    class Teacher:
        spec, hash, calls = "toy", "abc123" * 4, 0

        def predict_proba(self, premises, hypotheses, **_):
            Teacher.calls += len(premises)
            return np.asarray([[len(p) / 100, len(h) / 100, 0.5] for p, h in zip(premises, hypotheses)])

    rows = [{"premise": f"p{i}", "hypothesis": "h" * i} for i in range(7)] + [{"premise": "p0", "hypothesis": ""}]
    first = teacher_probabilities(Teacher(), rows, tmp_path, chunk=3, progress=False)
    assert Teacher.calls == 7 and first.shape == (8, 3)  # the repeated pair is scored once
    assert np.allclose(first[3], [0.02, 0.03, 0.5])
    again = teacher_probabilities(Teacher(), rows, tmp_path, chunk=3, progress=False)
    assert Teacher.calls == 7 and np.array_equal(first, again)
    cache = next(tmp_path.glob("*.jsonl"))
    lines = cache.read_text().splitlines()
    assert len(lines) == 1 + 7  # a header naming the teacher, then one line per distinct pair
    cache.write_text("\n".join(lines[:4]) + "\n" + lines[4][:10])  # killed while writing the fourth pair
    third = teacher_probabilities(Teacher(), rows, tmp_path, chunk=3, progress=False)
    assert Teacher.calls == 7 + 4 and np.allclose(first, third)
    assert len(cache.read_text().splitlines()) == 1 + 7

    # a damaged line inside the file is refused by name; the file (and the pairs after that line) stay as they were
    damaged = "\n".join(lines[:3] + ["{not json"] + lines[4:]) + "\n"
    cache.write_text(damaged)
    with pytest.raises(ValueError, match="line 4: not a {k, v} record"):
        teacher_probabilities(Teacher(), rows, tmp_path, chunk=3, progress=False)
    assert cache.read_text() == damaged and Teacher.calls == 7 + 4


def test_distilled_training_learns_teacher_labels_on_extra_pairs_without_test_sentences(
    trained_adapter, tiny, tmp_path
):
    teacher_dir, _ = trained_adapter
    data = _tiny_nli_data(tmp_path / "train.jsonl")
    test_rows = [json.loads(line) for line in data.read_text().splitlines()[:5]]
    test = tmp_path / "test.jsonl"
    test.write_text("\n".join(json.dumps(r) for r in test_rows), encoding="utf-8")
    extra = tmp_path / "sts.jsonl"
    extra.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"split": "train", "s1": "the owl runs with the fox", "s2": "an owl runs"},
                {"split": "train", "s1": "the hen sleeps", "s2": "no hen sleeps"},
                {"split": "train", "s1": test_rows[0]["premise"], "s2": "a new sentence"},  # shares a test sentence
                {"split": "test", "s1": "the yak runs", "s2": "a yak runs"},
            ]
        ),
        encoding="utf-8",
    )
    config = NLITrainConfig(
        base=str(tiny["encoder"]),
        train_files=[str(data)],
        test_files={"toy": str(test)},
        dev_size=6,
        batch_size=8,
        epochs=1,
        lr=1e-3,
        lora=LoraShape(r=2, alpha=4, target_modules=r".*\.(query|value)"),
        output=str(tmp_path / "student"),
        accelerator="cpu",
        devices=1,
        resume_every=0,
        teacher=str(teacher_dir),
        teacher_files=[str(extra)],
        teacher_splits=["train"],
        distill_weight=0.7,
        teacher_cache=str(tmp_path / "teacher_cache"),
    )
    from nlgmetrics.modelroles.memo import MODELS

    report = train_nli(config)
    assert not any(key[:2] == ("nli", str(teacher_dir)) for key in MODELS.keys())  # the teacher was let go
    distilled = report["distilled"]
    assert distilled["extra_pairs"] == 4 and distilled["extra_pairs_dropped_for_test_or_dev_sentences"] == 2
    assert distilled["distill_weight"] == 0.7 and len(distilled["teacher_hash"]) >= 12
    gold = len(data.read_text().splitlines())
    # both orders of the two kept train-split STS pairs (the third shares a test sentence): trained on with the gold
    # rows
    assert report["train_rows"] == gold - report["dev_rows"] + distilled["extra_pairs"]
    assert len(list((tmp_path / "teacher_cache").glob("*.jsonl"))) == 1
    card = (tmp_path / "student" / "README.md").read_text()
    assert f"Distilled from `{teacher_dir}`" in card and "4 extra pairs without gold labels" in card
    with pytest.raises(ValueError, match="teacher_files are labelled by the teacher only"):
        train_nli(NLITrainConfig(**{**config.__dict__, "teacher": None, "output": str(tmp_path / "x")}))
    with pytest.raises(ValueError, match="distill_weight"):
        train_nli(NLITrainConfig(**{**config.__dict__, "distill_weight": 1.5, "output": str(tmp_path / "x")}))


def test_distillation_loss_mixes_kl_and_gold_cross_entropy():
    import torch

    from nlgmetrics.nli.training import _lightning_module

    class Stub(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.zeros(1))

    module = _lightning_module(Stub(), NLITrainConfig(distill_weight=0.25), total_steps=10)
    module.log = module.log_dict = lambda *a, **k: None
    logits = torch.tensor([[2.0, 0.0, -1.0], [0.0, 1.0, 0.0]])
    soft = torch.tensor([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3]])
    labels = torch.tensor([0, -100])
    log_p = torch.log_softmax(logits, -1)
    kl = float((soft * (soft.log() - log_p)).sum(-1).mean())
    ce = float(-log_p[0, 0])
    got = float(module._loss(logits, {"labels": labels, "soft": soft}))
    assert got == pytest.approx(0.25 * kl + 0.75 * ce, rel=1e-5)
    only_teacher = float(module._loss(logits, {"labels": torch.tensor([-100, -100]), "soft": soft}))
    assert only_teacher == pytest.approx(kl, rel=1e-5)
    assert float(module._loss(logits, {"labels": torch.tensor([0, 1])})) == pytest.approx(
        float(torch.nn.functional.cross_entropy(logits, torch.tensor([0, 1]))), rel=1e-6
    )


@pytest.mark.parametrize(
    "name", sorted(p.name for p in (Path(__file__).resolve().parents[1] / "configs" / "nli").glob("*.yaml"))
)
def test_every_nli_recipe_parses_and_writes_outside_the_shipped_checkpoints(name):
    from nlgmetrics.resources import refuse_shipped_output

    config = NLITrainConfig.from_yaml(f"configs/nli/{name}")
    refuse_shipped_output(config.output)
    assert 0 <= config.distill_weight <= 1 and config.epochs >= 1
    assert not config.teacher_files or config.teacher, "teacher files without a teacher would be ignored"


def test_train_py_nli_options_reach_the_config(monkeypatch, tmp_path, capsys):
    """``train.py nli``'s flags override the YAML recipe; without them the recipe's values stand."""
    from nlgmetrics.cli import train
    from nlgmetrics.nli import training

    seen = []
    monkeypatch.setattr(training, "train_nli", lambda config, **kwargs: seen.append((config, kwargs)) or {"ok": 1})
    recipe = "configs/nli/minilm_lora.yaml"
    base = NLITrainConfig.from_yaml(recipe, {})
    assert train.main(["nli", "--config", recipe]) == 0
    assert seen[-1][0] == base and seen[-1][1]["recipe"] == (recipe,)
    assert (
        train.main(
            [
                "nli",
                "--config",
                recipe,
                "--output",
                str(tmp_path / "out"),
                "--subset",
                "50",
                "--epochs",
                "3",
                "--commercial-only",
                "--resume",
                str(tmp_path / "last.safetensors"),
            ]
        )
        == 0
    )
    config = seen[-1][0]
    assert (config.output, config.limit, config.epochs, config.commercial_only, config.resume_from) == (
        str(tmp_path / "out"),
        50,
        3,
        True,
        str(tmp_path / "last.safetensors"),
    )
    assert config.lr == base.lr and config.lora == base.lora  # what no flag names stays the recipe's
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1]) == {"ok": 1}


def test_an_embeddinggemma_like_base_trains_in_bf16_and_reloads(tmp_path):
    """Gemma 3 encoders name their projections q_proj/.../down_proj and their head ``score``: the default pattern
    must adapt them (attention included) and the head must train, here under bf16 autocast as the Gemma recipe."""
    from tests.tiny_models import build_gemma3_encoder

    base = build_gemma3_encoder(tmp_path / "gemma")
    data = _tiny_nli_data(tmp_path / "train.jsonl")
    config = NLITrainConfig(
        base=str(base),
        train_files=[str(data)],
        test_files={"toy": str(data)},
        dev_size=6,
        batch_size=8,
        epochs=1,
        lr=1e-3,
        precision="bf16-mixed",
        lora=LoraShape(r=2, alpha=4, modules_to_save=["score"]),
        output=str(tmp_path / "ckpt"),
        accelerator="cpu",
        devices=1,
    )
    report = train_nli(config)
    assert report["trainable_parameters"] > 0
    from safetensors import safe_open

    with safe_open(str(tmp_path / "ckpt" / "adapter.safetensors"), "pt") as tensors:
        names = list(tensors.keys())
        lora_b = {k: tensors.get_tensor(k) for k in names if "lora_B" in k}
    assert any("self_attn.q_proj" in k for k in lora_b) and any("mlp.down_proj" in k for k in lora_b)
    assert all(float(b.abs().max()) > 0 for b in lora_b.values())
    assert any(".score." in k for k in names), "the classification head is saved"
    model = load_nli(str(tmp_path / "ckpt"))
    assert model.predict_proba(["the cat runs"], ["a cat runs"]).shape == (1, 3)


def test_a_head_the_adapter_does_not_save_is_refused(tmp_path):
    """A head missing from modules_to_save would stay at its random initialisation through hours of training."""
    from tests.tiny_models import build_gemma3_encoder

    base = build_gemma3_encoder(tmp_path / "gemma")
    data = _tiny_nli_data(tmp_path / "train.jsonl")
    config = NLITrainConfig(
        base=str(base),
        train_files=[str(data)],
        dev_size=6,
        batch_size=8,
        epochs=1,
        lora=LoraShape(r=2, alpha=4),  # classifier/pooler: BERT's names, not Gemma's ``score``
        output=str(tmp_path / "ckpt"),
        accelerator="cpu",
        devices=1,
    )
    with pytest.raises(ValueError, match="score"):
        train_nli(config)
    assert not (tmp_path / "ckpt").exists()
