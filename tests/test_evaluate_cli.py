"""evaluate.py end to end on tiny models: outputs, the JSON last line, and one-line errors for bad input."""

import json
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run

from nlgmetrics.cli import evaluate
from nlgmetrics.cli.metricflags import metric_from_args
from nlgmetrics.metaeval import tau_like
from nlgmetrics.scorecache import ScoreCache


@pytest.fixture()
def texts(tmp_path):
    hyps = tmp_path / "hyps.txt"
    refs = tmp_path / "refs.txt"
    srcs = tmp_path / "srcs.txt"
    hyps.write_text("the cat sat on the mat\na dog runs in the city\nshe sings a song\n", encoding="utf-8")
    refs.write_text("the cat sat on a mat\nthe dog walks in the city\nhe sings a song today\n", encoding="utf-8")
    srcs.write_text("die Katze\nder Hund\ner singt\n", encoding="utf-8")
    return hyps, refs, srcs


def test_score_writes_per_segment_scores_and_a_json_last_line(capsys, texts, tmp_path):
    hyps, refs, _ = texts
    out = tmp_path / "scores.jsonl"
    code, stdout, _ = run(
        capsys, "score", "--metric", "chrf", "--hyps", str(hyps), "--refs", str(refs), "--scores", str(out), "--quiet"
    )
    assert code == 0
    last = json.loads(stdout[-1])
    assert last["metric"] == "chrf" and last["n"] == 3 and "nrefs:var" in last["signature"]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["index"] for r in rows] == [0, 1, 2]
    assert last["system_score"] == pytest.approx(sum(r["score"] for r in rows) / 3)


def from_cli(argv: list[str]):
    """The scorer a command line builds for its --metric (flags through the registry, as every subcommand does)."""
    args = evaluate.make_parser().parse_args(argv)
    return metric_from_args(args.metric, args)


def test_menli_and_combination_on_tiny_nli(capsys, texts, tiny, tmp_path):
    hyps, refs, srcs = texts
    common = ["--hyps", str(hyps), "--refs", str(refs), "--nli-model", str(tiny["nli"]), "--quiet"]
    code, stdout, _ = run(capsys, "score", "--metric", "menli", "--formula", "e-c", "--direction", "<-", *common)
    assert code == 0 and "formula:e-c|direction:<-" in json.loads(stdout[-1])["signature"]
    stats = tmp_path / "stats.json"
    code, stdout, _ = run(
        capsys, "score", "--metric", "menli+bleu", "--weight", "0.3", "--save-normalization", str(stats), *common
    )
    assert code == 0
    first = json.loads(stdout[-1])
    assert "w:0.3|norm:set" in first["signature"]
    # the CLI's value is the library's: MENLI (paper MT pooling) and sentence BLEU, min-max over the set, w = 0.3
    from menli import MENLIScorer, mix, pair_weights
    from nlgmetrics.baselines import SacreBleuScorer

    hyp_lines, ref_lines = hyps.read_text().splitlines(), refs.read_text().splitlines()
    nli = MENLIScorer(model=str(tiny["nli"])).score(hyp_lines, ref_lines)
    bleu = SacreBleuScorer("bleu").score(hyp_lines, ref_lines)
    assert first["system_score"] == pytest.approx(float(np.mean(mix([nli, bleu], pair_weights(0.3)))))
    code, stdout, _ = run(
        capsys, "score", "--metric", "menli+bleu", "--weight", "0.3", "--normalization", str(stats), *common
    )
    assert code == 0 and json.loads(stdout[-1])["system_score"] == pytest.approx(first["system_score"])
    code, stdout, _ = run(
        capsys,
        "score",
        "--metric",
        "menli",
        "--reference-free",
        "--srcs",
        str(srcs),
        "--hyps",
        str(hyps),
        "--nli-model",
        str(tiny["nli"]),
        "--quiet",
    )
    assert code == 0 and "anchor:src" in json.loads(stdout[-1])["signature"]


