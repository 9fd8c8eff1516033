"""The packaged recipe of the shipped SEScore default (``configs/sescore/mpnet_v2_*.yaml``).

Two promises are checked. The recipe files hold the values the shipped checkpoint ``sescore/checkpoints/mpnet-v2``
records (its ``hparams.yaml`` and model card), so following them builds that checkpoint and not an approximation.
And the walkthrough's command sequence (``docs/guides/sescore-training.md``) runs end to end: the commands are read
from that page, the configs are the packaged files themselves (the working folder has no ``configs/``), and the
only changes are those of ``_overrides`` (tiny models, a dev-check interval that fits a toy epoch) plus a toy data
folder. Every value a step recorded is then compared with the packaged file it came from.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "docs" / "guides" / "sescore-training.md"
SHIPPED = REPO / "sescore" / "checkpoints" / "mpnet-v2"
SAMPLE_CORPUS = REPO / "examples" / "sescore" / "support_en.txt"
RECIPE = {step: f"configs/sescore/mpnet_v2_{step}.yaml" for step in ("sentences", "synthesize", "start", "fit", "pack")}


def packaged(step: str) -> Path:
    """A recipe file as a user's command resolves it (inside the package, whatever the working folder)."""
    from nlgmetrics.resources import CONFIG_DIR, config_path

    path = config_path(RECIPE[step])
    assert CONFIG_DIR in path.resolve().parents, f"{RECIPE[step]} resolved outside the package: {path}"
    return path


def load(step: str) -> dict[str, Any]:
    return yaml.safe_load(packaged(step).read_text(encoding="utf-8"))


