"""bench/ablate_sescore.py: arms train only once (resume), missing datasets are reported, never trained on."""

import json

from bench.ablate_sescore import ARMS, CONFIG, fit_arm


def test_arms_name_existing_configs_and_overrides():
    from nlgmetrics.resources import config_path

    assert config_path(CONFIG.removeprefix("configs/")).is_file()
    for arm, (what, dataset, overrides) in ARMS.items():
        assert what and dataset.startswith("runs/") and len(overrides) % 2 == 0, arm
        assert all(flag.startswith("--") for flag in overrides[::2]), arm


def test_longer_arms_train_their_multiple_of_the_steps_with_the_epochs_to_match():
    from bench.ablate_sescore import DATA_FACTOR, STEPS_FACTOR, arm_steps

    assert arm_steps("v2", 730) == arm_steps("v2_seed14", 730) == 730
    for arm, factor in STEPS_FACTOR.items():
        for name in (arm, f"{arm}_seed14", f"{arm}_seed15"):
            assert arm_steps(name, 730) == 730 * factor, name
            overrides = ARMS[name][2]  # one epoch is ~730 steps of the v2 data: the arm must allow `factor` epochs
            flag = "--trainer.max_epochs"
            epochs = int(overrides[overrides.index(flag) + 1]) if flag in overrides else 1
            assert epochs * DATA_FACTOR.get(arm, 1) >= factor, name


def test_missing_dataset_is_reported_and_a_finished_arm_is_not_retrained(tmp_path):
    record = fit_arm("x", "runs/does/not/exist", [], 1, 1, tmp_path)
    assert record["status"].startswith("not run: dataset") and not list(tmp_path.iterdir())
    done = {"arm": "y", "status": "fit", "command": "train.py fit ...", "seconds": 1.0}
    (tmp_path / "y.done.json").write_text(json.dumps(done))
    assert fit_arm("y", "runs/does/not/exist", [], 1, 1, tmp_path) == done  # no subprocess, no new files
    assert sorted(p.name for p in tmp_path.iterdir()) == ["y.done.json"]


def test_a_killed_fit_continues_from_its_resume_state(tmp_path, monkeypatch):
    import subprocess

    import bench.ablate_sescore as ablation

    dataset = tmp_path / "data"
    dataset.mkdir()
    (dataset / "state.json").write_text("{}")
    commands = []

    def fake_run(command, **kwargs):
        commands.append(command)
        return subprocess.CompletedProcess(command, 1)  # "killed": no done record

    monkeypatch.setattr(ablation.subprocess, "run", fake_run)
    root = tmp_path / "ablation"
    root.mkdir()
    first = fit_arm("z", str(dataset), [], 10, 5, root)
    assert first["status"].startswith("fit failed") and "--ckpt_path" not in commands[0]
    assert commands[0][commands[0].index("--resume.dirpath") + 1] == str(root / "z.resume")
    (root / "z.resume").mkdir()
    (root / "z.resume" / "last.safetensors").write_bytes(b"state")
    fit_arm("z", str(dataset), [], 10, 5, root)
    assert commands[1][commands[1].index("--ckpt_path") + 1] == str(root / "z.resume" / "last.safetensors")
    assert not (root / "z.done.json").exists()


def test_a_fit_in_pieces_stops_on_its_budget_and_states_the_cost_of_every_piece(tmp_path, monkeypatch):
    import subprocess

    import bench.ablate_sescore as ablation
    from nlgmetrics.resume import PieceEnded

    dataset = tmp_path / "data"
    dataset.mkdir()
    (dataset / "state.json").write_text("{}")
    root = tmp_path / "ablation"
    (root / "p.resume").mkdir(parents=True)
    (root / "p.resume" / "last.safetensors").write_bytes(b"state")
    statuses, commands = [PieceEnded.EXIT_STATUS, PieceEnded.EXIT_STATUS, 0], []

    def fake_run(command, **kwargs):
        commands.append(command)
        return subprocess.CompletedProcess(command, statuses[len(commands) - 1])

    monkeypatch.setattr(ablation.subprocess, "run", fake_run)
    for minutes in (70, 70):
        record = fit_arm("p", str(dataset), [], 10, 5, root, piece_minutes=minutes)
        assert record["status"].startswith("piece ended") and not (root / "p.done.json").exists()
        assert commands[-1][commands[-1].index("--resume.stop_after_minutes") + 1] == "70"
    done = fit_arm("p", str(dataset), [], 10, 5, root)
    assert done["status"] == "fit" and "--resume.stop_after_minutes" not in commands[-1]
    ledger = json.loads((root / "p.pieces.json").read_text())
    assert [piece["exit"] for piece in ledger] == [PieceEnded.EXIT_STATUS, PieceEnded.EXIT_STATUS, 0] and done[
        "runs"
    ] == 3
    assert done["seconds"] == round(sum(piece["seconds"] for piece in ledger), 1)
    assert "--ckpt_path" not in done["command"], "the record names the fit, not one run's resume point"
    assert json.loads((root / "p.done.json").read_text()) == done


