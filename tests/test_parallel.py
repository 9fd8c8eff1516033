"""``--devices N``: scoring in N processes gives exactly the scores of one process (issue 15, item 4)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nlgmetrics.cli import evaluate
from nlgmetrics.parallel import shard_bounds

HYPS = [
    "the cat runs home .",
    "a dog sees the old house",
    "rain falls",
    "she reads a long story today .",
    "the man walks",
    "two birds sing in the tree .",
    "it is cold",
    "a cat",
]
REFS = [
    "the cat runs .",
    "a dog sees the big house",
    "the rain is falling",
    "she reads a story .",
    "a man walks",
    "birds sing in a tree .",
    "it is very cold today",
    "the cat sleeps",
]


@pytest.mark.parametrize(
    "n,parts,expected",
    [(0, 2, []), (1, 2, [(0, 1)]), (5, 2, [(0, 3), (3, 5)]), (6, 3, [(0, 2), (2, 4), (4, 6)]), (7, 1, [(0, 7)])],
)
def test_shards_are_contiguous_and_never_empty(n, parts, expected):
    assert shard_bounds(n, parts) == expected


def _scores(capsys, tmp_path, tiny, devices: int, metric: str, extra: list[str]) -> tuple[list[float], dict]:
    hyps, refs, out = tmp_path / "h.txt", tmp_path / "r.txt", tmp_path / f"out{devices}.jsonl"
    hyps.write_text("\n".join(HYPS) + "\n")
    refs.write_text("\n".join(REFS) + "\n")
    # MARS takes its device and batch sizes from its config (a flag for an option a metric lacks is an error)
    run_flags = (
        ["--mars-cache", str(tmp_path / f"cache{devices}")]
        if metric == "mars"
        else ["--device", "cpu", "--batch-size", "3"]
    )
    code = evaluate.main(
        [
            "score",
            "--metric",
            metric,
            "--hyps",
            str(hyps),
            "--refs",
            str(refs),
            "--scores",
            str(out),
            "--devices",
            str(devices),
            "--quiet",
            *extra,
            *run_flags,
        ]
    )
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return [json.loads(line)["score"] for line in out.read_text().splitlines()], json.loads(
        captured.out.splitlines()[-1]
    )


@pytest.mark.parametrize("metric", ["menli+bertscore", "sescore", "mars"])
def test_two_cpu_processes_score_exactly_like_one(capsys, tmp_path, tiny, metric):
    """menli+bertscore: a set-normalised combination, each part sharded; sescore: the regressor end to end;
    mars: augmentation by a causal LM in each process (a fresh cache folder per run)."""
    # 'set' named outright: 'auto' would resolve to it for tiny models only after asking each part's signature in a
    # process of its own (two more spawns; that path is test_signature_before_scoring_builds_no_model_in_the_parent)
    extra = (
        [
            "--nli-model",
            str(tiny["nli"]),
            "--encoder",
            str(tiny["encoder"]),
            "--granularity",
            "text",
            "--normalization",
            "set",
        ]
        if metric == "menli+bertscore"
        else []
    )
    if metric == "sescore":
        import torch

        from sescore.regressor.checkpoint import export_checkpoint
        from sescore.regressor.module import SEScoreModule

        torch.manual_seed(0)
        module = SEScoreModule(encoder=str(tiny["encoder"]), hidden_sizes=[16], alignment=True)
        with torch.no_grad():
            module.regressor.head[-1].weight.normal_(0.0, 0.5)
        extra = ["--checkpoint", str(export_checkpoint(module.regressor.eval(), tmp_path / "ckpt"))]
    if metric == "mars":  # causal-LM cloze augmentation: seeded per reference, so shards must not change it
        import yaml

        config = {
            "models": {
                "causal_lm": str(tiny["llama"]),
                "encoder": str(tiny["encoder"]),
                "masked_lm": str(tiny["bert_mlm"]),
                "spacy": "packaged:en_core_web_sm",
            },
            "masking": {"ratios": [0.0, 0.4]},
            "cloze": {"lockstep_references": 2},
            "cache_dir": str(tmp_path / "mars_cache"),
            "device": "cpu",
        }
        (tmp_path / "mars.yaml").write_text(yaml.safe_dump(config))
        extra = ["--mars-config", str(tmp_path / "mars.yaml")]
    one, one_result = _scores(capsys, tmp_path, tiny, 1, metric, extra)
    two, two_result = _scores(capsys, tmp_path, tiny, 2, metric, extra)
    assert len(set(one)) > 2  # scores that vary, so equality means something
    assert two == one  # bit for bit, not approximately
    assert two_result["signature"] == one_result["signature"]
    assert two_result["system_score"] == one_result["system_score"]


def test_correlate_with_two_processes_equals_one(capsys, tmp_path, tiny):
    rows = [
        {
            "lp": "de-en",
            "item_id": i // 2,
            "system": f"sys{i % 2}",
            "hyp": h,
            "refs": [r],
            "scores": {"human": float(i % 3)},
        }
        for i, (h, r) in enumerate(zip(HYPS, REFS))
    ]
    data = tmp_path / "judged.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    results = []
    for devices in (1, 2):
        code = evaluate.main(
            [
                "correlate",
                "--metric",
                "bertscore",
                "--encoder",
                str(tiny["encoder"]),
                "--data",
                str(data),
                "--devices",
                str(devices),
                "--quiet",
            ]
        )
        assert code == 0
        results.append(json.loads(capsys.readouterr().out.splitlines()[-1]))
    assert results[0]["pearson"] == results[1]["pearson"] and results[0]["tau_like"] == results[1]["tau_like"]


def test_a_head_on_few_vectors_rounds_like_many_rows_once_its_batch_is_filled():
    """The premise of bit-identical ``--devices`` shards: a head on 1 to 16 pooled vectors, its batch filled by
    ``filled_rows``, gives each row exactly as among 64 rows. Unfilled it does not on every CPU: on an AMD EPYC
    (MKL 2024.2, strict mode set) rows 1-3 of a 768x768 layer and most row counts not divisible by 4 of a
    one-output head came out different in the last bits; on the machine of earlier sessions, strict mode was enough."""
    import os

    import torch

    from nlgmetrics.modelroles.batching import filled_rows

    assert os.environ.get("MKL_CBWR") == "AUTO,STRICT"  # set by importing the toolkit, unless the user set it
    generator = torch.Generator().manual_seed(0)
    for out_features, in_features in ((768, 768), (3, 768), (1, 384)):  # NLI dense + classifier, SEScore's last
        rows = torch.randn(64, in_features, generator=generator)
        weight = torch.randn(out_features, in_features, generator=generator)
        full = torch.nn.functional.linear(rows, weight)
        for start in (0, 5):
            for m in range(1, 17):
                picked = filled_rows(np.arange(start, start + m))
                assert len(picked) % 8 == 0 and list(picked[:m]) == list(range(start, start + m))
                head = torch.nn.functional.linear(rows[torch.as_tensor(picked)], weight)[:m]
                assert torch.equal(head, full[start : start + m]), (out_features, in_features, start, m)


def test_hooked_heads_fill_their_rows_and_return_only_the_real_ones():
    """``fill_vector_rows`` (the NLI classifier's way: hooks, so no extra text goes through the encoder): a
    pooler-and-classifier head on 1 to 16 vectors gives exactly the rows it gives among 64, with the shape asked
    for; token-level (3-D) inputs pass untouched; a second call adds no second hook."""
    import torch

    from nlgmetrics.modelroles.batching import fill_vector_rows

    torch.manual_seed(0)
    head = torch.nn.Sequential(torch.nn.Linear(768, 768), torch.nn.Tanh(), torch.nn.Linear(768, 3))
    rows = torch.randn(64, 768)
    with torch.inference_mode():
        plain = [head(rows[:m]) for m in range(1, 17)]
        fill_vector_rows(head)
        fill_vector_rows(head)
        assert all(len(layer._forward_pre_hooks) == 1 for layer in (head[0], head[2]))
        full = head(rows)
        for m in range(1, 17):
            out = head(rows[5 : 5 + m])
            assert out.shape == (m, 3) and torch.equal(out, full[5 : 5 + m]), m
        tokens = torch.randn(3, 5, 768)  # [batch, tokens, hidden]: left alone
        assert torch.equal(
            head(tokens),
            torch.nn.functional.linear(
                torch.tanh(torch.nn.functional.linear(tokens, head[0].weight, head[0].bias)),
                head[2].weight,
                head[2].bias,
            ),
        )
    assert all(torch.allclose(p, full[:m], atol=1e-5) for m, p in zip(range(1, 17), plain))  # the same values


def test_nli_probabilities_do_not_depend_on_the_batch(tiny):
    """Each pair scored alone, in batches of 5 and all together: the same probabilities, bit for bit (before the
    head's rows were filled, one pair of these differed alone on the AMD machine)."""
    from nlgmetrics.nli import load_nli, predict_proba

    nli = load_nli(str(tiny["nli"]))
    premises = [
        f"The {w} sat on the mat at {n} o'clock today."
        for w in ("cat", "dog", "man", "bird")
        for n in ("one", "two", "nine")
    ] + ["Profits rose sharply.", "It rains.", "They won the game."]
    hypotheses = [p.replace("sat", "slept").replace("rose", "fell") for p in premises]
    together = predict_proba(nli, premises, hypotheses, batch_size=64)
    in_fives = predict_proba(nli, premises, hypotheses, batch_size=5)
    alone = np.stack([predict_proba(nli, [p], [h])[0] for p, h in zip(premises, hypotheses)])
    assert len({tuple(r) for r in together.round(6)}) > 3  # probabilities that vary, so equality means something
    assert np.array_equal(together, in_fives) and np.array_equal(together, alone)


def test_a_users_own_mkl_mode_is_kept():
    import os
    import subprocess
    import sys

    code = "import os, nlgmetrics; print(os.environ['MKL_CBWR'])"
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "MKL_CBWR": "COMPATIBLE"},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
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