def flat(mapping: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested sections as dotted keys (``trainer.logger.init_args.name``)."""
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flat(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def guide_commands() -> list[list[str]]:
    """The default's command sequence as the walkthrough shows it: the first shell block naming the recipe."""
    text = GUIDE.read_text(encoding="utf-8")
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    block = next(b for b in blocks if RECIPE["sentences"] in b)
    joined = re.sub(r"\\\n\s*", " ", block)
    return [shlex.split(line)[1:] for line in joined.splitlines() if line.startswith("nlgmetrics-train ")]


def shipped_hparams() -> dict[str, Any]:
    return yaml.safe_load((SHIPPED / "hparams.yaml").read_text(encoding="utf-8"))


def resolved_fit(argv: list[str]) -> dict[str, Any]:
    """The whole fit configuration LightningCLI builds from these arguments (``--print_config``), as a dict."""
    import contextlib
    import io

    from sescore.regressor.cli import fit_main

    printed = io.StringIO()
    with (
        pytest.raises(SystemExit) as stop,
        contextlib.redirect_stdout(printed),
        contextlib.redirect_stderr(io.StringIO()),
    ):
        fit_main([*argv, "--print_config"])
    assert stop.value.code in (0, None), printed.getvalue()[-2000:]
    return yaml.safe_load(printed.getvalue())


# ----------------------------------------------------------------------------- the files are the shipped recipe
def test_the_guide_runs_the_five_recipe_files_in_order():
    commands = guide_commands()
    assert [c[:2] for c in commands] == [
        ["synthesize", "sentences"],
        ["synthesize", "--config"],
        ["fit", "--config"],
        ["fit", "--config"],
        ["pack", "--config"],
    ]
    named = [[c[i + 1] for i, word in enumerate(c) if word == "--config"] for c in commands]
    assert named == [
        [RECIPE["sentences"]],
        [RECIPE["synthesize"]],
        [RECIPE["fit"], RECIPE["start"]],
        [RECIPE["fit"]],
        [RECIPE["pack"]],
    ]
    assert [len(c) for c in commands] == [4, 3, 5, 3, 3], "the guide adds no flags to the recipe files"


def test_the_fit_recipe_resolves_to_the_shipped_training_run():
    """Model and data values equal the trained run's record; the same as the command that built it, which was
    fit_offline_v2.yaml with the MPNet encoder, 730 steps and a check every 243 batches."""
    mine = resolved_fit(["--config", RECIPE["fit"]])
    record = shipped_hparams()["record"]["interpolated"]["trained_record"]
    # options added after the shipped run must resolve to their defaults, which train what the run trained
    newer = {"lexical": [], "nli": None}
    extra = {k: v for k, v in mine["model"].items() if k not in record["model_hparams"]}
    assert extra == {k: v for k, v in newer.items() if k in extra}
    assert {k: v for k, v in mine["model"].items() if k not in extra} == record["model_hparams"]
    assert {k: v for k, v in mine["data"].items() if k != "dataset"} == {
        k: v for k, v in record["data_hparams"].items() if k != "dataset"
    }
    assert mine["trainer"]["precision"] == record["precision"] and record["world_size"] == 1
    assert mine["export"]["monitor"] == record["monitor"] and mine["export"]["mode"] == record["mode"]
    built_with = resolved_fit(
        [
            "--config",
            "configs/sescore/fit_offline_v2.yaml",
            "--model.encoder",
            "packaged:mpnet",
            "--trainer.max_steps",
            "730",
            "--trainer.val_check_interval",
            "243",
        ]
    )
    assert mine["seed_everything"] == built_with["seed_everything"] == 13
    assert mine["model"] == built_with["model"]
    assert {k: v for k, v in mine["data"].items() if k != "dataset"} == {
        k: v for k, v in built_with["data"].items() if k != "dataset"
    }
    skip = {"logger"}  # where logs go; everything that shapes training must match
    assert built_with["trainer"]["precision"] is None  # Lightning's default, 32-true: what the record says it ran
    built_with["trainer"]["precision"] = record["precision"]
    assert {k: v for k, v in mine["trainer"].items() if k not in skip} == {
        k: v for k, v in built_with["trainer"].items() if k not in skip
    }
    assert mine["resume"]["every_n_train_steps"] == built_with["resume"]["every_n_train_steps"]


def test_the_gemma_recipe_is_the_defaults_with_four_stated_changes():
    """configs/sescore/gemma_v2_*.yaml: the encoder, LoRA on Gemma block names, bf16 autocast and the dev mix with
    captions; every other training value is the shipped default's, on the default's own triples."""
    import re

    default = resolved_fit(["--config", RECIPE["fit"]])
    gemma = resolved_fit(["--config", "configs/sescore/gemma_v2_fit.yaml"])
    changed = {
        key
        for section in ("model", "data", "trainer")
        for key in default[section]
        if default[section][key] != gemma[section][key]
    }
    assert changed == {"encoder", "lora_target_modules", "dev_mix", "precision", "logger"}
    assert gemma["model"]["encoder"] == "packaged:embeddinggemma" and gemma["trainer"]["precision"] == "bf16-mixed"
    assert gemma["data"]["dataset"] == default["data"]["dataset"]  # the encoder is the only change to the data
    pattern = re.compile(gemma["model"]["lora_target_modules"])
    assert pattern.fullmatch("base_model.model.layers.3.self_attn.q_proj")
    assert pattern.fullmatch("base_model.model.layers.23.mlp.down_proj")
    assert not pattern.fullmatch("base_model.model.embed_tokens")
    assert "gemma-v2" in gemma["export"]["dirpath"] and "gemma-v2" in gemma["resume"]["dirpath"]
    start = yaml.safe_load(Path(REPO, "configs/sescore/gemma_v2_start.yaml").read_text(encoding="utf-8"))
    assert start["model"] == load("start")["model"] and start["export"]["dirpath"] == "runs/sescore/gemma-v2/start"
    pack = yaml.safe_load(Path(REPO, "configs/sescore/gemma_v2_pack.yaml").read_text(encoding="utf-8"))
    assert (pack["checkpoint"], pack["start"]) == (gemma["export"]["dirpath"], start["export"]["dirpath"])


def test_start_synthesis_and_pack_recipes_match_the_shipped_checkpoint():
    from sescore.synthesis.config import load_config

    hparams = shipped_hparams()
    card = (SHIPPED / "README.md").read_text(encoding="utf-8")
    start = resolved_fit(["--config", RECIPE["fit"], "--config", RECIPE["start"]])
    fit = resolved_fit(["--config", RECIPE["fit"]])
    # the own start: the same run, one step, learning rates 0 (encoder) and 1e-30 (head; 0 is refused)
    assert (start["model"]["encoder_lr"], start["model"]["head_lr"], start["trainer"]["max_steps"]) == (0.0, 1e-30, 1)
    assert {k: v for k, v in start["model"].items() if not k.endswith("_lr")} == {
        k: v for k, v in fit["model"].items() if not k.endswith("_lr")
    }
    assert start["data"] == fit["data"] and start["seed_everything"] == fit["seed_everything"]
    assert start["export"]["dirpath"] != fit["export"]["dirpath"]
    # synthesis: the packaged v2 recipe unchanged (the hash the model card names) on 1,536 sentences
    synthesize = load("synthesize")
    config = load_config(synthesize["config"])
    assert f"hash `{config.hash()}`, seed {config.seed})" in card and config.hash() == "f0e8eded8387"
    assert f"{synthesize['limit'] * config.variants} rows from {synthesize['limit']} sentences" in card
    assert synthesize["input"] == load("sentences")["output"] and load("fit")["data"]["dataset"] == synthesize["output"]
    # step 1: the two corpora and sizes of the v2 recipe's input (news + WikiText split into sentences)
    sentences = load("sentences")
    assert sentences["input"] == [
        "${NLGMETRICS_DATA}/corpus/news_en.txt",
        "${NLGMETRICS_DATA}/corpus/wikitext_paragraphs_b.txt:split",
    ]
    assert (sentences["take"], sentences["min_words"]) == (4000, 4)
    # pack: half-way from the run's own start to its trained export, float16
    pack = load("pack")
    assert pack["weight"] == hparams["record"]["interpolated"]["weight"] == 0.5
    assert pack["dtype"] == hparams["weights"]["dtype"] == "float16"
    assert (pack["start"], pack["checkpoint"]) == (start["export"]["dirpath"], fit["export"]["dirpath"])


# --------------------------------------------------------------------------------------------- run it, toy size
def _data_folder(root: Path) -> Path:
    """A toy ``$NLGMETRICS_DATA``: the two corpora from the example corpus and every dev-mix set from the packaged
    sample dev set (its ``quality`` under each set's score key), in the layout the recipe and the mix name."""
    from nlgmetrics.metaeval.devmix import load_mix

    lines = SAMPLE_CORPUS.read_text(encoding="utf-8").splitlines()
    (root / "corpus").mkdir(parents=True)
    (root / "corpus" / "news_en.txt").write_text("\n".join(lines[:4]) + "\n", encoding="utf-8")
    paragraphs = [" ".join(lines[start : start + 3]) for start in (4, 7)]
    (root / "corpus" / "wikitext_paragraphs_b.txt").write_text("\n".join(paragraphs) + "\n", encoding="utf-8")
    rows = json.loads((REPO / "nlgmetrics" / "configs" / "sescore" / "sample_dev.json").read_text(encoding="utf-8"))
    keys: dict[str, set[str]] = {}
    for entry in load_mix(load("fit")["data"]["dev_mix"])["sets"]:
        keys.setdefault(entry["path"], set()).add(entry["human"])
    for path, human in keys.items():
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        judged = [{**row, "scores": {key: row["scores"]["quality"] for key in human}} for row in rows]
        target.write_text("".join(json.dumps(row) + "\n" for row in judged), encoding="utf-8")
    return root


def _overrides(tiny: dict[str, Path]) -> dict[str, list[str]]:
    """Per step (by the last recipe file it names): tiny models, and a dev check every 2 batches (the toy epoch has
    5; the recipe's 243 must not exceed an epoch). Nothing else differs from the packaged recipe."""
    models = [
        "--override",
        f"mlm.model={tiny['gpt2']}",
        "--override",
        f"seq2seq.model={tiny['gpt2']}",
        "--override",
        f"severity.nli={tiny['nli']}",
    ]
    return {
        RECIPE["sentences"]: [],
        RECIPE["synthesize"]: models,
        RECIPE["start"]: ["--model.encoder", str(tiny["encoder"])],
        RECIPE["fit"]: ["--model.encoder", str(tiny["encoder"]), "--trainer.val_check_interval", "2"],
        RECIPE["pack"]: [],
    }


def _saved_fit_config(logs: Path) -> dict[str, Any]:
    """The configuration LightningCLI saved beside the run's logs (what the run actually used)."""
    saved = sorted(logs.rglob("config.yaml"))
    assert len(saved) == 1, saved
    return yaml.safe_load(saved[0].read_text(encoding="utf-8"))


def _same_except(recipe: dict[str, Any], used: dict[str, Any], overridden: set[str], what: str) -> None:
    """Every value of the recipe file is the value the run used, except the overridden keys."""
    used_flat = flat(used)
    for key, value in flat(recipe).items():
        if key not in overridden:
            assert used_flat.get(key) == value, f"{what}: {key} ran as {used_flat.get(key)!r}, recipe says {value!r}"


@pytest.mark.slow
def test_the_guide_builds_a_scoring_checkpoint_with_the_packaged_recipe(tiny, tmp_path, monkeypatch):
    import torch

    import nlgmetrics
    from nlgmetrics.cli import train
    from sescore.regressor.checkpoint import read_hparams
    from sescore.synthesis.config import load_config

    monkeypatch.setenv("NLGMETRICS_DATA", str(_data_folder(tmp_path / "data")))
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)  # no configs/ here: every --config resolves to the packaged file
    overrides = _overrides(tiny)
    for command in guide_commands():
        configs = [command[i + 1] for i, word in enumerate(command) if word == "--config"]
        assert train.main([*command, *overrides[configs[-1]]]) == 0, command

    root = work / "runs" / "sescore" / "mpnet-v2"
    # step 1: the toy corpora, interleaved; nothing dropped (every line has 4 words or more)
    assert len((root / "sentences.txt").read_text(encoding="utf-8").splitlines()) == 10
    # step 2: the packaged synthesis recipe with only the model overrides, all 10 sentences x 10 variants
    summary = json.loads((root / "synthesis" / "summary.json").read_text(encoding="utf-8"))
    synthesize = load("synthesize")
    expected = load_config(
        synthesize["config"],
        {"mlm.model": str(tiny["gpt2"]), "seq2seq.model": str(tiny["gpt2"]), "severity.nli": str(tiny["nli"])},
    )
    assert summary["config_hash"] == expected.hash() and summary["seed"] == expected.seed == 12
    assert summary["limit"] == synthesize["limit"] and summary["rows"] == 10 * expected.variants
    # steps 3 and 4: the saved LightningCLI configs equal the packaged files but for the overrides
    fit, start = load("fit"), load("start")
    merged_start = yaml.safe_load(yaml.safe_dump(fit))
    for key, value in flat(start).items():
        node = merged_start
        *sections, last = key.split(".")
        for section in sections:
            node = node.setdefault(section, {})
        node[last] = value
    _same_except(
        fit, _saved_fit_config(root / "logs" / "trained"), {"model.encoder", "trainer.val_check_interval"}, "fit"
    )
    _same_except(merged_start, _saved_fit_config(root / "logs" / "start"), {"model.encoder"}, "start")
    trained = read_hparams(root / "trained")["record"]
    assert {k: trained["model_hparams"][k] for k in fit["model"]} == {**fit["model"], "encoder": str(tiny["encoder"])}
    assert trained["data_hparams"]["dev_mix"] == fit["data"]["dev_mix"] and trained["data"]["dev_pairs"] > 0
    assert trained["selected"] == "best" and math.isfinite(trained["best"])  # chosen by a dev-mix check
    begun = read_hparams(root / "start")["record"]
    assert begun["global_step"] == 1 and begun["model_hparams"]["head_lr"] == start["model"]["head_lr"]
    assert begun["selected"].startswith("last") and "val_tau_like" not in begun["metrics"]  # no dev check
    # the start is the fit's own initialisation: seed_everything's draw for this model, before any training
    import pytorch_lightning as pl
    from safetensors.torch import load_file

    from sescore.regressor.module import SEScoreModule

    pl.seed_everything(fit["seed_everything"], verbose=False)
    fresh = SEScoreModule(**begun["model_hparams"]).regressor.state_dict()
    stored = load_file(str(root / "start" / "model.safetensors"))
    hidden = [k for k in stored if k.startswith("head.") and k.endswith("weight") and bool(fresh[k].any())]
    assert hidden and all(torch.equal(stored[k], fresh[k]) for k in hidden)
    assert all(not bool(stored[k].any()) for k in stored if "lora_B" in k)
    # step 5: half-way, float16, with the recipe's note; and it scores
    pack = load("pack")
    folder = root / "checkpoint"
    packed = read_hparams(folder)
    assert packed["weights"]["dtype"] == pack["dtype"] and packed["record"]["note"] == pack["note"]
    assert packed["record"]["interpolated"]["weight"] == pack["weight"]
    assert (folder / "README.md").is_file() and not list(root.glob(".checkpoint*"))
    end = load_file(str(root / "trained" / "model.safetensors"))
    mixed = load_file(str(folder / "model.safetensors"))
    key = hidden[0]
    assert torch.allclose(mixed[key].float(), 0.5 * stored[key] + 0.5 * end[key], atol=2e-3)
    metric = nlgmetrics.load_metric("sescore", checkpoint=[str(folder)])
    scores = metric.score(
        ["Park the bike and close the lock.", "Open the app and scan the code."],
        [["Park inside a marked zone and close the lock."], ["Open the app and scan the QR code."]],
    )
    assert len(scores) == 2 and all(isinstance(s, float) and s == s for s in scores)