def test_a_spent_budget_ends_the_ablation_before_anything_is_scored(tmp_path, monkeypatch, capsys):
    import sys

    import pytest

    import bench.ablate_sescore as ablation
    from nlgmetrics.resume import PieceEnded
    from sescore.regressor.model import NLI_PAIRS_ENV

    monkeypatch.setenv(NLI_PAIRS_ENV, str(tmp_path / "pairs"))  # main() sets it for its fits; not for other tests
    scored = []
    monkeypatch.setattr(ablation, "devmix", lambda *args: scored.append(args))
    monkeypatch.setattr(ablation, "write_results", lambda *args: scored.append(args))
    monkeypatch.setattr(
        ablation,
        "fit_arm",
        lambda arm, *args: {"arm": arm, "status": "piece ended (1 minutes)", "runs": 1, "seconds": 60},
    )
    argv = ["ablate_sescore.py", "--arms", "v2", "--no-shipped", "--budget-minutes", "1", "--root", str(tmp_path)]
    monkeypatch.setattr(sys, "argv", argv)
    with pytest.raises(SystemExit) as stop:
        ablation.main()
    assert stop.value.code == PieceEnded.EXIT_STATUS and not scored
    assert "v2: the fit's piece ended" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", [*argv[:-4], "--budget-minutes", "0", "--root", str(tmp_path)])
    with pytest.raises(SystemExit) as stop:
        ablation.main()
    assert stop.value.code == PieceEnded.EXIT_STATUS and not scored
    assert "spent before the next fit started" in capsys.readouterr().err


def test_devcheck_peer_orders_pairs_longest_first_as_the_check_it_replaced():
    """bench/bench_sescore_devcheck.py's peer: every pair by length, longest first, ties in input order (the toolkit's
    check keeps each item's pairs together instead)."""
    from bench.bench_sescore_devcheck import pairs_longest_first

    records = [
        {"candidate": "ab", "reference": "c", "item": 1},
        {"candidate": "abcd", "reference": "e", "item": 2},
        {"candidate": "a", "reference": "bc", "item": 1},
        {"candidate": "x", "reference": "y", "item": 2},
    ]
    assert [r["candidate"] for r in pairs_longest_first(records)] == ["abcd", "ab", "a", "x"]


def test_screening_rule_needs_the_mean_and_every_seed():
    """The issue-56 screening rule as written before its arms ran: mean gain >= 0.010 and no seed at or below 0."""
    import pytest

    from bench.ablate_sescore import screen

    def rows(**means):
        return {name: {"mean": {"difference": value}} for name, value in means.items()}

    pairs = [("lever", "base"), ("lever14", "base14")]
    passing = screen(pairs, rows(lever=0.03, base=0.01, lever14=0.012, base14=0.01))
    assert passing["passes"] and passing["mean_delta"] == pytest.approx(0.011)
    assert [r["delta"] for r in passing["pairs"]] == pytest.approx([0.02, 0.002])
    assert not screen(pairs, rows(lever=0.05, base=0.01, lever14=0.0, base14=0.01))["passes"]  # one seed worse
    assert not screen(pairs, rows(lever=0.018, base=0.01, lever14=0.011, base14=0.01))["passes"]  # mean 0.0045
    with pytest.raises(SystemExit, match="no scored row"):
        screen([("lever", "missing")], rows(lever=0.0))


def test_screening_reports_where_a_lever_helps_per_set():
    import pytest

    from bench.ablate_sescore import screen

    def row(mean, **taus):
        return {"mean": {"difference": mean}, "sets": [{"set": k, "tau_like_a": v} for k, v in taus.items()]}

    details = {
        "lever": row(0.02, ted=0.10, webnlg=0.30),
        "base": row(0.01, ted=0.05, webnlg=0.31, summeval=0.2),  # a set only one row has is left out
        "lever14": row(0.02, ted=0.02, webnlg=0.33),
        "base14": row(0.01, ted=0.01, webnlg=0.30),
    }
    verdict = screen([("lever", "base"), ("lever14", "base14")], details)
    assert verdict["pairs"][0]["sets"] == pytest.approx({"ted": 0.05, "webnlg": -0.01})
    assert verdict["mean_sets"] == pytest.approx({"ted": 0.03, "webnlg": 0.01})


