"""The packaged MENLI + BERTScore ranges against the weight ablation's result file, bench/fit_menli_ranges.py's file
names and bench/bench_menli_mix.py's check of the mix against its parts."""

import json

import numpy as np
import pytest


def test_shipped_ranges_file_is_the_weight_ablations_ranges():
    """The stress runs read the ranges from the ablation's result file, `evaluate.py --normalization` from the
    packaged file: both must be the same numbers, or the README's blind-spot rows describe another metric."""
    from pathlib import Path

    from menli import MixRecipe
    from nlgmetrics.resources import CONFIG_DIR

    repo = Path(__file__).resolve().parents[1]
    result = json.loads((repo / "bench" / "results" / "menli_bertscore_weight_nli-mpnet.json").read_text())
    shipped = MixRecipe.load(CONFIG_DIR / "menli" / "nli-mpnet+bertscore-minilm.json")
    (nli, partner), (nli_record, partner_record) = shipped.ranges, shipped.fitted_with
    assert (nli.low, nli.high) == (result["ranges"]["menli"]["low"], result["ranges"]["menli"]["high"])
    assert (partner.low, partner.high) == (result["ranges"]["bertscore"]["low"], result["ranges"]["bertscore"]["high"])
    assert nli_record.startswith(result["nli_model"] + "@")
    assert nli_record.endswith("|formula:e|direction:<->") and result["strategy"] == "e <->"
    assert result["bertscore"].startswith(partner_record + "|version:")
    assert result["robust_weight"] == 0.4  # the weight the README's command and stress column use


def test_range_files_are_named_by_nli_model_partner_and_its_model():
    from bench.fit_menli_ranges import file_name

    assert (
        file_name("packaged:nli-mpnet", "bertscore|encoder:packaged:minilm@59d7|layer:None|idf:no", "bertscore")
        == "nli-mpnet+bertscore-minilm"
    )  # the robust combination's packaged file
    assert file_name("packaged:nli-mpnet", "chrf|nrefs:var|case:mixed|version:2.6.0", "chrf") == "nli-mpnet+chrf"
    assert (
        file_name("/models/my_nli", "lm-ratio|lm:packaged:smollm2@d38e|logprob", "lm-ratio")
        == "my_nli+lm-ratio-smollm2"
    )


def test_mix_cost_bench_checks_the_mix_against_the_recipe_its_run_found_on_its_parts_scores(tmp_path):
    from bench.bench_menli_mix import MIX, mix_of_parts
    from menli import MixRecipe
    from nlgmetrics.resources import CONFIG_DIR

    packaged = CONFIG_DIR / "menli" / "mix" / "nli-mpnet+sescore-minilm+lm-ratio-smollm2.json"
    recipe = MixRecipe.load(packaged)
    scores = {"menli": [0.2, 0.9], "sescore": [0.5, 0.7], "lm-ratio": [-1.0, 0.5]}
    runs = {f"{name}@wmt": [{"scores": s}] for name, s in scores.items()}
    runs[f"{MIX}@wmt"] = [{"scores": [0.0, 0.0], "recipe_file": str(packaged)}]
    want = sum(
        p.weight * (np.asarray(scores[p.name]) - p.range.low) / (p.range.high - p.range.low) for p in recipe.parts
    )
    np.testing.assert_allclose(mix_of_parts(runs, "wmt"), want)
    assert mix_of_parts({**runs, "sescore@wmt": []}, "wmt") is None  # a failed part: no check, not a wrong one
    assert mix_of_parts({**runs, f"{MIX}@wmt": []}, "wmt") is None

    # the check follows the file the mix's run names, not a path of its own
    other = json.loads(packaged.read_text())
    for part, weight in zip(other["parts"], (1.0, 0.0, 0.0)):
        part["weight"] = weight
    (tmp_path / "other.json").write_text(json.dumps(other))
    runs[f"{MIX}@wmt"] = [{"scores": [0.0, 0.0], "recipe_file": str(tmp_path / "other.json")}]
    menli_part = recipe.parts[0]
    np.testing.assert_allclose(
        mix_of_parts(runs, "wmt"),
        (np.asarray(scores["menli"]) - menli_part.range.low) / (menli_part.range.high - menli_part.range.low),
    )
    runs[f"{MIX}@wmt"] = [{"scores": [0.0, 0.0], "recipe_file": None}]
    with pytest.raises(SystemExit, match="found no packaged recipe"):
        mix_of_parts(runs, "wmt")
