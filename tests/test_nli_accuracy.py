"""``nlgmetrics-evaluate nli-accuracy``: the same rows for every model, per-set accuracy, paired differences."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from nlgmetrics.cli.commands.nli_accuracy import groups, markdown_table, paired_accuracy_difference
from nlgmetrics.cli.evaluate import main


def _rows(path: Path, langs: tuple[str, ...] = ("de", "fr", "es")) -> Path:
    rows = [
        {
            "premise": f"a dog runs {i}",
            "hypothesis": f"an animal moves {i}",
            "label": i % 3,
            "lang": lang,
            "split": "test",
        }
        for lang in langs
        for i in range(9)
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    return path


def test_paired_difference_is_zero_for_one_model_and_signed_for_a_better_one():
    a = np.array([1, 0, 1, 0, 1, 0, 1, 0] * 10, bool)
    same = paired_accuracy_difference(a, a, resamples=200)
    assert same["difference"] == 0 and same["not_better"] == 1.0
    better = paired_accuracy_difference(a, np.ones_like(a), resamples=200)
    assert better["difference"] == pytest.approx(0.5) and 0 < better["low"] <= 0.5 <= better["high"]
    assert better["not_better"] == 0.0
    with pytest.raises(ValueError, match="equal, non-empty"):
        paired_accuracy_difference(a, a[:3])


def test_groups_need_three_sets_sharing_a_prefix():
    assert groups(["xnli_de", "xnli_fr", "snli", "xnli_es", "sick_a", "sick_b"]) == {
        "xnli": ["xnli_de", "xnli_fr", "xnli_es"]
    }


def test_the_command_scores_recipe_test_sets_for_two_models(tiny, tmp_path, capsys):
    data = _rows(tmp_path / "x.jsonl")
    recipe = tmp_path / "recipe.yaml"
    specs = "\n".join(
        f"  x_{lang}: {{path: {data}, splits: [test], langs: [{lang}], limit: 6}}" for lang in ("de", "fr", "es")
    )
    recipe.write_text(f"base: {tiny['encoder']}\ntest_files:\n{specs}\n", encoding="utf-8")
    out_json, out_md = tmp_path / "r.json", tmp_path / "r.md"
    model = str(tiny["nli"])
    code = main(
        [
            "nli-accuracy",
            "--nli-model",
            f"{model},{model}",
            "--recipe",
            str(recipe),
            "--resamples",
            "50",
            "--json",
            str(out_json),
            "--markdown",
            str(out_md),
        ]
    )
    assert code == 0
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert list(result["sets"]) == ["x_de", "x_fr", "x_es"] and result["sets"]["x_de"]["n"] == 6
    first, second = result["models"]
    assert first["sets"] == second["sets"]  # the same model on the same rows: the same accuracy
    assert second["versus_first"]["x_fr"]["difference"] == 0
    assert json.loads(out_json.read_text())["models"][0]["hash"] == first["hash"]
    table = out_md.read_text()
    assert "| mean of the 3 x sets |" in table and table == markdown_table(result)


def test_the_command_names_bad_test_options(tiny, tmp_path, capsys):
    data = _rows(tmp_path / "x.jsonl")
    model = str(tiny["nli"])
    assert main(["nli-accuracy", "--nli-model", model, "--test", "oops"]) == 1
    assert "NAME=PATH" in capsys.readouterr().err
    assert main(["nli-accuracy", "--nli-model", model, "--test", f"a={data}", "--only", "b"]) == 1
    assert "unknown test sets b; known: a" in capsys.readouterr().err
    assert main(["nli-accuracy", "--nli-model", model]) == 1
    assert "no test sets" in capsys.readouterr().err


def test_bfloat16_scores_near_float32_and_is_recorded(tiny, tmp_path, capsys):
    data = _rows(tmp_path / "x.jsonl")
    results = {}
    for precision in ("float32", "bfloat16"):
        argv = ["nli-accuracy", "--nli-model", str(tiny["nli"]), "--test", f"x={data}", "--resamples", "10"]
        assert main([*argv, "--precision", precision, "--device", "cpu"]) == 0
        results[precision] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert results["bfloat16"]["precision"] == "bfloat16" and results["float32"]["precision"] == "float32"
    fp32, bf16 = (results[p]["models"][0]["sets"]["x"] for p in ("float32", "bfloat16"))
    assert abs(fp32["accuracy"] - bf16["accuracy"]) <= 0.25  # a tiny random model: near, not equal
    assert "bfloat16)" in markdown_table(results["bfloat16"])
