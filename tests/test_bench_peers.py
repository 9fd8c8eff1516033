"""The helpers of bench/bench_peers.py and bench/bench_scaling.py on tiny synthetic models and data (no timings);
the harness they share is tested in test_bench_harness.py."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench import bench_peers as peers  # noqa: E402
from bench import bench_scaling as scaling  # noqa: E402
from bench.harness import write_results  # noqa: E402

HYPS = [
    "the cat sat on the mat",
    "a dog barked at night",
    "rain fell",
    "she reads the old book slowly today",
    "birds fly south",
    "he ate bread",
]
REFS = [
    "a cat sat on a mat",
    "the dog barked loudly all night long",
    "it rained",
    "she read a book",
    "the birds flew south in winter",
    "he eats bread and cheese",
]


@pytest.fixture(scope="module")
def tiny_encoder(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tiny_models import build_bert

    return str(build_bert(tmp_path_factory.mktemp("enc"), "encoder"))


@pytest.fixture(scope="module")
def tiny_nli(tmp_path_factory: pytest.TempPathFactory) -> str:
    from tiny_models import build_bert

    return str(build_bert(tmp_path_factory.mktemp("nli"), "nli"))


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_f1_rules_differ_only_where_each_implementation_differs():
    from nlgmetrics.baselines import bertscore_f1

    rng = np.random.default_rng(0)
    hyp, ref = _unit(rng.normal(size=(6, 8))), _unit(rng.normal(size=(5, 8)))
    hyp_special = np.array([True, False, False, False, False, True])
    ref_special = np.array([True, False, False, False, True])
    plain = bertscore_f1(hyp[~hyp_special], ref[~ref_special])
    assert peers.f1_by_rule(hyp, hyp_special, ref, ref_special) == pytest.approx(plain)
    # make [SEP] of the reference the best match of every hypothesis token: only bert-score's rule sees it
    ref[-1] = _unit(hyp[~hyp_special].sum(0, keepdims=True))[0]
    assert peers.f1_by_rule(hyp, hyp_special, ref, ref_special) == pytest.approx(plain)
    assert peers.f1_by_rule(hyp, hyp_special, ref, ref_special, special_targets=True) > plain
    # a hypothesis token opposite to the only reference token: best cosine -1, floored to 0 by torchmetrics' rule
    e1, none = np.array([[1.0, 0.0]]), np.array([False])
    both = np.concatenate([e1, -e1])
    assert peers.f1_by_rule(both, np.array([False, False]), e1, none) == pytest.approx(0.0)  # P = 0, R = 1
    assert peers.f1_by_rule(both, np.array([False, False]), e1, none, zero_floor=True) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="only special tokens"):
        peers.f1_by_rule(hyp[:1], hyp_special[:1], ref, ref_special)


def test_twice_sorted_matches_torchmetrics_reindexing():
    import torch
    from torchmetrics.functional.text.helper_embedding_metric import _sort_data_according_length

    counts = [5, 2, 9, 4, 7, 3]
    mask = torch.tensor([[1] * c + [0] * (10 - c) for c in counts])
    ids = torch.arange(len(counts)).unsqueeze(1).expand(-1, 10)  # row i carries its input index i
    sorted_ids, _, sorting_indices = _sort_data_according_length(ids, mask)
    as_torchmetrics_returns = sorted_ids[sorting_indices][:, 0].numpy()  # what bert_score does to embeddings
    assert peers.twice_sorted(counts).tolist() == as_torchmetrics_returns.tolist()
    assert sorted(as_torchmetrics_returns.tolist()) == list(range(len(counts)))
    assert as_torchmetrics_returns.tolist() != list(range(len(counts)))  # the rows really are out of place


def test_rule_checks_reproduce_each_peer_on_a_tiny_encoder(tiny_encoder, monkeypatch):
    monkeypatch.setattr(peers, "MAX_TOKENS", 64)  # torchmetrics pads to it; the tiny model has 128 positions
    ours = np.array(peers._ours(tiny_encoder)(HYPS, REFS))
    same_rule = np.array(peers._rule_check(False, False, False, tiny_encoder)(HYPS, REFS))
    assert np.abs(ours - same_rule).max() < 1e-5
    tm = np.array(peers._torchmetrics(tiny_encoder, layers=2)(HYPS, REFS))
    tm_check = np.array(peers._rule_check(False, True, True, tiny_encoder)(HYPS, REFS))
    assert np.abs(tm - tm_check).max() < 1e-5
    assert np.abs(tm - ours).max() > 1e-3  # with these lengths torchmetrics pairs other texts


def test_one_pair_at_a_time_equals_batched_probabilities(tiny_nli):
    from nlgmetrics.nli import load_nli

    nli = load_nli(tiny_nli, "cpu")
    single = peers.one_pair_at_a_time(nli, REFS, HYPS)
    batched = nli.predict_proba(REFS, HYPS, batch_size=4)
    assert single.shape == (len(HYPS), 3)
    np.testing.assert_allclose(single.sum(1), 1.0, atol=1e-6)
    np.testing.assert_allclose(single, batched, atol=1e-5)
    score = peers._menli(True, tiny_nli)(HYPS, REFS)
    np.testing.assert_allclose(score, peers._menli(False, tiny_nli)(HYPS, REFS), atol=1e-5)
    np.testing.assert_allclose(peers.menli_e_avg(single, batched), (single[:, 0] + batched[:, 0]) / 2)


def test_summarise_best_time_ratios_and_diagnostics():
    runs = {
        "ours": [
            {"score_s": 2.0, "load_s": 1.0, "peak_rss_mb": 100.0, "scores": [0.1, 0.5, 0.9]},
            {"score_s": 1.0, "load_s": 1.5, "peak_rss_mb": 120.0, "scores": [0.1, 0.5, 0.9]},
        ],
        "peer": [{"score_s": 3.0, "load_s": 2.0, "peak_rss_mb": 240.0, "scores": [0.2, 0.4, 0.9]}],
        "check": [{"score_s": 9.0, "load_s": 2.0, "peak_rss_mb": 90.0, "scores": [0.2, 0.4, 0.8]}],
        "broken": [],
    }
    rows = {r["peer"]: r for r in peers.summarise(runs, "ours", 3, 2, {"check": "peer"})}
    assert rows["ours"]["seconds"] == 1.0 and rows["ours"]["peak_rss_mb"] == 120.0
    assert rows["peer"]["time_ratio_to_ours"] == 3.0 and rows["peer"]["rss_ratio_to_ours"] == 2.0
    assert rows["peer"]["pairs_per_s"] == 2.0
    assert rows["check"]["diff_to_explained"] == pytest.approx(0.1)
    assert rows["check"]["status"] == "diagnostic for peer"
    assert rows["broken"]["status"] == "failed"
    with pytest.raises(ValueError, match="reference peer"):
        peers.summarise({"ours": []}, "ours", 3, 0)


def test_sample_segments_is_seeded_distinct_and_from_the_pool():
    pool = (["h1", "h2", "h3"], ["r1", "r2", "r3"])
    hyps, refs = scaling.sample_segments(pool, 50, seed=3)
    assert (hyps, refs) == scaling.sample_segments(pool, 50, seed=3)
    assert (hyps, refs) != scaling.sample_segments(pool, 50, seed=4)
    assert len(set(hyps)) == 50 and len(set(refs)) == 50
    for h, r in zip(hyps, refs):  # hyp and ref of a segment come from the same pool row
        assert h.split(" [")[0][1:] == r.split(" [")[0][1:]
    with pytest.raises(ValueError, match="sample size"):
        scaling.sample_segments(pool, 0, seed=3)


def test_projection_and_caps():
    measured = {"segments": 1000, "seconds": 60.0, "rss_after_load_mb": 500.0, "peak_rss_mb": 700.0}
    seconds, peak = scaling.project(measured, 5000)
    assert seconds == pytest.approx(300.0) and peak == pytest.approx(1500.0)
    assert scaling.skip_reason(seconds, peak, 1800, 8192) is None
    assert "min budget" in scaling.skip_reason(2400, peak, 1800, 8192)
    assert "GB limit" in scaling.skip_reason(seconds, 9000, 1800, 8192)


def test_row_from_run_ok_failed_and_stopped():
    ok = scaling.row_from_run(
        "bertscore", "short", 2000, {"seconds": 4.0, "rss_after_load_mb": 500.0, "distinct_texts": 4000}, 700.0, None, 0
    )
    assert ok["segments_per_s"] == 500.0 and ok["mb_per_1k_segments"] == pytest.approx(100.0)
    assert scaling.row_from_run("menli", "short", 10, None, 0.0, None, 1)["status"] == "failed (exit 1)"
    stopped = scaling.row_from_run("menli", "short", 10, None, 9000.0, 8192.0, -9)
    assert stopped["status"].startswith("stopped at the 8.0 GB")


def test_plot_and_results_files(tmp_path, monkeypatch):
    rows = [
        {
            "metric": "bertscore",
            "texts": "short",
            "segments": n,
            "seconds": n / 500,
            "peak_rss_mb": 600 + n / 10,
            "status": "ok",
        }
        for n in (1000, 2000)
    ]
    rows.append({"metric": "menli", "texts": "paragraph", "segments": 50000, "status": "capped: projected"})
    scaling.plot(rows, tmp_path / "s.png")
    assert (tmp_path / "s.png").read_bytes()[:4] == b"\x89PNG"
    monkeypatch.setattr("bench.harness.RESULTS", tmp_path)
    write_results("t", {}, rows, scaling.COLUMNS, "title", ["a note"])
    text = (tmp_path / "t.md").read_text()
    assert "- a note" in text and "capped: projected" in text
