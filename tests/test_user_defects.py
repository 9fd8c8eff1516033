"""Regression tests for the defects a new user hit (issue 15): one test per defect, each failing before its fix."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import run

from nlgmetrics.cli import evaluate
from nlgmetrics.inputs import InputError

REPO = Path(__file__).resolve().parents[1]


# -- Python API input checks ---------------------------------------------------------------------------------------
BAD = [
    ([None], ["a"], r"\[0\] is NoneType"),
    ([1.5], ["a"], r"\[0\] is float"),
    (["ok", "x \udc80 y"], ["a", "b"], r"\[1\] has a lone surrogate at character 2"),
    ([""], ["a"], r"\[0\] is empty"),
    (["a"], [None], r"\[0\] is NoneType"),
    (["a"], [""], r"\[0\] is empty"),
]


@pytest.mark.parametrize("hyps,refs,message", BAD)
def test_every_python_api_rejects_bad_items_before_any_model_call(tiny, hyps, refs, message):
    from menli.functional import menli_scores
    from nlgmetrics.baselines import BERTScorer, SacreBleuScorer
    from nlgmetrics.baselines.lm_likelihood import LMLikelihoodScorer

    class Exploding:  # any model call would be the bug: the check must come first
        max_length = 64

        def predict_proba(self, *args, **kwargs):
            raise AssertionError("model called with bad input")

    with pytest.raises(InputError, match=message):
        menli_scores(Exploding(), hyps, refs)
    with pytest.raises(InputError, match=message):
        SacreBleuScorer("chrf").score(hyps, refs)
    with pytest.raises(InputError, match=message):
        BERTScorer(encoder="/nonexistent/never-loaded").score(hyps, refs)
    with pytest.raises(InputError, match=message):
        LMLikelihoodScorer("/nonexistent/never-loaded", relative=True).score(hyps, refs)


def test_sescore_and_nli_reject_bad_items_with_the_position(tiny):
    from nlgmetrics.nli import load_nli
    from sescore.functional import reference_lists

    with pytest.raises(InputError, match=r"hypotheses\[0\] is NoneType"):
        reference_lists([None], ["a"])
    with pytest.raises(InputError, match=r"references\[0\]\[1\] is int"):
        reference_lists(["a"], [["b", 3]])
    nli = load_nli(str(tiny["nli"]), "cpu")
    with pytest.raises(InputError, match=r"hypotheses\[0\] has a lone surrogate"):
        nli.predict_proba(["a"], ["\ud83d"])


# -- MENLI scores each distinct pair once ----------------------------------------------------------------------------
def test_menli_scores_each_distinct_premise_hypothesis_pair_once():
    from menli.functional import menli_scores

    class Counting:
        max_length = 512
        calls: list = []

        def predict_proba(self, premises, hypotheses, **kwargs):
            self.calls.append(list(zip(premises, hypotheses)))
            return np.array([[0.1 + 0.01 * len(p) % 0.5, 0.2, 0.7 - 0.01 * len(p) % 0.5] for p in premises])

    nli = Counting()
    hyps = ["a b", "a b", "c d", "a b"]  # adversarial suites repeat the same candidate/reference pairs
    refs = ["x y", "x y", "x y", ["x y", "z"]]
    scores = menli_scores(nli, hyps, refs, granularity="text")
    pairs = [p for call in nli.calls for p in call]
    assert len(pairs) == len(set(pairs)) == 6  # (x y, a b), (a b, x y), (x y, c d), (c d, x y), (z, a b), (a b, z)
    assert scores[0] == scores[1]


# -- truncation is counted and reported ------------------------------------------------------------------------------
def test_long_inputs_are_counted_as_truncated_in_the_json_and_warned(capsys, tiny, tmp_path):
    hyps, refs = tmp_path / "h.txt", tmp_path / "r.txt"
    long_line = " ".join(["word"] * 4000)  # 20,000 characters
    hyps.write_text(f"a short line\n{long_line}\n", encoding="utf-8")
    refs.write_text("a short line too\nanother short line\n", encoding="utf-8")
    code, stdout, stderr = run(
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
        "--quiet",
    )
    assert code == 0
    result = json.loads(stdout[-1])
    assert result["truncated"]["encoder texts"] == {"truncated": 1, "of": 4, "limit": 128}  # tiny model: 128 positions
    assert any("1 of 4 encoder texts longer than 128 tokens were truncated" in line for line in stderr)
    code, stdout, stderr = run(
        capsys,
        "score",
        "--metric",
        "bertscore",
        "--encoder",
        str(tiny["encoder"]),
        "--hyps",
        str(refs),
        "--refs",
        str(refs),
        "--quiet",
    )
    assert json.loads(stdout[-1])["truncated"]["encoder texts"]["truncated"] == 0 and not stderr


def test_menli_counts_truncated_nli_pairs(capsys, tiny, tmp_path):
    hyps, refs = tmp_path / "h.txt", tmp_path / "r.txt"
    hyps.write_text(" ".join(["cat"] * 300) + "\nshort\n", encoding="utf-8")
    refs.write_text("a reference\nanother\n", encoding="utf-8")
    code, stdout, _ = run(
        capsys,
        "score",
        "--metric",
        "menli",
        "--nli-model",
        str(tiny["nli"]),
        "--granularity",
        "text",
        "--hyps",
        str(hyps),
        "--refs",
        str(refs),
        "--quiet",
    )
    counts = json.loads(stdout[-1])["truncated"]["NLI pairs"]
    assert code == 0 and counts["truncated"] == 2 and counts["of"] == 4  # both directions of the long pair


# -- correlate: empty hypotheses and human systems -------------------------------------------------------------------
def _judged(tmp_path, systems: dict, extra: dict | None = None) -> Path:
    rows = []
    refs = {1: "the cat sat on the mat", 2: "a dog runs in the park", 3: "birds sing"}
    for system, (quality, outputs) in systems.items():
        for item, hyp in outputs.items():
            row = {
                "lp": "xx-en",
                "item_id": item,
                "system": system,
                "src": "",
                "refs": [refs[item]],
                "hyp": hyp,
                "scores": {"mqm": quality},
            }
            row.update((extra or {}).get(system, {}))
            rows.append(row)
    path = tmp_path / "judged.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return path


SYSTEMS = {
    "good": (0.0, {1: "the cat sat on the mat", 2: "a dog runs in the park", 3: "birds sing"}),
    "refresh": (-5.0, {1: "the cat sat on a rug", 2: "a dog walks in a park", 3: "a bird sings"}),
    "bad": (-20.0, {1: "dogs fly", 2: "cats sing loudly", 3: "  "}),
    "ref-A": (-1.0, {1: "a cat was sitting on the mat", 2: "one dog is running in the park", 3: "the birds sing"}),
}


def test_correlate_names_human_systems_explicitly_never_by_prefix(capsys, tmp_path):
    path = _judged(tmp_path, SYSTEMS)
    code, stdout, _ = run(capsys, "correlate", "--metric", "chrf", "--data", str(path), "--quiet")
    result = json.loads(stdout[-1])
    assert code == 0 and result["human_systems"] == ["ref-A"]  # REFRESH (a summariser) stays a system
    assert "WMT naming" in result["human_systems_from"]
    assert result["without_human_systems"]["n"] == result["n"] - 3
    code, stdout, _ = run(
        capsys, "correlate", "--metric", "chrf", "--data", str(path), "--human-systems", "none", "--quiet"
    )
    assert json.loads(stdout[-1])["human_systems"] == [] and "without_human_systems" not in json.loads(stdout[-1])
    code, stdout, _ = run(
        capsys, "correlate", "--metric", "chrf", "--data", str(path), "--human-systems", "refresh,ref-A", "--quiet"
    )
    assert json.loads(stdout[-1])["without_human_systems"]["n"] == result["n"] - 6
    code, _, stderr = run(capsys, "correlate", "--metric", "chrf", "--data", str(path), "--human-systems", "ref-Z")
    assert code == 1 and "ref-Z" in stderr[0]
    flagged = _judged(tmp_path, SYSTEMS, extra={"good": {"human_system": True}})
    code, stdout, _ = run(capsys, "correlate", "--metric", "chrf", "--data", str(flagged), "--quiet")
    assert json.loads(stdout[-1])["human_systems"] == ["good"]


def test_correlate_skips_empty_hypotheses_and_lists_them(capsys, tmp_path):
    code, stdout, _ = run(capsys, "correlate", "--metric", "chrf", "--data", str(_judged(tmp_path, SYSTEMS)), "--quiet")
    result = json.loads(stdout[-1])
    assert code == 0 and result["n"] == 11 and result["skipped_rows"] == 1
    assert result["skipped"] == [{"item_id": 3, "lp": "xx-en", "system": "bad", "reason": "empty hyp"}]


# -- CLI behaviour -----------------------------------------------------------------------------------------------------
def test_device_that_cannot_work_is_one_line_before_any_model_loads(capsys, tmp_path):
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    path = tmp_path / "h.txt"
    path.write_text("a\n")
    code, stdout, stderr = run(
        capsys,
        "score",
        "--metric",
        "bertscore",
        "--encoder",
        "/nonexistent/model",
        "--hyps",
        str(path),
        "--refs",
        str(path),
        "--device",
        "cuda",
    )
    assert code == 1 and stdout == [] and len(stderr) == 1 and "no usable CUDA GPU" in stderr[0]
    code, _, stderr = run(
        capsys, "score", "--metric", "chrf", "--hyps", str(path), "--refs", str(path), "--device", "gpu0"
    )
    assert code == 1 and "unknown device 'gpu0'" in stderr[0]


def test_adversarial_takes_a_limit(capsys, tmp_path):
    rows = [
        {
            "error": "neg",
            "refs": ["the cat sat"],
            "r": "a cat sat",
            "hyp_para": f"the cat sat {i}",
            "hyp_adv_based": "the cat did not sit",
            "hyp_adv_free": "no",
        }
        for i in range(5)
    ]
    path = tmp_path / "adv.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    code, stdout, _ = run(capsys, "adversarial", "--metric", "chrf", "--data", str(path), "--limit", "2", "--quiet")
    result = json.loads(stdout[-1])
    assert code == 0 and result["limit_rows"] == 2 and result["n"] == 2


def test_every_option_of_every_command_has_help_and_shows_its_default(monkeypatch):
    import argparse

    monkeypatch.setenv("COLUMNS", "400")  # no line wrapping inside the defaults checked below
    from nlgmetrics.cli.common import DefaultsHelpFormatter

    parser = evaluate.make_parser()
    missing, stack = [], [("evaluate", parser)]
    while stack:
        name, current = stack.pop()
        assert current.formatter_class is DefaultsHelpFormatter, name
        for action in current._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend((f"{name} {k}", v) for k, v in action.choices.items())
            elif not action.help:
                missing.append((name, action.option_strings or action.dest))
    assert missing == []
    text = " ".join(parser._subparsers._group_actions[0].choices["correlate"].format_help().split())
    assert "(default: 1000)" in text and "(default: packaged:nli-mpnet)" in text


def test_version_and_train_help_exit_zero():
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for argv in (["train.py", "--help"], ["train.py", "--version"], ["evaluate.py", "--version"]):
        done = subprocess.run([sys.executable, *argv], cwd=REPO, capture_output=True, text=True, env=env, timeout=120)
        assert done.returncode == 0, (argv, done.stderr)
    done = subprocess.run(
        [sys.executable, "train.py", "--version"], cwd=REPO, capture_output=True, text=True, env=env, timeout=120
    )
    assert done.stdout.startswith("nlgmetrics ")
    assert (
        subprocess.run(
            [sys.executable, "train.py", "nope"], cwd=REPO, capture_output=True, env=env, timeout=120
        ).returncode
        == 2
    )


def test_quiet_silences_library_chatter(tiny, tmp_path):
    """``--quiet`` leaves stderr empty on a successful run (no transformers/tqdm output)."""
    hyps = tmp_path / "h.txt"
    hyps.write_text("the cat sat on the mat\na dog runs\n")
    env = {k: v for k, v in os.environ.items() if k not in ("TRANSFORMERS_VERBOSITY", "TQDM_DISABLE")}
    env["HF_HUB_OFFLINE"] = "1"
    done = subprocess.run(
        [
            sys.executable,
            "evaluate.py",
            "score",
            "--metric",
            "menli",
            "--nli-model",
            str(tiny["nli"]),
            "--hyps",
            str(hyps),
            "--refs",
            str(hyps),
            "--quiet",
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == ""


def test_py_callables_do_not_leave_the_working_directory_on_sys_path(capsys, tmp_path, monkeypatch):
    (tmp_path / "my_metric_mod.py").write_text("def length(h, r, s):\n    return [float(len(x)) for x in h]\n")
    monkeypatch.chdir(tmp_path)
    from nlgmetrics import load_metric

    before = list(sys.path)
    scorer = load_metric("py:my_metric_mod:length")
    assert sys.path == before and scorer.score(["ab"], ["c"], None) == [2.0]


def test_outputs_get_normal_modes_and_stale_part_files_are_cleaned(capsys, tmp_path):
    from nlgmetrics.metaeval import atomic_write

    target = tmp_path / "scores.jsonl"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = tmp_path / f".scores.jsonl.{dead.pid}.abc123.part"  # a killed earlier writer's temporary file
    stale.write_text("half")
    other = tmp_path / ".other.jsonl.1.x.part"
    other.write_text("not ours")
    old = os.umask(0o022)
    try:
        with atomic_write(target) as handle:
            handle.write("done\n")
    finally:
        os.umask(old)
    assert target.read_text() == "done\n" and not stale.exists() and other.exists()
    assert stat.S_IMODE(target.stat().st_mode) == 0o644


@pytest.mark.parametrize(
    "argv",
    [
        [
            "synthesize",
            "run",
            "--config",
            "configs/sescore/offline_en.yaml",
            "--input",
            "x",
            "--output",
            "y",
            "--limit",
            "0",
        ],
        ["synthesize", "run", "--config", "c", "--input", "x", "--output", "y", "--block-size", "-1"],
    ],
)
def test_synthesis_counts_below_one_are_a_usage_error_not_a_traceback(capsys, argv):
    from nlgmetrics.cli import train

    with pytest.raises(SystemExit) as stopped:
        train.main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == 2 and "expected a positive integer" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv,message",
    [
        (["fit", "--config", "no-such-recipe.yaml"], "config file not found: no-such-recipe.yaml (neither as a path"),
        (["nli", "--config", "no-such-recipe.yaml"], "config file not found: no-such-recipe.yaml (neither as a path"),
        (["nli", "--config", "{tmp}/unknown_key.yaml"], "unknown_key.yaml: unknown key 'bogus'"),
        (["nli", "--config", "{tmp}/broken.yaml"], "while parsing a flow sequence"),
        (["synthesize", "calibrate", "--config", "no-such-recipe.yaml"], "config file not found: no-such-recipe.yaml"),
        (
            ["synthesize", "calibrate", "--config", "sescore/offline_en.yaml", "--pairs", "{tmp}/missing_pairs.yaml"],
            "No such file or directory",
        ),
    ],
)
def test_a_training_recipe_that_cannot_be_read_is_an_error_line_not_a_traceback(capsys, tmp_path, argv, message):
    """train.py fit/nli/synthesize calibrate used to end in a traceback for a mistyped --config (or --pairs): exit 2
    with `error: ...` naming the file, before any model or Lightning trainer is built."""
    from nlgmetrics.cli.train import main

    (tmp_path / "unknown_key.yaml").write_text("bogus: 1\n")
    (tmp_path / "broken.yaml").write_text("epochs: [1, 2\n")
    code = main([a.replace("{tmp}", str(tmp_path)) for a in argv])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and message in err and "Traceback" not in err, err