def test_committed_base_rows_stand_in_only_on_the_same_half_and_cpu(tmp_path, monkeypatch):
    """--screen-base: a base row this run did not score comes from an earlier result file, but only from one
    scored on the same half on the same CPU model; a row this run scored is never replaced."""
    import json

    import pytest

    import bench.ablate_sescore as ablate
    import bench.harness as harness

    here = harness.machine()["processor"]
    (tmp_path / "bench" / "results").mkdir(parents=True)
    monkeypatch.setattr(ablate, "REPO", tmp_path)

    def write(name, half, processor):
        body = {
            "half": half,
            "machine": {"processor": processor},
            "details": {"v2_own_w0.5": {"mean": {"difference": 0.004}}},
        }
        (tmp_path / "bench" / "results" / f"{name}.json").write_text(json.dumps(body))

    write("same", "select", here)
    scored = {"lever_own_w0.5": {"mean": {"difference": 0.02}}}
    borrowed = ablate.committed_bases("same", ["v2_own_w0.5"], scored, "select")
    assert borrowed == {"v2_own_w0.5": {"mean": {"difference": 0.004}}}
    verdict = ablate.screen([("lever_own_w0.5", "v2_own_w0.5")], {**scored, **borrowed})
    assert verdict["mean_delta"] == pytest.approx(0.016)
    own = {"v2_own_w0.5": {"mean": {"difference": 0.01}}}
    assert ablate.committed_bases("same", ["v2_own_w0.5"], own, "select") == {}  # this run's row wins
    write("other_cpu", "select", here + " (another model)")
    with pytest.raises(SystemExit, match="refit the base arms"):
        ablate.committed_bases("other_cpu", ["v2_own_w0.5"], scored, "select")
    write("report", "report", here)
    with pytest.raises(SystemExit, match="report half"):
        ablate.committed_bases("report", ["v2_own_w0.5"], scored, "select")
    with pytest.raises(SystemExit, match="has no rows"):
        ablate.committed_bases("same", ["v2_seed14_own_w0.5"], scored, "select")
    with pytest.raises(SystemExit, match="no bench/results/absent.json"):
        ablate.committed_bases("absent", ["v2_own_w0.5"], scored, "select")


def test_devmix_compares_checkpoints_with_bertscore_on_their_shared_encoder(tmp_path, monkeypatch):
    """The scoring half of an arm: one evaluate.py devmix call naming every member and their one encoder; an
    ensemble of checkpoints on different encoders is refused before anything runs."""
    import subprocess

    import pytest
    import yaml

    import bench.ablate_sescore as ablation
    from sescore.regressor.checkpoint import FORMAT, MODEL_CLASS

    for name, encoder in (("a", "packaged:minilm"), ("b", "packaged:minilm"), ("c", "packaged:mpnet")):
        (tmp_path / name).mkdir()
        hparams = {"format": FORMAT, "model_class": MODEL_CLASS, "encoder": encoder, "encoder_hash": "x"}
        hparams.update({"regressor": {}, "output_scale": "unit"})
        (tmp_path / name / "hparams.yaml").write_text(yaml.safe_dump(hparams))
    calls = []

    def fake_run(command, **kwargs):
        calls.append(command)
        return subprocess.CompletedProcess(command, 0, stdout='{"mean": {"difference": 0.01}}\n', stderr="")

    monkeypatch.setattr(ablation.subprocess, "run", fake_run)
    result = ablation.devmix([str(tmp_path / "a"), str(tmp_path / "b")], "select", "cache")
    assert result == {"mean": {"difference": 0.01}}
    command = calls[0]
    assert command[command.index("--half") + 1] == "select" and command[command.index("--versus") + 1] == "bertscore"
    assert command[command.index("--encoder") + 1] == "packaged:minilm"
    assert command[command.index("--checkpoint") + 1 : command.index("--checkpoint") + 3] == [
        str(tmp_path / "a"),
        str(tmp_path / "b"),
    ]
    with pytest.raises(SystemExit, match="compared with BERTScore on its encoder"):
        ablation.devmix([str(tmp_path / "a"), str(tmp_path / "c")], "select", "cache")
    assert len(calls) == 1


def test_confirmation_needs_a_larger_difference_than_the_bar_and_under_five_percent_not_better():
    """Step 2 of the issue-56 rule, against the committed mpnet-v2 row it names (+0.0235 on the select half)."""
    import pytest

    from bench.ablate_sescore import confirm

    bar = "sescore_ablation_mpnet_select:v2_mpnet_own_w0.5"

    def row(difference: float, not_better: float) -> dict:
        return {"lever": {"mean": {"difference": difference, "share_a_not_better": not_better}}}

    verdict = confirm("lever", bar, row(0.030, 0.040), "select")
    assert verdict["passes"] and verdict["bar"]["difference"] == pytest.approx(0.0235, abs=5e-5)
    assert not confirm("lever", bar, row(0.030, 0.050), "select")["passes"], "5% itself is not under 5%"
    assert not confirm("lever", bar, row(0.020, 0.010), "select")["passes"]
    with pytest.raises(SystemExit, match="report-half row"):
        confirm("lever", bar, row(0.030, 0.040), "report")
    with pytest.raises(SystemExit, match="LEVER=RESULT:ROW"):
        confirm("lever", "sescore_ablation_mpnet_select", row(0.030, 0.040), "select")
