"""The metric registry: one declaration per metric serves the Python API and every subcommand's flags, and a
separately installed package joins through the ``nlgmetrics.metrics`` entry points without touching the toolkit."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

from nlgmetrics import list_metrics, load_metric, metric_spec
from nlgmetrics.cli import evaluate
from nlgmetrics.registry import MetricSpec, RegistryError, accepted_options, metric_specs, options_of

REPO = Path(__file__).resolve().parents[1]
BUILT_IN = {"menli", "sescore", "mars", "bleu", "chrf", "bertscore", "cosine", "lm-likelihood", "lm-ratio"}


def _subparser(name: str) -> argparse.ArgumentParser:
    commands = next(a for a in evaluate.make_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices[name]


def test_every_toolkit_metric_is_registered_through_the_entry_points():
    assert BUILT_IN <= set(list_metrics())


@pytest.mark.parametrize("command", ["score", "compare", "correlate", "adversarial", "stress", "robustness", "devmix"])
def test_flags_are_the_python_names_with_the_same_defaults(command):
    """``--nli-model`` is ``nli_model=``: every option of every metric is a flag of every metric subcommand, with
    the declared default and choices."""
    actions = {a.dest: a for a in _subparser(command)._actions}
    for spec in metric_specs():
        options = spec.option_list() + (options_of(spec.combination.options) if spec.combination else [])
        for opt in options:
            if not opt.cli:
                assert opt.name not in actions or opt.name == "reference_free", (spec.name, opt.name)
                continue
            action = actions[opt.name]
            assert action.option_strings == [opt.flag]
            assert action.default == opt.default, (spec.name, opt.name)
            assert (tuple(action.choices) if action.choices else None) == opt.choices
            assert action.help and opt.help in action.help


def test_options_are_checked_by_name_type_and_choice():
    with pytest.raises(RegistryError, match="metric 'menli' has no option model; its options: nli_model"):
        load_metric("menli", model="x")
    with pytest.raises(RegistryError, match="batch_size must be int"):
        load_metric("bertscore", batch_size="8")
    with pytest.raises(RegistryError, match="task='poetry' is not one of mt, summarization"):
        load_metric("menli", task="poetry")
    with pytest.raises(RegistryError, match="has no option precision"):
        load_metric("mars", precision="bfloat16")
    with pytest.raises(RegistryError, match="unknown metric 'rouge-99'"):
        load_metric("rouge-99")
    with pytest.raises(RegistryError, match="combinations start with menli"):
        load_metric("chrf+bleu")
    with pytest.raises(RegistryError, match="menli\\+chrf has no option layer"):
        load_metric("menli+chrf", layer=3)


def test_a_combination_takes_every_parts_options_and_its_own():
    accepted = accepted_options("menli+bertscore")
    assert {"nli_model", "encoder", "layer", "weight", "weights", "normalization"} <= set(accepted)
    assert "checkpoint" not in accepted


def test_a_spec_needs_defaults_for_every_option():
    @dataclass
    class Bad:
        size: int

    with pytest.raises(RegistryError, match="needs a default"):
        MetricSpec("bad", "no defaults", Bad, lambda options: None).option_list()


def test_a_flag_set_for_a_metric_that_does_not_take_it_is_an_error(capsys, tmp_path):
    hyps = tmp_path / "h.txt"
    hyps.write_text("a cat\n")
    code = evaluate.main(
        ["score", "--metric", "chrf", "--hyps", str(hyps), "--refs", str(hyps), "--precision", "bfloat16", "--quiet"]
    )
    assert code == 1 and "--precision is not an option of chrf" in capsys.readouterr().err


def test_the_python_api_and_the_command_line_score_alike(capsys, tmp_path):
    hyps, refs = tmp_path / "h.txt", tmp_path / "r.txt"
    hyps.write_text("the cat sat on the mat\na dog runs\n")
    refs.write_text("a cat sat on a mat\nthe dog is running\n")
    out = tmp_path / "scores.jsonl"
    assert (
        evaluate.main(
            ["score", "--metric", "chrf", "--hyps", str(hyps), "--refs", str(refs), "--scores", str(out), "--quiet"]
        )
        == 0
    )
    cli = [json.loads(line)["score"] for line in out.read_text().splitlines()]
    assert cli == load_metric("chrf").score(hyps.read_text().splitlines(), refs.read_text().splitlines())
    assert metric_spec("chrf").summary


PLUGIN = '''
"""A metric package of its own: declared only through the nlgmetrics.metrics entry point."""
from dataclasses import dataclass

from nlgmetrics.registry import MetricSpec, option


@dataclass
class Options:
    bonus: float = option(0.0, "added to every score")


class WordOverlap:
    name = "word-overlap"

    def __init__(self, bonus):
        self.bonus = bonus

    def score(self, hyps, refs, srcs=None):
        out = []
        for hyp, ref in zip(hyps, refs):
            refs_of = [ref] if isinstance(ref, str) else list(ref)
            words = set(hyp.lower().split())
            out.append(max(len(words & set(r.lower().split())) / max(len(set(r.lower().split())), 1)
                           for r in refs_of) + self.bonus)
        return out

    def signature(self):
        return f"word-overlap|bonus:{self.bonus}"


SPEC = MetricSpec("word-overlap", "share of reference words found in the hypothesis", Options,
                  lambda options: WordOverlap(options.bonus))
'''


@pytest.fixture(scope="module")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin pip-installed (a real wheel build and install, no network) into a folder of its own."""
    root = tmp_path_factory.mktemp("plugin")
    source = root / "src"
    (source / "word_overlap_metric").mkdir(parents=True)
    (source / "word_overlap_metric" / "__init__.py").write_text(textwrap.dedent(PLUGIN))
    (source / "pyproject.toml").write_text(
        textwrap.dedent("""
        [build-system]
        requires = ["setuptools>=61"]
        build-backend = "setuptools.build_meta"

        [project]
        name = "word-overlap-metric"
        version = "0.0.1"

        [project.entry-points."nlgmetrics.metrics"]
        word-overlap = "word_overlap_metric:SPEC"

        [tool.setuptools]
        packages = ["word_overlap_metric"]
        """)
    )
    site = root / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "--no-index",
            "--target",
            str(site),
            str(source),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return site


