"""``--devices N``: scoring in N processes gives exactly the scores of one process (issue 15, item 4)."""
from __future__ import annotations

import json

import pytest

from nlgmetrics.cli import evaluate
from nlgmetrics.parallel import shard_bounds

HYPS = ["the cat runs home .", "a dog sees the old house", "rain falls", "she reads a long story today .",
        "the man walks", "two birds sing in the tree .", "it is cold", "a cat"]
REFS = ["the cat runs .", "a dog sees the big house", "the rain is falling", "she reads a story .",
        "a man walks", "birds sing in a tree .", "it is very cold today", "the cat sleeps"]


@pytest.mark.parametrize("n,parts,expected", [(0, 2, []), (1, 2, [(0, 1)]), (5, 2, [(0, 3), (3, 5)]),
                                              (6, 3, [(0, 2), (2, 4), (4, 6)]), (7, 1, [(0, 7)])])
def test_shards_are_contiguous_and_never_empty(n, parts, expected):
    assert shard_bounds(n, parts) == expected


def _scores(capsys, tmp_path, tiny, devices: int, metric: str, extra: list[str]) -> tuple[list[float], dict]:
    hyps, refs, out = tmp_path / "h.txt", tmp_path / "r.txt", tmp_path / f"out{devices}.jsonl"
    hyps.write_text("\n".join(HYPS) + "\n")
    refs.write_text("\n".join(REFS) + "\n")
    code = evaluate.main(["score", "--metric", metric, "--hyps", str(hyps), "--refs", str(refs), "--out", str(out),
                          "--devices", str(devices), "--device", "cpu", "--batch-size", "3", "--quiet", *extra]
                         + (["--mars-cache", str(tmp_path / f"cache{devices}")] if metric == "mars" else []))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return [json.loads(line)["score"] for line in out.read_text().splitlines()], json.loads(captured.out.splitlines()[-1])


@pytest.mark.parametrize("metric", ["menli+bertscore", "sescore", "mars"])
def test_two_cpu_processes_score_exactly_like_one(capsys, tmp_path, tiny, metric):
    """menli+bertscore: a set-normalised combination, each part sharded; sescore: the regressor end to end;
    mars: augmentation by a causal LM in each process (a fresh cache folder per run)."""
    extra = ["--nli-model", str(tiny["nli"]), "--encoder", str(tiny["encoder"]), "--granularity", "text"]
    if metric == "sescore":
        from sescore.regressor.checkpoint import export_checkpoint
        from sescore.regressor.module import SEScoreModule
        import torch

        torch.manual_seed(0)
        module = SEScoreModule(encoder=str(tiny["encoder"]), hidden_sizes=[16], alignment=True)
        with torch.no_grad():
            module.regressor.head[-1].weight.normal_(0.0, 0.5)
        extra = ["--checkpoint", str(export_checkpoint(module.regressor.eval(), tmp_path / "ckpt"))]
    if metric == "mars":  # causal-LM cloze augmentation: seeded per reference, so shards must not change it
        import yaml

        config = {"models": {"causal_lm": str(tiny["llama"]), "encoder": str(tiny["encoder"]),
                             "masked_lm": str(tiny["bert_mlm"]), "spacy": "packaged:en_core_web_sm"},
                  "masking": {"ratios": [0.0, 0.4]}, "cloze": {"lockstep_references": 2},
                  "cache_dir": str(tmp_path / "mars_cache"), "device": "cpu"}
        (tmp_path / "mars.yaml").write_text(yaml.safe_dump(config))
        extra = ["--mars-config", str(tmp_path / "mars.yaml")]
    one, one_result = _scores(capsys, tmp_path, tiny, 1, metric, extra)
    two, two_result = _scores(capsys, tmp_path, tiny, 2, metric, extra)
    assert len(set(one)) > 2  # scores that vary, so equality means something
    assert two == one  # bit for bit, not approximately
    assert two_result["signature"] == one_result["signature"]
    assert two_result["system_score"] == one_result["system_score"]


def test_correlate_with_two_processes_equals_one(capsys, tmp_path, tiny):
    rows = [{"lp": "de-en", "item_id": i // 2, "system": f"sys{i % 2}", "hyp": h, "refs": [r],
             "scores": {"human": float(i % 3)}} for i, (h, r) in enumerate(zip(HYPS, REFS))]
    data = tmp_path / "judged.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    results = []
    for devices in (1, 2):
        code = evaluate.main(["correlate", "--metric", "bertscore", "--encoder", str(tiny["encoder"]), "--data",
                              str(data), "--devices", str(devices), "--quiet"])
        assert code == 0
        results.append(json.loads(capsys.readouterr().out.splitlines()[-1]))
    assert results[0]["pearson"] == results[1]["pearson"] and results[0]["tau_like"] == results[1]["tau_like"]


def test_importing_the_toolkit_makes_few_row_products_independent_of_row_count():
    """The premise of bit-identical ``--devices`` shards: a head on 1 to 8 pooled vectors rounds each row the same
    way (MKL's default path did not for 1 to 3 rows of a 768x768 layer; ``nlgmetrics`` sets MKL_CBWR on import)."""
    import os

    import torch

    assert os.environ.get("MKL_CBWR") == "AUTO,STRICT"
    generator = torch.Generator().manual_seed(0)
    rows, weight = torch.randn(8, 768, generator=generator), torch.randn(768, 768, generator=generator)
    full = torch.nn.functional.linear(rows, weight)
    assert all(torch.equal(torch.nn.functional.linear(rows[:m], weight), full[:m]) for m in range(1, 9))


def test_a_users_own_mkl_mode_is_kept():
    import os
    import subprocess
    import sys

    code = "import os, nlgmetrics; print(os.environ['MKL_CBWR'])"
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "MKL_CBWR": "COMPATIBLE"},
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "COMPATIBLE"


def test_more_cuda_processes_than_gpus_is_a_clear_error(capsys, tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    from nlgmetrics.parallel import process_devices

    with pytest.raises(ValueError, match="--devices 2 asks for 2 GPUs but 1 are visible"):
        process_devices("cuda", 2)
    assert process_devices("cpu", 2) == ["cpu", "cpu"]


class _PidScorer:
    """A toy scorer whose signature says whether the test's own process built it."""

    def __init__(self) -> None:
        import os

        self.where = "parent" if str(os.getpid()) == os.environ.get("TOY_PARENT_PID") else "worker"

    def score(self, hyps, refs, srcs=None):
        return [float(len(h)) for h in hyps]

    def signature(self) -> str:
        return f"toy|built-in:{self.where}"


def _build_pid_scorer(index: int, device):
    return _PidScorer()


def test_signature_before_scoring_builds_no_model_in_the_parent(monkeypatch):
    """Score caches ask for the signature before scoring; with --devices the parent must not load a model copy
    for that (on a GPU machine it would sit in host memory beside the N workers for the whole run)."""
    import os

    from nlgmetrics.parallel import ProcessScorer

    monkeypatch.setenv("TOY_PARENT_PID", str(os.getpid()))  # spawned processes inherit it
    assert _PidScorer().signature() == "toy|built-in:parent"
    scorer = ProcessScorer(_build_pid_scorer, processes=2, device="cpu", name="toy")
    assert scorer.signature() == "toy|built-in:worker"
    assert scorer.score(["a", "bb", "ccc"], [["x"]] * 3) == [1.0, 2.0, 3.0]
    assert scorer.signature() == "toy|built-in:worker"