# ------------------------------------------------------------------------------- options files and dev-set forms
def test_options_files_are_the_commands_flags_and_the_command_line_wins(tmp_path, monkeypatch):
    import argparse

    from sescore.options_file import OptionsFileError, options_file_argv, with_options_file

    monkeypatch.setenv("NLGMETRICS_DATA", str(tmp_path))
    parser = argparse.ArgumentParser(prog="demo")
    parser.add_argument("--input", action="append")
    parser.add_argument("--take", type=int)
    parser.add_argument("--min-words", type=int, default=4)
    parser.add_argument("--members", nargs="+")
    parser.add_argument("--quiet", action="store_true")
    parser.add_argument("--config")
    options = tmp_path / "options.yaml"
    options.write_text(
        "input: ['${NLGMETRICS_DATA}/a.txt', b.txt:split]\ntake: 7\nmin_words: 2\nmembers: [x, y]\nquiet: true\n",
        encoding="utf-8",
    )
    args = parser.parse_args(with_options_file(parser, ["--config", str(options)]))
    assert args.input == [f"{tmp_path}/a.txt", "b.txt:split"] and (args.take, args.min_words) == (7, 2)
    assert args.members == ["x", "y"] and args.quiet
    args = parser.parse_args(with_options_file(parser, ["--config", str(options), "--input", "mine.txt", "--take=3"]))
    assert args.input == ["mine.txt"] and args.take == 3  # a repeatable option is replaced, not extended
    options.write_text("take: 7\ntke: 3\n", encoding="utf-8")
    with pytest.raises(OptionsFileError, match="unknown option tke for demo"):
        options_file_argv(parser, options, [])