def test_default_normalization_takes_packaged_ranges_fitted_with_these_models(
    capsys, texts, tiny, tmp_path, monkeypatch
):
    """`--normalization auto` (the default): ranges packaged for exactly these models make each row's score
    independent of the rows scored with it; with none, set normalisation and a note saying so."""
    import nlgmetrics.resources
    from menli import MixRecipe, packaged_recipe

    hyps, refs, _ = texts
    common = ["--metric", "menli+chrf", "--weight", "0.3", "--nli-model", str(tiny["nli"]), "--quiet"]
    monkeypatch.setattr(nlgmetrics.resources, "CONFIG_DIR", tmp_path / "configs")  # nothing packaged yet
    code, stdout, stderr = run(capsys, "score", "--hyps", str(hyps), "--refs", str(refs), *common)
    assert code == 0 and "norm:set" in json.loads(stdout[-1])["signature"] and "no packaged recipe" in "\n".join(stderr)
    fitted = tmp_path / "configs" / "menli" / "tiny+chrf.json"
    fitted.parent.mkdir(parents=True)
    other = MixRecipe.load(_save(capsys, hyps, refs, common, tmp_path / "fit.json"))
    MixRecipe.from_ranges(other.ranges, [other.fitted_with[0], "chrf|another"]).save(
        fitted.parent / "a_other_models.json"
    )  # sorted first; fitted with another partner: never taken
    assert packaged_recipe(other.fitted_with) is None and packaged_recipe(None) is None
    other.save(fitted)
    assert packaged_recipe(other.fitted_with)[0] == fitted
    out_all, out_one = tmp_path / "all.jsonl", tmp_path / "one.jsonl"
    code, stdout, stderr = run(
        capsys, "score", "--hyps", str(hyps), "--refs", str(refs), "--scores", str(out_all), *common
    )
    assert code == 0 and "norm:stored" in json.loads(stdout[-1])["signature"] and "no packaged" not in "\n".join(stderr)
    one_hyp, one_ref = tmp_path / "h1.txt", tmp_path / "r1.txt"
    one_hyp.write_text(hyps.read_text().splitlines()[1] + "\n")
    one_ref.write_text(refs.read_text().splitlines()[1] + "\n")
    assert (
        run(capsys, "score", "--hyps", str(one_hyp), "--refs", str(one_ref), "--scores", str(out_one), *common)[0] == 0
    )
    alone = json.loads(out_one.read_text().splitlines()[0])["score"]
    assert alone == pytest.approx(json.loads(out_all.read_text().splitlines()[1])["score"])  # not its neighbours'
    code, stdout, _ = run(capsys, "score", "--hyps", str(hyps), "--refs", str(refs), "--normalization", "set", *common)
    assert "norm:set" in json.loads(stdout[-1])["signature"]  # asked for: the paper's way


def test_mixed_combination_by_weights_then_by_its_saved_recipe(capsys, texts, tiny, tmp_path, monkeypatch):
    """menli+chrf+bleu: with --weights and nothing packaged, set normalisation (said on stderr); its saved recipe
    then fixes weights and ranges, so a row alone scores as among the others; bad weights and a missing recipe
    are one-line errors."""
    import nlgmetrics.resources
    from menli import MENLIScorer, MixRecipe, mix
    from nlgmetrics.baselines import SacreBleuScorer

    monkeypatch.setattr(nlgmetrics.resources, "CONFIG_DIR", tmp_path / "configs")  # nothing packaged
    hyps, refs, _ = texts
    common = ["--metric", "menli+chrf+bleu", "--nli-model", str(tiny["nli"]), "--quiet"]
    recipe, out_all = tmp_path / "mix.json", tmp_path / "all.jsonl"
    code, stdout, stderr = run(
        capsys,
        "score",
        "--hyps",
        str(hyps),
        "--refs",
        str(refs),
        "--weights",
        "0.2,0.5,0.3",
        "--save-normalization",
        str(recipe),
        "--scores",
        str(out_all),
        *common,
    )
    assert code == 0 and "no packaged recipe" in "\n".join(stderr)
    assert "w:0.2,0.5,0.3|norm:set" in json.loads(stdout[-1])["signature"]
    hyp_lines, ref_lines = hyps.read_text().splitlines(), refs.read_text().splitlines()
    parts = [
        MENLIScorer(model=str(tiny["nli"])).score(hyp_lines, ref_lines),
        SacreBleuScorer("chrf").score(hyp_lines, ref_lines),
        SacreBleuScorer("bleu").score(hyp_lines, ref_lines),
    ]
    saved = MixRecipe.load(recipe)
    scores = [json.loads(line)["score"] for line in out_all.read_text().splitlines()]
    assert scores == pytest.approx(list(mix(parts, [0.2, 0.5, 0.3], [p.range for p in saved.parts])))

    one_hyp, one_ref, out_one = tmp_path / "h1.txt", tmp_path / "r1.txt", tmp_path / "one.jsonl"
    one_hyp.write_text(hyp_lines[2] + "\n")
    one_ref.write_text(ref_lines[2] + "\n")
    code, stdout, _ = run(
        capsys,
        "score",
        "--hyps",
        str(one_hyp),
        "--refs",
        str(one_ref),
        "--normalization",
        str(recipe),
        "--scores",
        str(out_one),
        *common,
    )
    assert code == 0 and "w:0.2,0.5,0.3|norm:stored" in json.loads(stdout[-1])["signature"]
    assert json.loads(out_one.read_text())["score"] == pytest.approx(scores[2])

    with pytest.raises(SystemExit):  # argparse: usage and exit code 2
        run(capsys, "score", "--hyps", str(hyps), "--refs", str(refs), "--weights", "0.2,x,0.3", *common)
    assert "comma-separated numbers" in capsys.readouterr().err
    for extra, message in [
        (["--weights", "0.2,0.5"], "2 weights for 3 parts"),
        ([], "no packaged recipe was fitted with these models"),
        (["--normalization", "set"], "needs --weights"),
        (["--normalization", str(tmp_path / "nope.json")], "--normalization: config file not found"),
        (["--metric", "menli+chrf", "--weights", "0.5,0.5"], "menli+chrf takes --weight"),
    ]:
        code, stdout, stderr = run(capsys, "score", "--hyps", str(hyps), "--refs", str(refs), *common, *extra)
        assert code == 1 and len(stderr) == 1 and message in stderr[0], (extra, stderr)


def _save(capsys, hyps, refs, common, path):
    code, _, _ = run(
        capsys,
        "score",
        "--hyps",
        str(hyps),
        "--refs",
        str(refs),
        "--normalization",
        "set",
        "--save-normalization",
        str(path),
        *common,
    )
    assert code == 0
    return path


