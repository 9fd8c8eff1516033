"""The on-disk score cache (nlgmetrics.scorecache) behind resumable stress runs (evaluate.py stress), the dev mix's
--cache and the benchmarks' ablations."""

import hashlib
import json

import pytest

from nlgmetrics.scorecache import ScoreCache, cached_row_scores
from nlgmetrics.stress.store import ScoreStore, row_key


class _Counting:
    """A metric that records which hypotheses it was asked to score and what sources it was given."""

    def __init__(self, fail_on_call: int | None = None):
        self.calls, self.sources, self.fail_on_call = [], [], fail_on_call

    def __call__(self, hyps, refs, srcs):
        if self.fail_on_call is not None and len(self.calls) == self.fail_on_call:
            raise KeyboardInterrupt  # a killed run
        self.calls.append(list(hyps))
        self.sources.append(srcs)
        return [float(len(h) + len(r)) for h, r in zip(hyps, refs)]


def test_store_resumes_and_only_scores_new_rows(tmp_path):
    path = tmp_path / "scores.json"
    first = _Counting()
    assert ScoreStore(path).metric("m", first, chunk=2, log=None)(["a", "bb", "ccc"], ["x"] * 3, None) == [2, 3, 4]
    assert first.calls == [["a", "bb"], ["ccc"]]  # saved after every chunk
    again = _Counting()
    assert ScoreStore(path).metric("m", again, chunk=2, log=None)(["ccc", "dddd", "a"], ["x"] * 3, None) == [4, 5, 2]
    assert again.calls == [["dddd"]]
    assert not list(tmp_path.glob("*.part"))
    stored = ScoreStore(path)
    assert len(stored) == 4 and all(stored.holds("m", row_key(h, "x")) for h in ("a", "bb", "ccc", "dddd"))
    assert not stored.holds("other", row_key("a", "x"))


def test_a_killed_run_keeps_every_finished_chunk(tmp_path):
    path = tmp_path / "scores.json"
    killed = _Counting(fail_on_call=1)
    with pytest.raises(KeyboardInterrupt):
        ScoreStore(path).metric("m", killed, chunk=2, log=None)(["a", "bb", "ccc", "dddd"], ["x"] * 4, None)
    stored = ScoreStore(path)
    assert len(stored) == 2 and stored.holds("m", row_key("a", "x")) and stored.holds("m", row_key("bb", "x"))
    resumed = _Counting()
    lines = []
    scores = ScoreStore(path).metric("m", resumed, chunk=2, log=lines.append)(
        ["a", "bb", "ccc", "dddd"], ["x"] * 4, None
    )
    assert scores == [2, 3, 4, 5] and resumed.calls == [["ccc", "dddd"]]
    assert lines[0] == "m: 2 stored, 2 to score"


def test_names_keep_scores_apart_and_sources_are_part_of_the_key(tmp_path):
    store = ScoreStore(tmp_path / "s.json")
    metric = _Counting()
    scored = store.metric("sig-a", metric, chunk=8, log=None)(["h", "h"], ["r", "r"], ["src 1", "src 2"])
    assert scored == [2.0, 2.0] and metric.calls == [["h", "h"]]  # same text, other source: scored apart
    other = _Counting()
    store.metric("sig-b", other, chunk=8, log=None)(["h"], ["r"], ["src 1"])
    assert other.calls == [["h"]]  # another signature reuses nothing
    blind = _Counting()
    store.metric("ref-only", blind, chunk=8, log=None, sources=False)(["h", "h"], ["r", "r"], ["src 1", "src 2"])
    assert blind.calls == [["h"]] and blind.sources == [None]  # keyed and scored without sources
    assert store.holds("ref-only", row_key("h", "r")) and not store.holds("ref-only", row_key("h", "r", "src 1"))


def test_costs_add_up_over_resumed_runs(tmp_path):
    path = tmp_path / "scores.json"
    pairs = {"scored": 0}

    def scored(h, r, s):  # a metric that "scores" one NLI pair per row
        pairs["scored"] += len(h)
        return [float(len(x)) for x in h]

    store = ScoreStore(path)
    store.counters = lambda: {"nli_pairs_scored": pairs["scored"]}
    store.metric("m", scored, chunk=2, log=None)(["a", "bb", "ccc"], ["x"] * 3, None)
    resumed = ScoreStore(path)
    pairs["scored"] = 100  # a new process: its counters start again, only the differences are added
    resumed.counters = lambda: {"nli_pairs_scored": pairs["scored"]}
    resumed.metric("m", scored, chunk=2, log=None)(["ccc", "dddd", "eeeee"], ["x"] * 3, None)
    costs = json.loads(path.with_name("scores.costs.json").read_text())["m"]
    assert costs["rows"] == 5 and costs["nli_pairs_scored"] == 5 and costs["seconds"] >= 0
    legacy = tmp_path / "old.json"  # a store written before the ledger existed: rows stored, not recorded
    legacy.write_text(json.dumps({"m": {row_key("a", "x"): 1.0}}))
    assert ScoreStore(legacy).costs == {}


def test_an_earlier_versions_store_is_read_once_and_left_in_place(tmp_path):
    legacy = tmp_path / "scores.json"
    before = json.dumps({"m": {row_key("a", "x"): 7.0}, "n": {row_key("b", "x"): 8.0}})
    legacy.write_text(before)
    metric = _Counting()
    assert ScoreStore(legacy).metric("m", metric, chunk=2, log=None)(["a", "bb"], ["x", "x"], None) == [7.0, 3.0]
    assert metric.calls == [["bb"]] and legacy.read_text() == before  # copied, not moved or rewritten
    again = ScoreStore(tmp_path / "scores.jsonl")  # the new file is the store now: nothing copied twice
    assert len(again) == 3 and again.get("n", row_key("b", "x")) == 8.0
    legacy.write_text(json.dumps({"m": {row_key("a", "x"): -1.0}}))  # ignored once the new file exists
    assert ScoreStore(legacy).get("m", row_key("a", "x")) == 7.0