def test_options_an_options_file_may_give_are_optional_in_the_usage_and_checked_after_it(tmp_path, capsys):
    """``synthesize --config OPTIONS.yaml`` is a whole command: its usage must not claim --input/--output must be
    typed, yet a run with neither the flag nor the file's key still stops like a missing required flag."""
    from nlgmetrics.cli import train

    for argv, flags in (
        (["synthesize", "--help"], ["--input INPUT", "--output OUTPUT"]),
        (["synthesize", "sentences", "--help"], ["--input INPUT", "--output OUTPUT"]),
        (["pack", "--help"], ["--checkpoint CHECKPOINT", "--out OUT"]),
    ):
        with pytest.raises(SystemExit):
            train.main(argv)
        usage = capsys.readouterr().out.split("\n\n")[0]
        assert all(f"[{flag}]" in usage for flag in flags), usage
    options = tmp_path / "pack.yaml"
    options.write_text("checkpoint: a\n", encoding="utf-8")
    with pytest.raises(SystemExit) as stop:
        train.main(["pack", "--config", str(options)])
    assert stop.value.code == 2
    error = capsys.readouterr().err
    assert "required: --out (on the command line or in the --config options file)" in error, error


def test_pack_and_synthesize_report_a_bad_options_file_in_one_line(tmp_path, capsys):
    from nlgmetrics.cli import train

    bad = tmp_path / "bad.yaml"
    bad.write_text("checkpoint: a\nweigth: 0.5\nout: b\n", encoding="utf-8")
    assert train.main(["pack", "--config", str(bad)]) == 2
    assert "unknown option weigth" in capsys.readouterr().err
    run = tmp_path / "run.yaml"
    run.write_text("config: sescore/offline_en_v2.yaml\ninput: x.txt\noutput: out\nlimt: 3\n", encoding="utf-8")
    assert train.main(["synthesize", "--config", str(run)]) == 2
    assert "unknown option limt" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        train.main(["pack", "--checkpoint", "a", "--out", "b", "--start", "s"])
    assert stop.value.code == 2 and "--start and --weight go together" in capsys.readouterr().err


