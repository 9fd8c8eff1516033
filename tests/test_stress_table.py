"""The results pages' blind-spot tables are the committed stress reports, rendered by bench/stress_table.py."""

from __future__ import annotations

import json

import pytest

from bench import stress_table


def _report(root, folder, summary):
    (root / folder).mkdir(parents=True)
    (root / folder / "report.json").write_text(json.dumps({"summary": summary}))


def test_cells_come_from_the_named_report_and_missing_folders_say_not_run(tmp_path):
    _report(tmp_path, "a", {"bleu": {"passed": 20, "failed": 3, "too_few": 1, "not_applicable": 0}})
    assert stress_table.cell_text(tmp_path, ("a", "bleu")) == "20/23"  # too few / not applicable are not judged
    assert stress_table.cell_text(tmp_path, ("b", "bleu")) == stress_table.NOT_RUN
    assert stress_table.cell_text(tmp_path, None) == "-"
    with pytest.raises(KeyError, match="no metric 'chrf' in its summary \\(has bleu\\)"):
        stress_table.cell_text(tmp_path, ("a", "chrf"))


def test_every_cell_names_a_committed_report_or_says_not_run():
    for name in stress_table.TABLES:
        table = stress_table.render(name)
        assert table.count("\n") == len(stress_table.TABLES[name]["rows"]) + 1


def test_stress_sample_keeps_a_finished_cells_scores_while_the_sets_mix_still_reuses_them(tmp_path, monkeypatch):
    from bench import stress_sample

    monkeypatch.setattr(stress_sample, "ROOT", tmp_path)
    mix = "menli+sescore+lm-ratio"
    for metric in ("chrf", "menli", mix):
        cell = stress_sample.folder("tedmt_zhen", metric)
        cell.mkdir(parents=True)
        for name in ("scores.jsonl", "scores.costs.json", "parts.jsonl"):
            (cell / name).write_text("{}")
    for metric in ("chrf", "menli"):
        (stress_sample.folder("tedmt_zhen", metric) / "report.json").write_text("{}")

    def left(metric):
        return sorted(p.name for p in stress_sample.folder("tedmt_zhen", metric).iterdir())

    stress_sample.tidy("tedmt_zhen")
    assert left("chrf") == ["report.json", "scores.costs.json"]  # finished, lent to nobody: state deleted
    assert "scores.jsonl" in left("menli")  # finished, but the unfinished mix still reads its rows
    assert "scores.jsonl" in left(mix) and "parts.jsonl" in left(mix)  # unfinished: its state is what resumes
    (stress_sample.folder("tedmt_zhen", mix) / "report.json").write_text("{}")
    stress_sample.tidy("tedmt_zhen")
    assert left("menli") == left(mix) == ["report.json", "scores.costs.json"]


def test_stress_sample_stops_the_run_under_way_when_its_budget_is_spent(tmp_path, monkeypatch):
    import subprocess
    import sys
    import time

    from bench import stress_sample

    monkeypatch.setattr(stress_sample, "REPO", tmp_path)
    monkeypatch.setattr(stress_sample, "ROOT", tmp_path / "sample25")
    launched, popen = [], subprocess.Popen

    def slow_run(command, **kwargs):  # stands in for a TED-MT MENLI cell: far longer than the budget
        launched.append(command)
        return popen([sys.executable, "-c", "import time; time.sleep(60)"], **kwargs)

    monkeypatch.setattr(stress_sample.subprocess, "Popen", slow_run)
    started = time.time()
    sitting = stress_sample.run_cell("tedmt_zhen", "menli", tmp_path, seconds_left=0.5)
    assert sitting["exit"] == "stopped: budget spent" and time.time() - started < 30
    assert sitting["processor"]  # sittings of one cell may come from different machines
    command = launched[0]
    assert command[command.index("--chunk") + 1] == "100", "TED-MT saves every 100 rows"
    assert command.count("--chunk") == 1


def test_a_mixs_reused_part_rows_are_counted_apart_from_its_own_seconds(tmp_path, monkeypatch):
    from bench import stress_sample

    monkeypatch.setattr(stress_sample, "ROOT", tmp_path)
    mix = "menli+sescore+lm-ratio"
    cell = stress_sample.folder("tedmt_zhen", mix)
    cell.mkdir(parents=True)
    assert stress_sample.reused_rows("tedmt_zhen", mix) == 0
    ledger = {"menli|x": {"reused": 4908}, "sescore|y": {"rows": 4908, "seconds": 252.7}}
    (cell / "parts.costs.json").write_text(json.dumps(ledger))
    (cell / "scores.costs.json").write_text(json.dumps({"mix|z": {"rows": 4908, "seconds": 2868.4}}))
    assert stress_sample.reused_rows("tedmt_zhen", mix) == 4908
    assert stress_sample.costs("tedmt_zhen", mix) == {"rows": 4908, "seconds": 2868.4}


def test_the_stress_page_gives_full_set_commands_from_the_recorded_sample_runs():
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "gen"))
    import results_stress

    sittings = [
        {"set": "wmt21_deen", "metric": "menli", "command": "nlgmetrics-evaluate stress --data $D/a.jsonl --sample 25"},
        {
            "set": "wmt21_deen",
            "metric": "menli+sescore+lm-ratio",
            "command": "nlgmetrics-evaluate stress --metric menli+sescore+lm-ratio --data $D/a.jsonl --sample 25 "
            "--reuse-scores x/scores.json",
        },
    ]
    commands = results_stress._full_set_commands({"sittings": sittings})
    assert len(commands) == 1
    assert "--data $D/a.jsonl --out runs/stress/wmt21_deen" in commands[0]
    assert "--sample" not in commands[0] and "--reuse-scores" not in commands[0]
