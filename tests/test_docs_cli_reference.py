"""docs/gen/cli_reference.py: every subcommand of the three console commands gets a section with an option table,
parsers are caught without running the command, and help text cannot break the Markdown."""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "docs" / "gen"))

import cli_reference  # noqa: E402


def sections(text: str) -> dict[str, str]:
    """The page's command sections by anchor (``evaluate-score``, ``train-synthesize-merge`` ...): each heading's
    text up to the next heading of any level."""
    parts = re.split(r"^#{2,4} .*\{#([a-z0-9-]+)\}$", text, flags=re.MULTILINE)
    return dict(zip(parts[1::2], parts[2::2]))


def _subcommand_names(parser: argparse.ArgumentParser) -> list[str]:
    return list(next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices)


@pytest.fixture(scope="module")
def page() -> str:
    return cli_reference.render().text()


def test_every_subcommand_of_the_three_console_commands_has_a_section_with_an_option_table(page):
    """Every subcommand of nlgmetrics-evaluate, nlgmetrics-train (synthesize's modes and LightningCLI's fit
    included) and nlgmetrics-models, taken from the commands themselves, has its section, and the section holds an
    option table."""
    from nlgmetrics.cli.evaluate import make_parser as evaluate_parser
    from nlgmetrics.cli.models import make_parser as models_parser
    from nlgmetrics.registry import train_commands
    from sescore.synthesis.cli import MODES

    expected = [f"evaluate-{name}" for name in _subcommand_names(evaluate_parser())]
    expected += [f"train-{name}" for name in train_commands()]
    expected += [f"train-synthesize-{mode}" for mode in MODES if mode != "run"]
    expected += [f"models-{name}" for name in _subcommand_names(models_parser())]
    found = sections(page)
    missing = [anchor for anchor in expected if anchor not in found]
    assert not missing, f"no section in docs/reference/cli.md for {missing}"
    without_table = [anchor for anchor in expected if not re.search(r"^\| option \|", found[anchor], re.MULTILINE)]
    assert not without_table, f"sections without an option table: {without_table}"
    assert {"train-fit", "train-synthesize-sentences", "models-fetch"} <= set(expected)
    assert "| `--nli-model NLI_MODEL` |" in page and "(default: packaged:nli-mpnet)" in page


def test_the_fit_table_comes_from_the_lightning_parser_and_the_default_recipe(page):
    fit = sections(page)["train-fit"]
    assert "| `--model.encoder` | `packaged:minilm` | `packaged:mpnet` |  |" in fit  # constructor default, recipe
    assert "| `--model.encoder_lr` | `1e-05` | `0.0003` | `0.0` |" in fit  # the start recipe's learning rate 0
    assert "| `--trainer.max_steps` | Lightning's | `730` | `1` |" in fit
    assert "fit_offline_v2.yaml" not in fit and "configs/sescore/mpnet_v2_fit.yaml" in fit
    # a default path into the developers' data folder is named as such, not shown as a path a user has
    assert "../shared" not in page and "in the developers' data folder (not shipped)" in fit


def test_the_usage_of_options_file_commands_marks_no_flag_required_that_the_file_can_give(page):
    found = sections(page)
    for anchor, flags in {
        "train-synthesize": ("--input INPUT", "--output OUTPUT"),
        "train-synthesize-sentences": ("--input INPUT", "--output OUTPUT"),
        "train-pack": ("--checkpoint CHECKPOINT", "--out OUT"),
    }.items():
        usage = found[anchor].split("```text")[1].split("```")[0]
        assert all(f"[{flag}]" in " ".join(usage.split()) for flag in flags), (anchor, usage)


def test_a_section_without_an_option_table_is_found():
    text = "### a {#train-a}\n\nno table\n\n### b {#train-b}\n\n| option | what it does |\n|---|---|\n"
    found = sections(text)
    assert set(found) == {"train-a", "train-b"}
    assert not re.search(r"^\| option \|", found["train-a"], re.MULTILINE)
    assert re.search(r"^\| option \|", found["train-b"], re.MULTILINE)


def test_a_parser_is_caught_before_the_command_runs():
    ran = []

    def main(argv: list[str]) -> int:
        parser = argparse.ArgumentParser(prog="x")
        parser.add_argument("--flag", help="a <metric> | b*")
        parser.parse_args(argv)
        ran.append(argv)
        return 0

    parser = cli_reference.captured_parser(main, [])
    assert parser.prog == "x" and ran == []
    assert "| `--flag FLAG` | a &lt;metric&gt; \\| b\\* |" in cli_reference.options_tables(parser)
    assert (
        cli_reference._escape("``<log_dir>`` | `a|b\\.` <x>") == "`<log_dir>` \\| <code>a&#124;b&#92;.</code> &lt;x&gt;"
    )
    with pytest.raises(RuntimeError, match="without parsing"):
        cli_reference.captured_parser(lambda argv: 0, [])