def test_the_sample_dev_set_reads_from_any_folder_as_a_json_list(tmp_path, monkeypatch):
    from nlgmetrics.metaeval import InputError
    from sescore.regressor.sources import load_dev_judgments, load_judged_pairs

    monkeypatch.chdir(tmp_path)
    records = load_dev_judgments("configs/sescore/sample_dev.json", "quality", None)
    rows = json.loads((REPO / "nlgmetrics" / "configs" / "sescore" / "sample_dev.json").read_text(encoding="utf-8"))
    assert len(records) == sum(len(r["refs"]) for r in rows) and len({r["item"] for r in records}) == 6
    assert {r["system"] for r in rows} == {"retrieval", "small-seq2seq", "llm-prompted", "agent-b"}
    assert [r["system"] for r in rows if r["human_system"]] == ["agent-b"] * 6
    assert load_judged_pairs("configs/sescore/sample_dev.json", "quality")  # fine-tuning pairs from it too
    (tmp_path / "bad.json").write_text('{"item_id": 1}', encoding="utf-8")
    with pytest.raises(InputError, match="list of row objects"):
        load_dev_judgments(tmp_path / "bad.json")
    with pytest.raises(InputError, match="no such file"):
        load_dev_judgments(tmp_path / "missing.json")


def test_the_guides_new_domain_fit_commands_parse():
    text = GUIDE.read_text(encoding="utf-8")
    joined = re.sub(r"\\\n\s*", " ", text)
    fits = [
        shlex.split(line.strip())[2:]
        for line in joined.splitlines()
        if line.strip().startswith("nlgmetrics-train fit ") and "dev_judgments" in line
    ]
    assert len(fits) >= 3
    for argv in fits:
        resolved = resolved_fit(argv)
        assert resolved["data"]["dev_mix"] is None and resolved["data"]["dev_judgments"]
