"""bench.record: a command's JSON result filed with its command, commit, cost and machine."""

import json
import sys

import pytest

from bench import record


def _printer(tmp_path, body: str) -> list[str]:
    script = tmp_path / "cmd.py"
    script.write_text(body)
    return [sys.executable, str(script)]


def test_a_run_is_filed_with_its_command_commit_cost_and_machine(tmp_path):
    table = tmp_path / "table.md"
    command = _printer(
        tmp_path,
        "import json, sys\n"
        "open(sys.argv[2], 'w').write('# the table\\n')\n"
        "print('progress', file=sys.stderr)\n"
        "print('not json')\n"
        "print(json.dumps({'mean': {'difference': 0.25}}))\n",
    ) + ["--markdown", str(table)]
    document = record.record("trial", "a trial run", command, folder=tmp_path / "results")
    stored = json.loads((tmp_path / "results" / "trial.json").read_text())
    assert stored == document and stored["mean"] == {"difference": 0.25} and stored["about"] == "a trial run"
    assert stored["command"].endswith(f"--markdown {table}") and stored["cost"]["wall_seconds"] >= 0
    assert stored["cost"]["peak_rss_mb"] > 0 and stored["machine"]["cpus"] >= 1 and stored["commit"]
    text = (tmp_path / "results" / "trial.md").read_text()
    assert text.startswith("# the table\n") and "- a trial run" in text and "Machine:" in text


def test_a_failed_or_silent_command_writes_nothing(tmp_path):
    with pytest.raises(SystemExit, match="exit code 3"):
        record.record("x", "fails", _printer(tmp_path, "raise SystemExit(3)\n"), folder=tmp_path / "r")
    with pytest.raises(ValueError, match="no JSON object"):
        record.record("x", "silent", _printer(tmp_path, "print('done')\n"), folder=tmp_path / "r")
    with pytest.raises(SystemExit, match="--about is empty"):
        record.record("x", " ", _printer(tmp_path, "print('{}')\n"), folder=tmp_path / "r")
    assert not (tmp_path / "r").exists()
    with pytest.raises(SystemExit, match="usage"):
        record.main(["x", "--about", "y"])
