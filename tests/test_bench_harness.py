"""bench/harness.py: the benchmark texts, metrics by name, timing, result files and fresh-process runs (no models)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import harness  # noqa: E402


def test_agreement_reports_worst_row_and_correlation():
    out = harness.agreement([0.1, 0.5, 0.9], [0.2, 0.5, 0.7])
    assert out["max_abs_diff"] == pytest.approx(0.2)
    assert out["pearson"] == pytest.approx(np.corrcoef([0.1, 0.5, 0.9], [0.2, 0.5, 0.7])[0, 1])
    with pytest.raises(ValueError, match="equally long"):
        harness.agreement([0.1, 0.2], [0.1])


def test_wmt_and_ted_pairs_from_rows():
    rows = [{"refs": [f"ref {i}", f"alt {i}"], "systems": {"B": f"b{i}", "A": f"a{i}"}} for i in range(4)]
    hyps, refs = harness.wmt_one_system(rows, 3, seed=1)
    assert refs == ["ref 0", "ref 1", "ref 2"] and all(h[1:] == str(i) for i, h in enumerate(hyps))
    assert harness.wmt_one_system(rows, 3, seed=1) == (hyps, refs)
    assert harness.wmt_all_systems(rows, 2) == (["a0", "b0", "a1", "b1"], ["ref 0", "ref 0", "ref 1", "ref 1"])
    assert harness.ted_paragraphs(rows[:2]) == (["alt 0", "alt 1"], ["ref 0", "ref 1"])


def test_roc_references_read_the_first_stories_and_their_contexts(tmp_path):
    path = tmp_path / "roc.jsonl"
    path.write_text("".join(json.dumps({"refs": [f"story {i}"], "src": f"first {i}"}) + "\n" for i in range(3)))
    assert harness.roc_references(2, path) == (["story 0", "story 1"], ["first 0", "first 1"])
    with pytest.raises(SystemExit, match="only 3 rows"):
        harness.roc_references(5, path)


def test_metric_passes_each_metric_only_the_settings_it_takes():
    """One set of settings serves every metric of a recipe, as one command line's flags did."""
    settings = {"encoder": "packaged:minilm", "nli_model": "packaged:nli-minilm", "progress": False}
    chrf = harness.metric("chrf", **settings)  # chrF takes none of them
    assert chrf.signature().startswith("chrf|")
    from nlgmetrics import load_metric

    with pytest.raises(ValueError):
        load_metric("chrf", encoder="packaged:minilm")  # what the filter saves a recipe from


def test_interleaved_times_are_the_best_of_turns_in_wall_and_cpu():
    calls = []

    def sleeper(name, seconds):
        def run():
            calls.append(name)
            time.sleep(seconds)

        return run

    times = harness.interleaved_best_times({"a": sleeper("a", 0.02), "b": sleeper("b", 0.0)}, repeats=2)
    assert calls == ["a", "b", "a", "b"]  # in turns, not in blocks
    assert times["a"].wall >= 0.02 > times["b"].wall and times["a"].cpu < times["a"].wall  # sleeping is not work
    out, took = harness.timed(lambda: 41 + 1)
    assert out == 42 and took.wall >= 0 and took.cpu >= 0


def test_result_files_hold_the_table_the_notes_and_the_machine(tmp_path, monkeypatch):
    monkeypatch.setattr(harness, "RESULTS", tmp_path)
    harness.write_results("t", {"n": 3}, [{"a": 1e-7, "b": 0.5, "c": None}], ["a", "b", "c"], "title", ["a note"])
    text = (tmp_path / "t.md").read_text()
    assert "| 1.0e-07 | 0.500 |  |" in text and "- a note" in text and "Machine: " in text
    stored = json.loads((tmp_path / "t.json").read_text())
    assert stored["n"] == 3 and stored["rows"][0]["b"] == 0.5 and stored["machine"]["processor"]
    written = harness.write_document("d", {"x": 1}, lambda doc: f"# x = {doc['x']} on {doc['machine']['cpus']} cpus\n")
    assert (tmp_path / "d.md").read_text().startswith("# x = 1 on ")
    assert json.loads((tmp_path / "d.json").read_text()) == json.loads(json.dumps(written))


def test_load_span_records_the_start_and_the_end():
    span = harness.LoadSpan().span()
    assert set(span) == {"start", "end"} and span["start"] >= 0