def test_the_store_file_is_the_one_cache_format(tmp_path):
    from nlgmetrics.diskcache import CacheFile

    store = ScoreStore(tmp_path / "s.jsonl")
    store.metric("m", _Counting(), chunk=1, log=None)(["a", "bb"], ["x", "x"], None)
    lines = (tmp_path / "s.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["kind"] == "scores" and len(lines) == 3  # header, then one record per row
    assert len(CacheFile(tmp_path / "s.jsonl", "scores").read()) == 2


def test_bad_stores_and_metrics_are_named(tmp_path):
    broken = tmp_path / "scores.json"  # an earlier version's store, damaged
    broken.write_text('{"m": {"k": 1.0')  # cut off mid-write by something other than the store
    with pytest.raises(ValueError, match="scores.json: not a readable score store"):
        ScoreStore(broken)
    broken.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a score store"):
        ScoreStore(broken)
    store = ScoreStore(tmp_path / "ok.json")
    with pytest.raises(ValueError, match="chunk must be a positive"):
        store.metric("m", _Counting(), chunk=0)
    with pytest.raises(ValueError, match="returned 1 scores for 2 rows"):
        store.metric("m", lambda h, r, s: [0.0], chunk=4, log=None)(["a", "b"], ["x", "x"], None)


def test_the_stress_name_is_the_shared_cache():
    assert ScoreStore is ScoreCache


class _RowScorer:
    """A Scorer that counts the rows it scores and what sources it saw."""

    def __init__(self, tag="v1"):
        self.tag, self.calls, self.sources = tag, [], []

    def signature(self):
        return f"toy|{self.tag}"

    def score(self, hyps, refs, srcs=None):
        self.calls.append(list(hyps))
        self.sources.append(srcs)
        return [
            float(len(h) + len(r[0]) + (len(s) if srcs else 0))
            for h, r, s in zip(hyps, refs, srcs if srcs else [None] * len(hyps))
        ]


ROWS = [
    {"hyp": "a", "refs": ["xx"], "src": "s1"},
    {"hyp": "bb", "refs": ["xx"], "src": "s2"},
    {"hyp": "a", "refs": ["xx"], "src": "s1"},
]


def test_cached_row_scores_score_each_missing_row_once_and_reuse_rows_across_row_sets(tmp_path):
    scorer = _RowScorer()
    assert cached_row_scores(scorer, ROWS[:1], tmp_path, "set-select-0") == [5.0]
    assert cached_row_scores(scorer, ROWS, tmp_path, "set-select-0") == [5.0, 6.0, 5.0]
    assert scorer.calls == [["a"], ["bb"]]  # the trial's row was not scored again, the repeated row once
    assert cached_row_scores(_RowScorer("v2"), ROWS, tmp_path, "set-select-0") == [5.0, 6.0, 5.0]
    assert len(list(tmp_path.glob("set-select-0-*.costs.json"))) == 2  # another signature: a file of its own
    assert cached_row_scores(scorer, ROWS, None, "t") == [5.0, 6.0, 5.0] and len(scorer.calls) == 3  # no cache


def test_reference_only_scores_blank_the_sources_and_keep_apart_from_sourced_ones(tmp_path):
    scorer = _RowScorer()
    assert cached_row_scores(scorer, ROWS, tmp_path, "t", sources=False) == [3.0, 4.0, 3.0]
    assert scorer.sources == [None]
    assert cached_row_scores(scorer, ROWS, tmp_path, "t") == [5.0, 6.0, 5.0]  # with sources: other keys
    assert cached_row_scores(scorer, ROWS, None, "t", sources=False) == [3.0, 4.0, 3.0]


def test_chunks_save_as_they_go_and_a_custom_row_scorer_is_used(tmp_path):
    seen = []

    def doubled(scorer, rows):
        seen.append(len(rows))
        return [2.0 * s for s in scorer.score([r["hyp"] for r in rows], [r["refs"] for r in rows])]

    rows = [{"hyp": h, "refs": ["r"]} for h in ("a", "bb", "ccc")]
    lines = []
    assert cached_row_scores(_RowScorer(), rows, tmp_path, "t", row_scores=doubled, chunk=2, log=lines.append) == [
        4.0,
        6.0,
        8.0,
    ]
    assert seen == [2, 1] and lines[0] == "t: 0 stored, 3 to score"


def test_a_devmix_cache_file_of_the_whole_list_kind_is_still_read(tmp_path):
    """Folders written by ``evaluate.py devmix --cache`` before the shared cache: one whole list per file."""
    scorer = _RowScorer()
    digest = hashlib.sha256()
    for row in ROWS:
        digest.update(json.dumps([row.get("hyp"), row.get("refs"), row.get("src")], ensure_ascii=False).encode())
    key = hashlib.sha256(f"{scorer.signature()}\x1f{digest.hexdigest()}".encode()).hexdigest()[:20]
    (tmp_path / f"set-select-0-{key}.json").write_text(
        json.dumps({"signature": scorer.signature(), "rows": 3, "scores": [1.0, 2.0, 1.0]})
    )
    assert cached_row_scores(scorer, ROWS, tmp_path, "set-select-0") == [1.0, 2.0, 1.0]
    assert scorer.calls == []  # read, not scored
    assert cached_row_scores(scorer, ROWS[1:2], tmp_path, "set-select-0") == [2.0]  # now kept per row