def test_menli_task_sets_the_papers_pooling_and_explicit_options_win(capsys, texts, tiny):
    hyps, refs, srcs = texts
    common = ["--hyps", str(hyps), "--nli-model", str(tiny["nli"]), "--quiet"]

    def signature(*extra: str) -> str:
        code, stdout, _ = run(capsys, "score", "--metric", "menli", *common, *extra)
        assert code == 0
        return json.loads(stdout[-1])["signature"]

    assert "formula:e|direction:<->" in signature("--refs", str(refs))
    assert "formula:e-c|direction:<-" in signature("--refs", str(refs), "--task", "summarization")
    assert "formula:-c|direction:->|anchor:src" in signature(
        "--srcs", str(srcs), "--reference-free", "--task", "summarization"
    )
    assert "formula:e|direction:<-" in signature("--refs", str(refs), "--task", "summarization", "--formula", "e")
    code, _, stderr = run(capsys, "score", "--metric", "menli", *common, "--refs", str(refs), "--formula", "x")
    assert code == 1 and "unknown MENLI formula 'x'" in stderr[-1]


def test_task_strategy_is_the_papers_table():
    from menli import task_strategy

    assert task_strategy("mt") == ("e", "<->") == task_strategy("mt", reference_free=True)
    assert task_strategy("summarization") == ("e-c", "<-")
    assert task_strategy("summarization", reference_free=True) == ("-c", "->")
    assert task_strategy("summarization", direction="ref<->cand") == ("e-c", "<->")
    with pytest.raises(ValueError, match="unknown MENLI task 'qa'; choose from mt, summarization"):
        task_strategy("qa")


def test_the_clis_written_out_choices_are_menlis_own():
    """evaluate.py writes MENLI's tasks, formulas and directions out (importing menli would load torch for --help),
    so a task or formula added to menli must show up here or this fails."""
    import argparse

    from menli import DIRECTIONS, FORMULAS, TASKS

    commands = next(a for a in evaluate.make_parser()._actions if isinstance(a, argparse._SubParsersAction))
    options = {a.dest: a for a in commands.choices["score"]._actions}
    assert tuple(options["task"].choices) == TASKS
    helps = {dest: action.help for dest, action in options.items()}
    assert f"MENLI formula: {', '.join(FORMULAS)} " in helps["formula"]
    assert all(direction in helps["direction"] for direction in DIRECTIONS)


def test_bertscore_on_a_tiny_encoder_is_the_librarys_and_layer_picks_the_layer(capsys, texts, tiny, tmp_path):
    from nlgmetrics.baselines import BERTScorer

    hyps, refs, _ = texts
    hyp_lines, ref_lines = hyps.read_text().splitlines(), refs.read_text().splitlines()

    def cli(*extra: str) -> list[float]:
        out = tmp_path / "bertscore.jsonl"
        code, _, _ = run(
            capsys,
            "score",
            "--metric",
            "bertscore",
            "--encoder",
            str(tiny["encoder"]),
            "--hyps",
            str(hyps),
            "--refs",
            str(refs),
            "--scores",
            str(out),
            "--quiet",
            *extra,
        )
        assert code == 0
        return [json.loads(line)["score"] for line in out.read_text().splitlines()]

    last, first_layer = cli(), cli("--layer", "1")
    assert last == pytest.approx(BERTScorer(encoder=str(tiny["encoder"])).score(hyp_lines, ref_lines))
    assert first_layer == pytest.approx(BERTScorer(encoder=str(tiny["encoder"]), layer=1).score(hyp_lines, ref_lines))
    # identical computations give identical floats; random tiny layers differ by ~1e-4
    assert max(abs(a - b) for a, b in zip(last, first_layer)) > 1e-6, "--layer 1 scored the last layer"


@pytest.mark.parametrize(
    "case",
    [
        "mismatch",
        "empty",
        "non_utf8",
        "unknown_metric",
        "missing_checkpoint",
        "bad_combo",
        "missing_sescore_checkpoint",
    ],
)
def test_bad_input_exits_nonzero_with_one_line_and_writes_nothing(capsys, texts, tmp_path, case):
    hyps, refs, _ = texts
    out = tmp_path / "never.jsonl"
    metric, nli = "chrf", None
    if case == "mismatch":
        refs.write_text("only one line\n")
    elif case == "empty":
        hyps.write_text("")
    elif case == "non_utf8":
        hyps.write_bytes(b"fine\n\xc3\x28 broken\nok\n")
    elif case == "unknown_metric":
        metric = "rouge-99"
    elif case == "missing_checkpoint":
        metric, nli = "menli", str(tmp_path / "no_such_checkpoint")
    elif case == "bad_combo":
        metric = "bleu+chrf"
    extra = []
    if case == "missing_sescore_checkpoint":
        metric, extra = "sescore", ["--checkpoint", str(tmp_path / "no_such_sescore")]
    nli_flag = ["--nli-model", nli] if nli else []
    code, stdout, stderr = run(
        capsys,
        "score",
        "--metric",
        metric,
        *nli_flag,
        "--hyps",
        str(hyps),
        "--refs",
        str(refs),
        "--scores",
        str(out),
        "--quiet",
        *extra,
    )
    assert code == 1
    assert len(stderr) == 1 and stderr[0].startswith("error: ")
    expected = {
        "mismatch": "mismatched lengths",
        "empty": "file is empty",
        "non_utf8": "not valid UTF-8",
        "unknown_metric": "unknown metric 'rouge-99'",
        "missing_checkpoint": "no directory",
        "bad_combo": "combinations start with menli",
        "missing_sescore_checkpoint": "no such directory",
    }[case]
    assert expected in stderr[0]
    assert not out.exists() and stdout == []


