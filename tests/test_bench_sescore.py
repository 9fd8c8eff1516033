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
