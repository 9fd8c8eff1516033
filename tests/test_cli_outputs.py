"""Output options that cannot be written fail before any model loads, with one line and no traceback."""

from __future__ import annotations

import os

from nlgmetrics.cli import common
from nlgmetrics.cli.evaluate import main


def test_an_output_under_a_file_is_named_before_scoring(tmp_path, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    code = main(["stress", "--metric", "chrf", "--out", str(blocker / "report"), "--data", str(tmp_path / "none")])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("error: --out:") and "is a file" in err and "Traceback" not in err


def test_a_read_only_folder_is_named(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(common.os, "access", lambda p, mode: False if str(p) == str(locked) else real_access(p, mode))
    reason = common.unwritable_reason(locked / "deep" / "scores.json")
    assert reason == f"cannot create {locked / 'deep' / 'scores.json'}: the folder {locked} is not writable"
    assert common.unwritable_reason(tmp_path / "fine.json") is None


def test_write_errors_while_running_are_one_line(tmp_path, monkeypatch, capsys):
    from nlgmetrics.cli import evaluate

    def full_disk(args):
        raise OSError(28, "No space left on device", str(tmp_path / "scores.json"))

    monkeypatch.setitem(evaluate.RUNNERS, "score", full_disk)
    hyps = tmp_path / "h.txt"
    hyps.write_text("a\n")
    assert main(["score", "--metric", "chrf", "--hyps", str(hyps), "--refs", str(hyps)]) == 1
    assert capsys.readouterr().err.strip() == f"error: No space left on device: {tmp_path / 'scores.json'}"