def _judged(tmp_path):
    rows = []
    refs = {1: "the cat sat on the mat", 2: "a dog runs in the park"}
    outputs = {
        "good": {1: "the cat sat on the mat", 2: "a dog runs in the park"},
        "mid": {1: "the cat sat on a rug", 2: "a dog walks in a park"},
        "bad": {1: "dogs fly", 2: "cats sing loudly"},
        "ref-B": {1: "a cat was sitting on the mat", 2: "one dog is running in the park"},
    }
    human = {"good": 0.0, "mid": -5.0, "bad": -20.0, "ref-B": -1.0}
    for system, by_item in outputs.items():
        for item, hyp in by_item.items():
            rows.append(
                {
                    "lp": "xx-en",
                    "item_id": item,
                    "system": system,
                    "src": "",
                    "refs": [refs[item]],
                    "hyp": hyp,
                    "scores": {"mqm": human[system]},
                }
            )
    path = tmp_path / "judged.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


def test_correlate_reports_all_statistics_with_and_without_human_systems(capsys, tmp_path):
    code, stdout, _ = run(capsys, "correlate", "--metric", "chrf", "--data", str(_judged(tmp_path)), "--quiet")
    assert code == 0
    result = json.loads(stdout[-1])
    assert {"tau_like", "kendall_b", "pearson", "system_pearson", "n", "signature"} <= set(result)
    assert result["n"] == 8 and result["without_human_systems"]["n"] == 6
    assert result["without_human_systems"]["tau_like"] == pytest.approx(1.0)
    code, stdout, _ = run(
        capsys, "correlate", "--metric", "chrf", "--data", str(_judged(tmp_path)), "--limit", "1", "--quiet"
    )
    assert json.loads(stdout[-1])["n"] == 4
    code, stdout, _ = run(
        capsys, "correlate", "--metric", "chrf", "--data", str(_judged(tmp_path)), "--skip", "1", "--quiet"
    )
    assert json.loads(stdout[-1])["n"] == 4 and json.loads(stdout[-1])["skip_items"] == 1


def test_correlate_accepts_data_to_text_sources_given_as_lists(capsys, tmp_path):
    """WebNLG sources are lists of triples; they must not break the de-duplication of scored triples."""
    path = _judged(tmp_path)
    rows = [
        dict(json.loads(line), src=["Cat | sits_on | Mat", "Dog | runs_in | Park"])
        for line in path.read_text().splitlines()
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows))
    code, stdout, _ = run(capsys, "correlate", "--metric", "chrf", "--data", str(path), "--quiet")
    assert code == 0 and json.loads(stdout[-1])["n"] == 8


def test_adversarial_reports_per_type_and_mean(capsys, tmp_path):
    rows = [
        {
            "error": "neg",
            "src": "s",
            "refs": ["the cat sat on the mat"],
            "r": "a cat sat on the mat",
            "hyp_para": "the cat sat on the mat today",
            "hyp_adv_based": "the cat did not sit on the mat",
            "hyp_adv_free": "no cat",
        },
        {
            "error": "typo",
            "src": "s",
            "refs": ["a dog runs fast"],
            "r": "the dog runs fast",
            "hyp_para": "one dog is running quickly",
            "hyp_adv_based": "a dgo runs fast",
            "hyp_adv_free": "dgo",
        },
    ]
    path = tmp_path / "adv.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    code, stdout, _ = run(capsys, "adversarial", "--metric", "chrf", "--data", str(path), "--quiet")
    result = json.loads(stdout[-1])
    assert code == 0 and set(result["per_type"]) == {"neg", "typo"}
    assert result["per_type"]["typo"] == 0.0  # chrF prefers the one-typo copy: the known blind spot
    assert result["mean"] == pytest.approx(sum(result["per_type"].values()) / 2)


def _multiref(tmp_path):
    rows = [
        {"item_id": i, "src": "", "refs": [a, b], "hyp": a, "system": "x"}
        for i, (a, b) in enumerate(
            [
                (
                    "The old man walked to the market in the morning and bought fresh bread.",
                    "In the morning the old man went to the market and bought fresh bread.",
                ),
                (
                    "She said the new bridge will open to traffic next year.",
                    "According to her, the new bridge opens to traffic next year.",
                ),
                (
                    "The team played well but lost the final game by two points.",
                    "The team played a good match but lost the final by two points.",
                ),
            ]
        )
    ]
    path = tmp_path / "multiref.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


def test_stress_with_a_toolkit_metric_and_a_plain_callable(capsys, tmp_path):
    out = tmp_path / "stress"
    code, stdout, _ = run(
        capsys,
        "stress",
        "--metric",
        "chrf,py:stress_toy_metric:jaccard",
        "--data",
        str(_multiref(tmp_path)),
        "--tests",
        "truncation,local_swap",
        "--seeds",
        "1,2",
        "--out",
        str(out),
        "--quiet",
        "--min-applied",
        "3",
    )
    assert code == 0
    report = json.loads(stdout[-1])
    assert report["tests"]["truncation"]["passed"]["chrf"] is True
    assert report["tests"]["local_swap"]["passed"]["py:stress_toy_metric:jaccard"] is False  # order-blind
    assert (out / "report.json").exists() and "| truncation |" in (out / "report.md").read_text()
    assert (out / "plots" / "local_swap.png").stat().st_size > 1000


