"""The torchmetrics contract every text metric of the toolkit keeps (``nlgmetrics.textmetric``).

One parametrised file: SEScore, MENLI, MARS and MENLIMix must agree on argument names, dtype, empty state, per-sample
output, chunking, input errors, pickling without the model, and DDP with a rank that never updates.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch
from ddp_worker import build, free_port

from nlgmetrics.inputs import InputError

REPO = Path(__file__).resolve().parents[1]
WORKER = Path(__file__).with_name("ddp_worker.py")

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


def _sescore_checkpoint(tiny, root: Path) -> str:
    from sescore.regressor.checkpoint import export_checkpoint
    from sescore.regressor.module import SEScoreModule

    torch.manual_seed(0)
    module = SEScoreModule(encoder=str(tiny["encoder"]), hidden_sizes=[16], layer_mix=True)
    with torch.no_grad():  # a head that does not start at zero, so scores vary beyond the F1 skip
        module.regressor.head[-1].weight.normal_(0.0, 0.5)
    return str(export_checkpoint(module.regressor.eval(), root / "sescore"))


def _mars_config(tiny, root: Path) -> dict:
    return {
        "models": {
            "causal_lm": str(tiny["llama"]),
            "encoder": str(tiny["encoder"]),
            "masked_lm": str(tiny["bert_mlm"]),
            "spacy": "packaged:en_core_web_sm",
        },
        "masking": {"ratios": [0.0, 0.4]},
        "cloze": {"lockstep_references": 2},
        "cache_dir": str(root / "mars_cache"),
        "progress": False,
        "device": "cpu",
    }


def _mix_recipe(tiny, root: Path) -> str:
    """Stored weights and ranges for MENLIMix (tiny NLI + chrF + BLEU), fitted once on the contract's rows."""
    from menli import MENLIScorer, MixedScorer

    scorer = MixedScorer(
        MENLIScorer(str(tiny["nli"])), [_partner("chrf")(), _partner("bleu")()], [0.2, 0.5, 0.3], "set"
    )
    scorer.score(HYPS, REFS)
    path = root / "mix.json"
    scorer.last_recipe.save(path)
    return str(path)


def _partner(name: str):
    import functools

    from nlgmetrics.baselines import SacreBleuScorer

    return functools.partial(SacreBleuScorer, name)


@pytest.fixture(scope="module")
def factories(tiny, tmp_path_factory):
    """name -> function(per_sample) building a fresh metric from picklable specs only."""
    from mars.metric import MARS
    from menli.metric import MENLI
    from sescore.metric import SEScore

    root = tmp_path_factory.mktemp("contract")
    checkpoint = _sescore_checkpoint(tiny, root)
    mars_config = _mars_config(tiny, root)
    recipe = _mix_recipe(tiny, root)
    from menli.metric import MENLIMix

    return {
        "menli-mix": lambda per_sample=False: MENLIMix(
            [_partner("chrf"), _partner("bleu")],
            recipe=recipe,
            model=str(tiny["nli"]),
            batch_size=2,
            per_sample=per_sample,
        ),
        "sescore": lambda per_sample=False: SEScore(checkpoint=checkpoint, batch_size=2, per_sample=per_sample),
        "menli": lambda per_sample=False: MENLI(model=str(tiny["nli"]), batch_size=2, per_sample=per_sample),
        "mars": lambda per_sample=False: MARS(mars_config, per_sample=per_sample),
    }


def _refs_for(name: str, refs: list) -> list:
    """MARS augments exactly one human reference per sample: give it the first of a list."""
    return [r[0] if isinstance(r, list) else r for r in refs] if name == "mars" else refs


METRICS = ["sescore", "menli", "mars", "menli-mix"]


@pytest.mark.parametrize("name", METRICS)
def test_update_takes_preds_and_target_and_computes_a_float64_mean(factories, name):
    refs = _refs_for(name, REFS)
    per_sample = factories[name](per_sample=True)
    per_sample.update(preds=HYPS, target=refs)
    values = per_sample.compute()
    assert values.dtype == torch.float64 and values.shape == (len(HYPS),)
    assert torch.isfinite(values).all()
    mean = factories[name]()
    mean.update(preds=HYPS, target=refs)
    result = mean.compute()
    assert result.dtype == torch.float64 and result.dim() == 0
    assert float(result) == pytest.approx(float(values.mean()), abs=1e-12)


@pytest.mark.parametrize("name", METRICS)
def test_empty_state_is_nan_mean_and_empty_per_sample(factories, name):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torchmetrics warns about compute() before update()
        mean, per_sample = factories[name]().compute(), factories[name](per_sample=True).compute()
        assert mean.dtype == torch.float64 and torch.isnan(mean)
        assert per_sample.dtype == torch.float64 and per_sample.shape == (0,)
        metric = factories[name](per_sample=True)
        metric.update([], [])  # an empty batch (e.g. a filtered validation step) adds nothing
        assert metric.compute().shape == (0,)


@pytest.mark.parametrize("name", METRICS)
def test_chunked_updates_equal_one_update_bit_for_bit(factories, name):
    refs = _refs_for(name, REFS)
    whole = factories[name](per_sample=True)
    whole.update(HYPS, refs)
    chunked = factories[name](per_sample=True)
    for start, stop in ((0, 1), (1, 4), (4, 6)):
        chunked.update(HYPS[start:stop], refs[start:stop])
    np.testing.assert_array_equal(chunked.compute().numpy(), whole.compute().numpy())