def test_run_child_reports_its_own_peak_and_stops_at_the_limit():
    grow = "import time; block = bytearray({mb} * 2**20); block[::4096] = b'x' * len(block[::4096]); time.sleep(2)"
    small = harness.run_child([sys.executable, "-c", grow.format(mb=40)], poll_seconds=0.1)
    assert small.returncode == 0 and small.killed_over_mb is None and small.peak_rss_mb > 40
    stopped = harness.run_child([sys.executable, "-c", grow.format(mb=300)], rss_limit_mb=150, poll_seconds=0.1)
    assert stopped.killed_over_mb == 150 and stopped.returncode != 0


def test_a_worker_answers_in_a_fresh_process_and_a_failed_one_gives_none(tmp_path):
    script = tmp_path / "worker.py"
    script.write_text(
        f"import sys; sys.path.insert(0, {str(harness.REPO)!r})\n"
        "from bench.harness import write_worker_result\n"
        "out = sys.argv[sys.argv.index('--out') + 1]\n"
        "if '--fail' in sys.argv: raise SystemExit(3)\n"
        "write_worker_result(out, {'score_s': 1.0, 'load_s': 0.5})\n"
    )
    result, run = harness.run_worker(script, [])
    assert result == {"score_s": 1.0, "load_s": 0.5} and run.returncode == 0
    result, run = harness.run_worker(script, ["--fail"])
    assert result is None and run.returncode == 3


def test_best_of_turns_takes_each_names_best_and_stops_without_the_reference():
    runs = {
        "a": [
            {"score_s": 2.0, "load_s": 1.0, "peak_rss_mb": 10.0},
            {"score_s": 1.0, "load_s": 2.0, "peak_rss_mb": 12.0},
        ],
        "b": [{"score_s": 3.0, "load_s": 1.5, "peak_rss_mb": 20.0}],
        "c": [],
    }
    best = harness.best_of_turns(runs, "a", "A")
    assert best["a"]["best"] == 1.0 and best["a"]["load_s"] == 1.0 and best["a"]["peak_rss_mb"] == 12.0
    assert best["b"]["ratio"] == 3.0 and best["c"] is None
    with pytest.raises(SystemExit, match="the A runs failed"):
        harness.best_of_turns({"a": [], "b": runs["b"]}, "a", "A")


def test_result_files_record_no_path_of_this_machine(monkeypatch, tmp_path):
    """What write_results and write_document store: the checkout relative, the shared data as $NLGMETRICS_DATA."""
    from bench import harness

    data = tmp_path / "data"
    monkeypatch.setenv("NLGMETRICS_DATA", str(data))
    record = harness.portable(
        {
            "config": str(harness.REPO / "configs" / "mars" / "offline.yaml"),
            "data": [str(data / "nli" / "xnli.jsonl")],
            "folder": harness.REPO / "bench",
            "kept": ("plain text", 3),
        }
    )
    assert record == {
        "config": "configs/mars/offline.yaml",
        "data": ["$NLGMETRICS_DATA/nli/xnli.jsonl"],
        "folder": "bench",
        "kept": ("plain text", 3),
    }


def test_command_reports_record_no_path_of_this_machine(monkeypatch, tmp_path):
    """The commands' --json reports (nli-accuracy, correlate...) take the same paths out, relative to the
    working directory, because they land in bench/results too."""
    import json

    from nlgmetrics.cli.common import write_report

    data = tmp_path / "data"
    monkeypatch.setenv("NLGMETRICS_DATA", str(data))
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "report.json"
    write_report({"test": [str(data / "nli" / "x.jsonl")], "model": str(tmp_path / "runs" / "m")}, str(out), None, str)
    assert json.loads(out.read_text()) == {"test": ["$NLGMETRICS_DATA/nli/x.jsonl"], "model": "runs/m"}


def test_bench_scripts_run_as_modules_without_patching_sys_path(monkeypatch):
    """Every bench script runs from the checkout as ``python -m bench.<name>``, its fresh-process workers too."""
    assert [p.name for p in (harness.REPO / "bench").glob("*.py") if "sys.path" in p.read_text()] == []
    seen = []

    def child(cmd, *args, **kwargs):
        seen.append((cmd, kwargs.get("cwd")))
        return harness.ChildRun(1, 0.0, 0.0, None)

    monkeypatch.setattr(harness, "run_child", child)
    assert harness.run_worker(harness.REPO / "bench" / "bench_nli.py", ["--worker", "x"])[0] is None
    assert seen[0][0][1:3] == ["-m", "bench.bench_nli"] and seen[0][1] == harness.REPO