def test_stress_sample_draws_the_same_seeded_items_in_file_order(capsys, tmp_path):
    """--sample N --sample-seed S: a seeded draw of items that every metric's run shares, recorded by id."""
    from nlgmetrics.metaeval.textio import InputError
    from nlgmetrics.stress import stress_rows

    data = tmp_path / "many.jsonl"
    data.write_text(
        "\n".join(json.dumps({"item_id": f"i{k}", "refs": [f"gold {k} a b c", f"ref {k} a b"]}) for k in range(12))
    )
    gold, refs, rows, setup = stress_rows(data, sample=5, sample_seed=3)
    ids = [r["item_id"] for r in rows]
    assert len(ids) == 5 and ids == sorted(ids, key=lambda i: int(i[1:]))  # file order
    assert gold == [f"gold {i[1:]} a b c" for i in ids] and refs == [f"ref {i[1:]} a b" for i in ids]
    assert setup["sample"] == {"items": 5, "seed": 3, "of": 12, "item_ids": ids} and setup["items"] == 5
    assert [r["item_id"] for r in stress_rows(data, sample=5, sample_seed=3)[2]] == ids
    assert [r["item_id"] for r in stress_rows(data, sample=5, sample_seed=4)[2]] != ids
    assert all(int(i[1:]) < 8 for i in (r["item_id"] for r in stress_rows(data, sample=5, limit=8)[2]))
    with pytest.raises(InputError, match="--sample 13 asks for 1 to 12 items"):
        stress_rows(data, sample=13)
    out = tmp_path / "stress"
    code, stdout, _ = run(
        capsys,
        "stress",
        "--metric",
        "chrf",
        "--data",
        str(data),
        "--tests",
        "truncation",
        "--seeds",
        "1",
        "--sample",
        "5",
        "--sample-seed",
        "3",
        "--out",
        str(out),
        "--quiet",
        "--min-applied",
        "3",
        "--no-plots",
    )
    assert code == 0
    assert json.loads((out / "report.json").read_text())["setup"]["sample"]["item_ids"] == ids


def test_stress_resumes_from_its_stored_scores_and_rescores_an_edited_callable(capsys, tmp_path, monkeypatch):
    import sys

    monkeypatch.chdir(tmp_path)
    module = tmp_path / "stress_edited_metric.py"
    module.write_text("def score(hyps, refs, srcs):\n    return [float(len(h)) for h in hyps]\n")
    out = tmp_path / "stress"
    argv = [
        "stress",
        "--metric",
        "chrf,py:stress_edited_metric:score",
        "--data",
        str(_multiref(tmp_path)),
        "--tests",
        "truncation,local_swap",
        "--seeds",
        "1,2",
        "--out",
        str(out),
        "--min-applied",
        "3",
    ]
    code, stdout, stderr = run(capsys, *argv)
    assert code == 0 and "chrf: 0 stored" in "\n".join(stderr)
    first = json.loads(stdout[-1])
    stored = json.loads((out / "scores.costs.json").read_text())  # the ledger: rows stored per signature
    assert len(stored) == 2 and all(cost["rows"] > 3 for cost in stored.values())
    assert first["setup"]["scoring"]["chrf"]["signature"] in stored
    assert len(ScoreCache(out / "scores.jsonl")) == sum(cost["rows"] for cost in stored.values())

    code, stdout, stderr = run(capsys, *argv)  # the same run again: nothing is scored twice, the report is the same
    assert code == 0
    rows = int(stored[first["setup"]["scoring"]["chrf"]["signature"]]["rows"])
    assert (
        f"chrf: {rows} stored, 0 to score" in stderr
        and f"py:stress_edited_metric:score: {rows} stored, 0 to score" in stderr
    )
    again = json.loads(stdout[-1])
    assert again["tests"] == first["tests"] and again["summary"] == first["summary"]

    module.write_text("def score(hyps, refs, srcs):\n    return [-float(len(h)) for h in hyps]\n")
    sys.modules.pop("stress_edited_metric", None)  # a new process would import the edited file
    code, stdout, stderr = run(capsys, *argv)
    assert code == 0 and f"chrf: {rows} stored, 0 to score" in stderr
    assert f"py:stress_edited_metric:score: 0 stored, {rows} to score" in stderr  # edited code: scored afresh
    edited = json.loads(stdout[-1])["tests"]["truncation"]["metrics"]["py:stress_edited_metric:score"]["mean"]
    assert edited == [-m for m in first["tests"]["truncation"]["metrics"]["py:stress_edited_metric:score"]["mean"]]

    (out / "scores.jsonl").write_text("{broken")
    code, _, stderr = run(capsys, *argv)
    assert code == 1 and "scores.jsonl: not a score store" in stderr[0] and "move the file away" in stderr[0]