def _evaluate(site: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
        "HF_HUB_OFFLINE": "1",
    }
    return subprocess.run(
        [sys.executable, str(REPO / "evaluate.py"), *argv],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        cwd=site.parent,
    )


def _rows(tmp_path: Path) -> tuple[Path, Path, Path, Path]:
    hyps, refs = tmp_path / "h.txt", tmp_path / "r.txt"
    hyps.write_text("the cat sat on the mat\na dog runs in the park\n")
    refs.write_text("the cat sat on a mat\nthe dog is running\n")
    judged = tmp_path / "judged.jsonl"
    judged.write_text(
        "\n".join(
            json.dumps({"lp": "xx-en", "item_id": i, "system": s, "refs": [ref], "hyp": hyp, "scores": {"human": h}})
            for i, ref in enumerate(["the cat sat on the mat", "a dog runs in the park"])
            for s, hyp, h in [("good", ref, 0.0), ("bad", "nothing alike here", -9.0)]
        )
    )
    multiref = tmp_path / "multiref.jsonl"
    multiref.write_text(
        "\n".join(
            json.dumps({"item_id": i, "refs": [a, b], "hyp": a})
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
        )
    )
    return hyps, refs, judged, multiref


@pytest.mark.slow
def test_a_separately_installed_metric_runs_through_score_correlate_and_stress(plugin_site, tiny, tmp_path):
    hyps, refs, judged, multiref = _rows(tmp_path)
    done = _evaluate(plugin_site, "score", "--help")
    assert done.returncode == 0 and "word-overlap" in done.stdout and "--bonus" in done.stdout
    done = _evaluate(
        plugin_site,
        "score",
        "--metric",
        "word-overlap",
        "--bonus",
        "1",
        "--hyps",
        str(hyps),
        "--refs",
        str(refs),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["signature"] == "word-overlap|bonus:1.0"
    assert result["system_score"] == pytest.approx(1 + (5 / 6 + 2 / 4) / 2)
    done = _evaluate(plugin_site, "correlate", "--metric", "word-overlap", "--data", str(judged), "--quiet")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.splitlines()[-1])["tau_like"] == pytest.approx(1.0)
    done = _evaluate(
        plugin_site,
        "stress",
        "--metric",
        "word-overlap,chrf",
        "--data",
        str(multiref),
        "--tests",
        "truncation,local_swap",
        "--seeds",
        "1",
        "--min-applied",
        "3",
        "--out",
        str(tmp_path / "stress"),
        "--no-plots",
        "--quiet",
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[-1])
    assert report["tests"]["truncation"]["passed"]["word-overlap"] is True
    assert report["tests"]["local_swap"]["passed"]["word-overlap"] is False  # a bag of words is order-blind
    done = _evaluate(
        plugin_site,
        "score",
        "--metric",
        "menli+word-overlap",
        "--bonus",
        "2",
        "--nli-model",
        str(tiny["nli"]),
        "--normalization",
        "set",
        "--hyps",
        str(hyps),
        "--refs",
        str(refs),
        "--quiet",
    )
    assert done.returncode == 0, done.stderr  # and it mixes with MENLI like any registered metric
    assert "|m=[word-overlap|bonus:2.0]" in json.loads(done.stdout.splitlines()[-1])["signature"]
    python = subprocess.run(
        [
            sys.executable,
            "-c",
            "from nlgmetrics import load_metric, list_metrics; "
            "print('word-overlap' in list_metrics(), "
            "load_metric('word-overlap', bonus=0.5).score(['a b'], ['a c']))",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(plugin_site)},
    )
    assert python.stdout.split() == ["True", "[1.0]"], python.stderr
