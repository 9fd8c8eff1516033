"""bench/ablate_sescore.py: arms train only once (resume), missing datasets are reported, never trained on."""

import json

from bench.ablate_sescore import ARMS, CONFIG, fit_arm


def test_arms_name_existing_configs_and_overrides():
    from nlgmetrics.resources import config_path

    assert config_path(CONFIG.removeprefix("configs/")).is_file()
    for arm, (what, dataset, overrides) in ARMS.items():
        assert what and dataset.startswith("runs/") and len(overrides) % 2 == 0, arm
        assert all(flag.startswith("--") for flag in overrides[::2]), arm


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