def test_stress_scores_a_set_normalised_combination_in_one_call_and_stores_it_only_with_fixed_ranges(
    capsys, tmp_path, tiny, monkeypatch
):
    from menli import MixedScorer

    calls = []
    original = MixedScorer.score
    monkeypatch.setattr(
        MixedScorer, "score", lambda self, h, r, s=None: calls.append(len(h)) or original(self, h, r, s)
    )
    out = tmp_path / "stress"
    argv = [
        "stress",
        "--metric",
        "menli+chrf",
        "--nli-model",
        str(tiny["nli"]),
        "--data",
        str(_multiref(tmp_path)),
        "--tests",
        "truncation,local_swap",
        "--seeds",
        "1,2",
        "--out",
        str(out),
        "--min-applied",
        "3",
        "--chunk",
        "5",
    ]
    code, stdout, stderr = run(capsys, *argv)
    assert code == 0 and len(calls) == 1 and calls[0] > 5  # all rows at once: the ranges are fitted on them all
    assert "not stored" in json.loads(stdout[-1])["setup"]["scoring"]["menli+chrf"]["scores"]
    assert any("set normalisation" in line for line in stderr)
    assert not (out / "scores.jsonl").exists() or len(ScoreCache(out / "scores.jsonl")) == 0

    stats = tmp_path / "stats.json"  # fixed ranges: row scores no longer depend on each other, so they are stored
    stats.write_text(json.dumps({"nli": {"low": 0.0, "high": 1.0}, "metric": {"low": 0.0, "high": 100.0}}))
    calls.clear()
    code, stdout, _ = run(capsys, *argv, "--normalization", str(stats))
    assert code == 0 and len(calls) > 1 and max(calls) <= 5
    signature = json.loads(stdout[-1])["setup"]["scoring"]["menli+chrf"]["signature"]
    assert "norm:stored" in signature and signature in json.loads((out / "scores.costs.json").read_text())


def test_stress_mix_parts_are_stored_apart_and_reused_from_another_runs_scores(capsys, tmp_path, tiny, monkeypatch):
    """A storable mix scores each part through <out>/parts.jsonl; --reuse-scores lends it a menli run's rows, so
    MENLI is not scored again, and the mix's scores equal those of a run that scored every part itself."""
    from menli import MENLIScorer

    data = _multiref(tmp_path)
    common = ["--data", str(data), "--tests", "truncation", "--seeds", "1", "--min-applied", "3", "--quiet"]
    common += ["--nli-model", str(tiny["nli"]), "--no-plots"]
    stats = tmp_path / "stats.json"
    stats.write_text(json.dumps({"nli": {"low": 0.0, "high": 1.0}, "metric": {"low": 0.0, "high": 100.0}}))
    mix = ["--metric", "menli+chrf", "--weight", "0.3", "--normalization", str(stats)]
    calls = []
    original = MENLIScorer.score
    monkeypatch.setattr(
        MENLIScorer, "score", lambda self, h, r, s=None: calls.append(len(h)) or original(self, h, r, s)
    )
    code, stdout, _ = run(capsys, "stress", "--metric", "menli", "--out", str(tmp_path / "menli"), *common)
    assert code == 0 and sum(calls) > 0
    menli_signature = json.loads(stdout[-1])["setup"]["scoring"]["menli"]["signature"]
    calls.clear()
    code, stdout, _ = run(capsys, "stress", *mix, "--out", str(tmp_path / "alone"), *common)
    assert code == 0 and sum(calls) > 0  # nothing to reuse: MENLI scored inside the mix
    alone = json.loads(stdout[-1])
    parts = json.loads((tmp_path / "alone" / "parts.costs.json").read_text())
    assert menli_signature in parts and len(parts) == 2  # MENLI and chrF, each under its own signature
    calls.clear()
    reuse = ["--reuse-scores", str(tmp_path / "menli" / "scores.jsonl")]
    code, stdout, _ = run(capsys, "stress", *mix, "--out", str(tmp_path / "lent"), *common, *reuse)
    assert code == 0 and calls == []  # every MENLI row came from the menli run
    lent = json.loads(stdout[-1])
    assert lent["tests"] == alone["tests"]
    ledger = lent["setup"]["scoring_parts"][menli_signature]
    assert ledger["reused"] == parts[menli_signature]["rows"] and "rows" not in ledger

    code, _, stderr = run(capsys, "stress", *mix, "--out", str(tmp_path / "x"), *common, "--reuse-scores", "nope.json")
    assert code != 0 and any("--reuse-scores nope.json: no such score store" in line for line in stderr)