@pytest.mark.parametrize("name", METRICS)
@pytest.mark.parametrize(
    "preds,target,message",
    [
        ("hello", "hello", "one string"),
        (None, ["a"], "got None"),
        (["a", None], ["a", "b"], r"preds\[1\] is NoneType"),
        ([3], ["a"], r"preds\[0\] is int"),
        (["a b"], [["x", 7]], r"target\[0\]\[1\] is int"),
        (["  "], ["a"], r"preds\[0\] is empty"),
        (["a \ud800 b"], ["a"], r"preds\[0\] has a lone surrogate at character 2"),
        (["a", "b"], ["a"], "mismatched lengths"),
    ],
)
def test_bad_input_is_one_clear_error_naming_the_item(factories, name, preds, target, message):
    metric = factories[name]()
    with pytest.raises(InputError, match=message):
        metric.update(preds, target)
    assert isinstance(metric.scores, list) and not metric.scores  # nothing half-added


@pytest.mark.parametrize("name", ["sescore", "menli", "menli-mix"])
def test_reference_based_metrics_refuse_sources(factories, name):
    with pytest.raises(InputError, match="takes no srcs"):
        factories[name]().update(["a"], ["b"], srcs=["c"])


@pytest.mark.parametrize("name", METRICS)
def test_pickles_without_the_model_and_reloads_it(factories, name):
    refs = _refs_for(name, REFS)
    metric = factories[name](per_sample=True)
    metric.update(HYPS[:3], refs[:3])
    blob = pickle.dumps(metric)
    assert len(blob) < 1_000_000, f"{name} pickles {len(blob)} bytes: the model went along"
    clone = pickle.loads(blob)
    np.testing.assert_array_equal(clone.compute().numpy(), metric.compute().numpy())
    clone.update(HYPS[3:], refs[3:])  # reloads the model from its spec
    metric.update(HYPS[3:], refs[3:])
    np.testing.assert_array_equal(clone.compute().numpy(), metric.compute().numpy())
    pickle.dumps(metric)  # still picklable after more updates (no local hook objects in the state)


def test_a_metric_given_a_model_object_without_spec_says_how_to_reload(tiny):
    from menli.metric import MENLI

    class Table:  # an NLI-like object with no spec to reload from
        max_length = 64

        def predict_proba(self, premises, hypotheses, **kwargs):
            return np.tile([0.5, 0.3, 0.2], (len(premises), 1))

    metric = MENLI(nli=Table(), granularity="text")
    metric.update(["a"], ["b"])
    clone = pickle.loads(pickle.dumps(metric))
    with pytest.raises(InputError, match="model=SPEC"):
        clone.update(["a"], ["b"])


@pytest.mark.parametrize("name", METRICS)
def test_ddp_with_an_empty_rank_equals_one_process(factories, tiny, tmp_path, name):
    root = tmp_path / "models"
    root.mkdir()
    refs = _refs_for(name, REFS)
    args = {
        "checkpoint": _sescore_checkpoint(tiny, root),
        "nli": str(tiny["nli"]),
        "mars": _mars_config(tiny, root),
        "mix_recipe": _mix_recipe(tiny, root),
        "hyps": HYPS,
        "refs": refs,
        "name": name,
        "world": 2,
        "port": free_port(),
        "out_dir": str(tmp_path),
    }
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps(args))
    ranks = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(args_file), str(rank)],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in (0, 1)
    ]
    for rank, process in enumerate(ranks):
        output, _ = process.communicate(timeout=300)
        assert process.returncode == 0, f"rank {rank} failed:\n{output[-3000:]}"
    single = build(name, args, per_sample=True)
    single.update(HYPS, refs)
    expected = single.compute().numpy()
    for rank in (0, 1):
        result = json.loads((tmp_path / f"rank{rank}.json").read_text())
        assert result["dtype"] == "torch.float64"
        np.testing.assert_allclose(result["per_sample"], expected, rtol=0, atol=1e-12)
        assert result["mean"] == pytest.approx(float(expected.mean()), abs=1e-12)


def test_sescore_with_token_alignment_is_chunking_invariant_too(tiny, tmp_path):
    """The shipped checkpoint aligns tokens (BERTScore features): pair batches must not change its scores."""
    from sescore.metric import SEScore
    from sescore.regressor.checkpoint import export_checkpoint
    from sescore.regressor.module import SEScoreModule

    torch.manual_seed(0)
    module = SEScoreModule(encoder=str(tiny["encoder"]), hidden_sizes=[16], layer_mix=True, alignment=True)
    with torch.no_grad():
        module.regressor.head[-1].weight.normal_(0.0, 0.5)
    folder = str(export_checkpoint(module.regressor.eval(), tmp_path / "align"))
    whole = SEScore(checkpoint=folder, per_sample=True, batch_size=4)
    whole.update(HYPS, REFS)
    chunked = SEScore(checkpoint=folder, per_sample=True, batch_size=3)
    for start, stop in ((0, 1), (1, 2), (2, 6)):
        chunked.update(HYPS[start:stop], REFS[start:stop])
    np.testing.assert_array_equal(chunked.compute().numpy(), whole.compute().numpy())
