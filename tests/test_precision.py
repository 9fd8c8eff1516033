"""bfloat16 and int8 forward passes (``--precision``): products in bfloat16 or int8, metric arithmetic and outputs
in float32, scores close to float32's but not equal, and signatures that keep them apart (tiny random models)."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.cli_helpers import run

HYPS = [
    "the cat runs home .",
    "a dog sees the old house",
    "rain falls",
    "she reads a long story today .",
    "the man walks",
    "two birds sing in the tree .",
]
REFS = [
    "the cat runs .",
    ["a dog sees the big house", "the dog saw a house"],
    "the rain is falling",
    "she reads a story .",
    "a man walks",
    "birds sing in a tree .",
]


def test_forward_precision_rounds_products_inside_only_and_names_its_choices():
    from nlgmetrics.modelroles.precision import check_precision, forward_precision, precision_tag

    a, b = torch.randn(4, 8), torch.randn(8, 3)
    with forward_precision("cpu", "bfloat16"):
        inside = a @ b
    with forward_precision(torch.device("cpu"), "float32"):
        plain = a @ b
    assert inside.dtype == torch.bfloat16 and plain.dtype == torch.float32 and (a @ b).dtype == torch.float32
    assert torch.allclose(inside.float(), plain, atol=0.1) and not torch.equal(inside.float(), plain)
    assert precision_tag("float32") == "" and precision_tag("bfloat16") == "|precision:bfloat16"
    with pytest.raises(ValueError, match="unknown precision 'float16': choose float32, bfloat16 or int8"):
        check_precision("float16")


def _sescore_checkpoint(tiny, root, **overrides) -> str:
    from sescore.regressor.checkpoint import export_checkpoint
    from sescore.regressor.module import SEScoreModule

    torch.manual_seed(0)
    module = SEScoreModule(encoder=str(tiny["encoder"]), hidden_sizes=[16], **overrides)
    with torch.no_grad():  # a head that does not start at zero, so the head's part of the score is seen too
        module.regressor.head[-1].weight.normal_(0.0, 0.5)
    return str(export_checkpoint(module.regressor.eval(), root))


def _scorers(tiny, tmp_path, precision: str) -> dict:
    from menli import MENLIScorer
    from nlgmetrics.baselines import BERTScorer, CosineScorer
    from sescore.regressor import SEScoreScorer

    mix = _sescore_checkpoint(tiny, tmp_path / "mix", layer_mix=True)
    align = _sescore_checkpoint(tiny, tmp_path / "align", layer_mix=False, alignment=True)
    return {
        "bertscore": BERTScorer(str(tiny["encoder"]), precision=precision),
        "cosine": CosineScorer(str(tiny["encoder"]), precision=precision),
        "sescore-layer-mix": SEScoreScorer(mix, precision=precision),
        "sescore-alignment": SEScoreScorer(align, precision=precision),
        "sescore-ensemble": SEScoreScorer([mix, align], precision=precision),
        "menli": MENLIScorer(str(tiny["nli"]), precision=precision),
    }


def test_bfloat16_scores_are_close_to_float32_not_equal_and_signed_apart(tiny, tmp_path):
    full = _scorers(tiny, tmp_path / "a", "float32")
    half = _scorers(tiny, tmp_path / "b", "bfloat16")
    for name in full:
        a, b = np.asarray(full[name].score(HYPS, REFS)), np.asarray(half[name].score(HYPS, REFS))
        assert a.dtype == b.dtype == np.float64, name
        assert np.abs(a - b).max() < 0.05, (name, a, b)
        assert not np.array_equal(a, b), name  # the forward really ran in bfloat16
        assert len(set(b.tolist())) == len(set(a.tolist())), name  # no ties from rounding the arithmetic
        sig_a, sig_b = full[name].signature(), half[name].signature()
        assert "precision" not in sig_a, name  # float32 signatures (and the score caches keyed by them) unchanged
        assert sig_b == sig_a.replace("|version:", "|precision:bfloat16|version:"), name


def test_int8_scores_are_close_to_float32_not_equal_and_signed_apart(tiny, tmp_path):
    full = _scorers(tiny, tmp_path / "a", "float32")
    quantized = _scorers(tiny, tmp_path / "b", "int8")
    for name in full:
        a, b = np.asarray(full[name].score(HYPS, REFS)), np.asarray(quantized[name].score(HYPS, REFS))
        assert a.dtype == b.dtype == np.float64, name
        assert np.abs(a - b).max() < 0.05, (name, a, b)
        assert not np.array_equal(a, b), name  # the int8 layers really ran
        assert len(set(b.tolist())) == len(set(a.tolist())), name  # outputs and metric arithmetic stay float32
        sig_a, sig_b = full[name].signature(), quantized[name].signature()
        assert sig_b == sig_a.replace("|version:", "|precision:int8|version:"), name


def test_int8_runs_a_copy_with_int8_block_layers_and_leaves_the_shared_float32_model_exact(tiny):
    """The int8 copy quantizes the transformer blocks' linear layers only (the classifier head stays float32), is
    made once per model and weights, and never changes the float32 model that other metrics share: float32 scores
    after an int8 run are the same bits as before it."""
    from torch.ao.nn.quantized.dynamic import Linear as DynamicLinear

    from nlgmetrics.baselines import BERTScorer
    from nlgmetrics.modelroles.precision import block_linears, forward_precision, is_int8, running_model
    from nlgmetrics.nli import load_nli

    model = load_nli(str(tiny["nli"]), "cpu").model
    keys = list(model.state_dict())
    names = block_linears(model)
    assert names and all(".layer." in name for name in names) and not any("classifier" in n for n in names)
    assert running_model(model) is model  # outside an int8 block
    with forward_precision("cpu", "int8"):
        copy = running_model(model)
        assert running_model(model) is copy and running_model(copy) is copy and is_int8(copy)
    kinds = dict(copy.named_modules())
    assert all(isinstance(kinds[name], DynamicLinear) for name in names)
    assert isinstance(kinds["classifier"], torch.nn.Linear) and not is_int8(model) and list(model.state_dict()) == keys
    with torch.no_grad():
        next(model.parameters()).add_(0.0)  # an in-place change: the copy no longer matches the weights
    with forward_precision("cpu", "int8"):
        assert running_model(model) is not copy
    before = BERTScorer(str(tiny["encoder"])).score(HYPS, REFS)
    BERTScorer(str(tiny["encoder"]), precision="int8").score(HYPS, REFS)
    assert BERTScorer(str(tiny["encoder"])).score(HYPS, REFS) == before
    with pytest.raises(ValueError, match="CPU only"):
        with forward_precision("cuda", "int8"):
            pass


def test_bfloat16_on_the_cpu_runs_a_bf16_weight_twin_with_the_bits_of_plain_autocast(tiny):
    """The twin holds the block layers' weights rounded once to bfloat16, as autocast rounds them on every call:
    its outputs are the same bits as the float32 model's under autocast, it shares every other tensor with the
    float32 model, and the float32 model is unchanged."""
    from nlgmetrics.modelroles.precision import block_linears, forward_precision, is_bf16_twin, running_model
    from nlgmetrics.nli import load_nli

    nli = load_nli(str(tiny["nli"]), "cpu")
    model = nli.model
    before = {k: v.clone() for k, v in model.state_dict().items()}
    encoded = nli.tokenizer(
        ["the cat sat on the mat", "a dog"], ["a cat sat", "no dog ran"], padding=True, return_tensors="pt"
    )
    with torch.inference_mode(), torch.autocast("cpu", dtype=torch.bfloat16):
        plain = model(**encoded).logits.float()
    with torch.inference_mode(), forward_precision("cpu", "bfloat16"):
        twin = running_model(model)
        assert running_model(model) is twin and running_model(twin) is twin and is_bf16_twin(twin)
        fast = twin(**encoded).logits.float()
    assert torch.equal(plain, fast)
    modules, twin_modules = dict(model.named_modules()), dict(twin.named_modules())
    names = block_linears(model)
    assert all(twin_modules[n].weight.dtype == torch.bfloat16 for n in names)
    assert twin_modules["classifier"].weight is modules["classifier"].weight, "the head is shared, not copied"
    shared = {id(p) for p in model.parameters()} & {id(p) for p in twin.parameters()}
    assert len(shared) == len(list(model.parameters())) - sum(1 + (modules[n].bias is not None) for n in names)
    assert not is_bf16_twin(model)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())
    with torch.no_grad():
        next(model.parameters()).add_(0.0)  # an in-place change: the twin is made anew
    with forward_precision("cpu", "bfloat16"):
        assert running_model(model) is not twin
    assert running_model(model) is model, "outside bfloat16 the float32 model runs"


def test_a_loops_bfloat16_autocast_scores_as_precision_bfloat16_does(tiny, tmp_path):
    """Inside a caller's autocast (Lightning's bf16-mixed validation) the encoder runs in bfloat16 and the head and
    alignment still in float32: the same scores as ``precision="bfloat16"``, bit for bit."""
    from sescore.functional import sescore_scores
    from sescore.regressor import load_checkpoint

    regressor = load_checkpoint(_sescore_checkpoint(tiny, tmp_path / "align", layer_mix=True, alignment=True))
    asked = sescore_scores(regressor, HYPS, REFS, precision="bfloat16")
    with torch.autocast("cpu", dtype=torch.bfloat16):
        in_loop = sescore_scores(regressor, HYPS, REFS)
    np.testing.assert_array_equal(in_loop, asked)
    assert not np.array_equal(asked, sescore_scores(regressor, HYPS, REFS))


def test_unknown_precision_is_refused_before_any_model_loads():
    from menli import MENLIScorer
    from nlgmetrics.baselines import BERTScorer
    from sescore.regressor import SEScoreScorer

    for make in (
        lambda: BERTScorer("nowhere", precision="fp16"),
        lambda: SEScoreScorer("nowhere", precision="fp16"),
        lambda: MENLIScorer("nowhere", precision="fp16"),
    ):
        with pytest.raises(ValueError, match="unknown precision 'fp16'"):
            make()


def test_stored_mix_ranges_apply_whatever_the_partner_precision():
    from menli.scorer import metric_fitted_with

    fp32 = "sescore|ckpt:mpnet-v2@ab|encoder:packaged:mpnet@cd|scale:unit|refs:max|version:0.1.0"
    bf16 = "sescore|ckpt:mpnet-v2@ab|encoder:packaged:mpnet@cd|scale:unit|refs:max|precision:bfloat16|version:0.1.0"
    assert (
        metric_fitted_with(bf16)
        == metric_fitted_with(fp32)
        == "sescore|ckpt:mpnet-v2@ab|encoder:packaged:mpnet@cd|scale:unit|refs:max"
    )


def test_cli_precision_reaches_the_scorer_and_is_refused_where_not_implemented(capsys, tmp_path, tiny):
    hyps, refs = tmp_path / "h.txt", tmp_path / "r.txt"
    hyps.write_text("\n".join(["the cat runs home .", "rain falls"]) + "\n", encoding="utf-8")
    refs.write_text("\n".join(["the cat runs .", "the rain is falling"]) + "\n", encoding="utf-8")
    base = ["score", "--hyps", str(hyps), "--refs", str(refs), "--quiet"]
    code, out, err = run(
        capsys, *base, "--metric", "bertscore", "--encoder", str(tiny["encoder"]), "--precision", "bfloat16"
    )
    assert code == 0, err
    assert "|precision:bfloat16|" in json.loads(out[-1])["signature"]
    code, _, err = run(
        capsys, *base, "--metric", "lm-ratio", "--causal-lm", str(tiny["llama"]), "--precision", "bfloat16"
    )
    assert code != 0 and any(
        "--precision is not an option of lm-ratio: it is for bertscore, cosine, menli, sescore" in line for line in err
    )
    with pytest.raises(SystemExit):
        run(capsys, *base, "--metric", "bertscore", "--precision", "float16")
    assert "invalid choice: 'float16'" in capsys.readouterr().err


def test_devmix_versus_precision_compares_one_metric_in_two_precisions(capsys, tmp_path, tiny):
    from tests.test_devmix import _write_mix

    mix = _write_mix(tmp_path)
    cache = tmp_path / "cache"
    code, out, err = run(
        capsys,
        "devmix",
        "--mix",
        str(mix),
        "--data-root",
        str(tmp_path),
        "--metric",
        "bertscore",
        "--versus",
        "bertscore",
        "--encoder",
        str(tiny["encoder"]),
        "--precision",
        "bfloat16",
        "--versus-precision",
        "float32",
        "--half",
        "select",
        "--bootstrap",
        "20",
        "--quiet",
        "--sets",
        "two",
        "--cache",
        str(cache),
    )
    assert code == 0, err
    result = json.loads(out[-1])
    assert result["label_a"] == "bertscore bfloat16" and result["label_b"] == "bertscore float32"
    assert "precision:bfloat16" in result["signature"] and "precision" not in result["versus_signature"]
    from nlgmetrics.diskcache import CacheFile

    stored = [list(CacheFile(p, "scores").read().values()) for p in sorted(cache.glob("*.jsonl"))]
    assert len(stored) == 2 and stored[0] != stored[1]
    assert np.abs(np.subtract(*stored)).max() < 0.05


def test_devmix_versus_checkpoint_compares_two_sescore_checkpoints_on_the_same_rows(capsys, tmp_path, tiny):
    from tests.test_devmix import _write_mix

    mix = _write_mix(tmp_path)
    first = _sescore_checkpoint(tiny, tmp_path / "first", layer_mix=True)
    second = _sescore_checkpoint(tiny, tmp_path / "second", layer_mix=False, alignment=True)
    base = ["devmix", "--mix", str(mix), "--data-root", str(tmp_path), "--half", "select", "--bootstrap", "20"]
    base += ["--quiet", "--sets", "two", "--metric", "sescore", "--checkpoint", first, "--versus", "sescore"]
    code, out, err = run(capsys, *base, "--versus-checkpoint", second)
    assert code == 0, err
    result = json.loads(out[-1])
    assert "ckpt:first@" in result["signature"] and "ckpt:second@" in result["versus_signature"]
    assert result["label_a"] == f"sescore ({first})" and result["label_b"] == f"sescore ({second})"
    assert result["sets"][0]["difference"] != 0.0  # each checkpoint scored the rows itself
    code, out, err = run(capsys, *base)  # no --versus-checkpoint: the baseline takes --checkpoint
    assert code == 0, err
    assert json.loads(out[-1])["versus_signature"] == result["signature"]
    code, _, err = run(capsys, *base[:-1], "chrf", "--versus-checkpoint", second)
    assert code == 1 and "--versus chrf has no checkpoint" in "".join(err)


def test_the_torchmetrics_metrics_take_a_precision_and_score_as_their_scorers(tiny, tmp_path):
    from menli import MENLI, MENLIScorer
    from nlgmetrics.inputs import InputError
    from sescore import SEScore
    from sescore.regressor import SEScoreScorer

    folder = _sescore_checkpoint(tiny, tmp_path / "ckpt", layer_mix=True, alignment=True)
    hyps, refs = HYPS[:4], [r if isinstance(r, list) else [r] for r in REFS[:4]]
    for precision in ("bfloat16", "int8"):
        for metric, scorer in (
            (SEScore(folder, per_sample=True, precision=precision), SEScoreScorer(folder, precision=precision)),
            (
                MENLI(str(tiny["nli"]), per_sample=True, precision=precision),
                MENLIScorer(str(tiny["nli"]), precision=precision),
            ),
        ):
            metric.update(hyps, refs)
            np.testing.assert_array_equal(metric.compute().numpy(), scorer.score(hyps, refs))
    plain = SEScore(folder, per_sample=True)
    plain.update(hyps, refs)
    assert not np.array_equal(plain.compute().numpy(), SEScoreScorer(folder, precision="bfloat16").score(hyps, refs))
    for make in (lambda: SEScore(folder, precision="half"), lambda: MENLI(str(tiny["nli"]), precision="half")):
        with pytest.raises(InputError, match="unknown precision 'half'"):
            make()