def test_stress_too_few_items_are_shown_not_judged_and_a_stored_report_can_be_rejudged(capsys, tmp_path):
    out = tmp_path / "stress"
    code, stdout, _ = run(
        capsys,
        "stress",
        "--metric",
        "chrf",
        "--data",
        str(_multiref(tmp_path)),
        "--tests",
        "truncation",
        "--seeds",
        "1",
        "--out",
        str(out),
        "--quiet",
    )  # default minimum
    assert code == 0
    report = json.loads(stdout[-1])
    truncation = report["tests"]["truncation"]
    assert truncation["n_applied"] == 3 and truncation["judged"] is False and truncation["passed"] == {"chrf": None}
    assert len(truncation["metrics"]["chrf"]["mean"]) == len(truncation["levels"]) > 1  # the curve is still there
    assert report["summary"]["chrf"] == {"passed": 0, "failed": 0, "too_few": 1, "not_applicable": 0}
    table = (out / "report.md").read_text()
    assert "| truncation | fluency | 3/3 |" in table and "| too few |" in table and "| 0/0 |" in table
    stored = (out / "report.json").read_text()

    code, stdout, _ = run(
        capsys, "stress-report", "--report", str(out), "--min-applied", "3", "--out", str(tmp_path / "re")
    )
    assert code == 0
    rejudged = json.loads(stdout[-1])
    assert rejudged["tests"]["truncation"]["passed"] == {"chrf": True}
    assert rejudged["tests"]["truncation"]["metrics"] == {
        "chrf": {**truncation["metrics"]["chrf"], "passed": True}
    }  # same curve, new verdict only
    assert "| 1/1 |" in (tmp_path / "re" / "report.md").read_text()
    assert (out / "report.json").read_text() == stored  # --out elsewhere leaves the original alone
    assert (out / "plots" / "truncation.png").is_file() and (tmp_path / "re" / "plots" / "truncation.png").is_file()

    # --no-plots: the same report and table, no PNG
    code, stdout, _ = run(
        capsys,
        "stress-report",
        "--report",
        str(out),
        "--min-applied",
        "3",
        "--out",
        str(tmp_path / "bare"),
        "--no-plots",
    )
    assert code == 0 and json.loads(stdout[-1]) == rejudged
    assert sorted(p.name for p in (tmp_path / "bare").iterdir()) == ["report.json", "report.md"]
    code, stdout, _ = run(
        capsys,
        "stress",
        "--metric",
        "chrf",
        "--data",
        str(_multiref(tmp_path)),
        "--tests",
        "truncation",
        "--seeds",
        "1",
        "--out",
        str(tmp_path / "bare2"),
        "--quiet",
        "--no-plots",
    )
    assert code == 0 and json.loads(stdout[-1])["tests"] == report["tests"]
    assert not (tmp_path / "bare2" / "plots").exists()

    (tmp_path / "bad.json").write_text("{not json")
    for argv, message in (
        (["--report", str(tmp_path / "missing")], "no such report"),
        (["--report", str(tmp_path / "bad.json")], "not a JSON report"),
        (["--report", str(out), "--min-applied", "0"], None),
    ):
        if message is None:
            with pytest.raises(SystemExit):
                run(capsys, "stress-report", *argv)
            assert "expected a positive integer" in capsys.readouterr().err
        else:
            code, _, stderr = run(capsys, "stress-report", *argv)
            assert code == 1 and message in stderr[0]


def test_plain_callable_errors_are_one_line(capsys, texts):
    hyps, refs, _ = texts
    code, _, stderr = run(capsys, "score", "--metric", "py:no_such_module:fn", "--hyps", str(hyps), "--refs", str(refs))
    assert code == 1 and "cannot import" in stderr[0]


def test_make_adversarial_writes_menli_rows_the_protocol_reads(capsys, tmp_path):
    out = tmp_path / "adv.jsonl"
    code, stdout, _ = run(
        capsys,
        "make-adversarial",
        "--data",
        str(_multiref(tmp_path)),
        "--rows",
        str(out),
        "--types",
        "neg,jumble,typo",
        "--seed",
        "3",
    )
    assert code == 0
    summary = json.loads(stdout[-1])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert summary["n"] == len(rows) > 0 and {r["error"] for r in rows} <= {"neg", "jumble", "typo"}
    assert all(r["hyp_adv_based"] != r["refs"][0] for r in rows)
    code, stdout, _ = run(capsys, "adversarial", "--metric", "chrf", "--data", str(out), "--quiet")
    assert code == 0 and json.loads(stdout[-1])["n"] == len(rows)


@pytest.mark.parametrize("quiet", [True, False])
def test_quiet_reaches_the_model_metrics_progress_bars(quiet, tmp_path):
    """--quiet must silence every metric's bars, including MARS (its YAML default is on) and SEScore."""
    extra = ["--quiet"] if quiet else []
    mars_scorer = from_cli(
        ["score", "--metric", "mars", "--hyps", "h", "--refs", "r", "--mars-cache", str(tmp_path), *extra]
    )
    assert mars_scorer.config.progress is (not quiet)
    assert str(mars_scorer.config.cache_dir) == str(tmp_path)
    assert from_cli(["score", "--metric", "sescore", "--hyps", "h", "--refs", "r", *extra]).progress is (not quiet)


def test_mars_window_words_flag_overrides_the_config():
    base = ["score", "--metric", "mars", "--hyps", "h", "--refs", "r"]
    default = from_cli(base).config.masking.window_words
    unbounded = from_cli(base + ["--mars-window-words", "0"])
    assert unbounded.config.masking.window_words == 0 and default > 0  # the shipped config bounds the cost
    with pytest.raises(ValueError, match="window_words must be an integer >= 0"):
        from_cli(base + ["--mars-window-words", "-3"])


@pytest.mark.parametrize("ablation", ["no_planning", "no_context"])
def test_mars_ablation_flag_builds_the_ablated_config(ablation):
    from mars.config import load_config
    from nlgmetrics.resources import config_path

    base = ["score", "--metric", "mars", "--hyps", "h", "--refs", "r", "--quiet"]
    built = from_cli(base + ["--ablation", ablation]).config
    full = from_cli(base).config
    expected = load_config(config_path("mars/offline.yaml"), {"progress": False}, ablation)
    assert built == expected and built != full
    # the paper's naive baseline needs a masked LM, which the offline config has none of: said before any model loads
    with pytest.raises(ValueError, match="augmenter 'naive' needs models.masked_lm"):
        from_cli(base + ["--ablation", "naive"])


def test_correlate_human_picks_the_score_and_refuses_to_guess(capsys, tmp_path):
    rows = [json.loads(line) for line in _judged(tmp_path).read_text().splitlines()]
    for row in rows:  # a second human score that orders the systems the other way round
        row["scores"]["fluency"] = -row["scores"]["mqm"]
    data = tmp_path / "two_scores.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows))
    code, _, stderr = run(capsys, "correlate", "--metric", "chrf", "--data", str(data), "--quiet")
    assert code == 1 and "several human scores; pick one with --human: fluency, mqm" in stderr[-1]
    results = {}
    for key in ("mqm", "fluency"):
        code, stdout, _ = run(capsys, "correlate", "--metric", "chrf", "--data", str(data), "--human", key, "--quiet")
        assert code == 0
        results[key] = json.loads(stdout[-1])
        assert results[key]["human"] == key
    assert results["mqm"]["pearson"] == pytest.approx(-results["fluency"]["pearson"]) and results["mqm"]["pearson"] > 0
    code, _, stderr = run(
        capsys, "correlate", "--metric", "chrf", "--data", str(data), "--human", "adequacy", "--quiet"
    )
    assert code == 1 and "human score 'adequacy' not in the data; available: fluency, mqm" in stderr[-1]


def test_correlate_versus_adds_a_paired_bootstrap(capsys, tmp_path):
    code, stdout, _ = run(
        capsys,
        "correlate",
        "--metric",
        "chrf",
        "--versus",
        "bleu",
        "--bootstrap",
        "50",
        "--data",
        str(_judged(tmp_path)),
        "--quiet",
    )
    assert code == 0
    result = json.loads(stdout[-1])
    versus = result["versus"]
    assert versus["metric"] == "bleu" and versus["resamples"] == 50 and versus["items"] == 2
    # both sides against sacrebleu's sentence scores and scipy/numpy, computed here from the judged file
    import sacrebleu
    from scipy.stats import kendalltau

    rows = [json.loads(line) for line in _judged(tmp_path).read_text().splitlines()]
    human = [r["scores"]["mqm"] for r in rows]
    chrf = [sacrebleu.CHRF().sentence_score(r["hyp"], r["refs"]).score for r in rows]
    bleu = [sacrebleu.BLEU(effective_order=True).sentence_score(r["hyp"], r["refs"]).score for r in rows]
    assert result["pearson"] == pytest.approx(np.corrcoef(chrf, human)[0, 1])
    assert result["kendall_b"] == pytest.approx(kendalltau(chrf, human, variant="b").statistic)
    assert versus["tau_like_a"] == pytest.approx(result["tau_like"])
    assert versus["tau_like_b"] == pytest.approx(tau_like(bleu, human, [r["item_id"] for r in rows]))
    assert versus["segment"]["pearson"]["a"] == pytest.approx(result["pearson"])
    assert versus["segment"]["pearson"]["b"] == pytest.approx(np.corrcoef(bleu, human)[0, 1])
    assert versus["segment"]["kendall_b"]["b"] == pytest.approx(kendalltau(bleu, human, variant="b").statistic)
    code, _, stderr = run(
        capsys,
        "correlate",
        "--metric",
        "chrf",
        "--versus",
        "bleu",
        "--bootstrap",
        "0",
        "--data",
        str(_judged(tmp_path)),
        "--quiet",
    )
    assert code == 1 and "--bootstrap" in stderr[-1]


def test_sescore_checkpoint_flag_takes_one_folder_or_an_ensemble():
    base = ["score", "--metric", "sescore", "--hyps", "h", "--refs", "r"]
    default = from_cli(base)
    one = from_cli(base + ["--checkpoint", "a"])
    several = from_cli(base + ["--checkpoint", "a", "b"])
    assert [Path(c).name for c in default.checkpoints] == ["mpnet-v2"]  # the shipped default, one model
    assert one.checkpoints == ["a"] and several.checkpoints == ["a", "b"]


def test_sescore_in_a_menli_mix_defaults_to_the_model_the_packaged_recipe_was_fitted_with():
    """The packaged menli+sescore+lm-ratio recipe names the MiniLM ensemble; with the mpnet default as its part the
    documented command would find no recipe. An explicit --checkpoint still wins (and is checked by the recipe)."""
    base = [
        "score",
        "--metric",
        "menli+sescore+lm-ratio",
        "--hyps",
        "h",
        "--refs",
        "r",
        "--normalization",
        "set",
        "--weights",
        "0.1,0.6,0.3",
    ]
    mixed = from_cli(base)
    assert [Path(c).parent.name for c in mixed.partners[0].checkpoints] == ["minilm-v2"] * 3
    mine = from_cli(base + ["--checkpoint", "a"])
    assert mine.partners[0].checkpoints == ["a"]
    alone = from_cli(base[:2] + ["sescore"] + base[3:7])
    assert [Path(c).name for c in alone.checkpoints] == ["mpnet-v2"]
