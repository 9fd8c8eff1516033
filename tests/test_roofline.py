"""The roofline benchmark's instruments: FLOPs counted on the batches the toolkit builds, token and padding counts,
the rate and utilization arithmetic, product timings and the parsing of oneDNN/MKL verbose output (tiny models)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from bench.bench_roofline import (
    TokenCounter,
    achieved_gflops,
    attention_flops,
    count_flops,
    cpu_flags,
    fidelity,
    gemm_peaks,
    parse_verbose,
    peak_by_precision,
    roofline,
)
from tests.test_precision import HYPS, REFS


def test_flops_and_tokens_of_a_tiny_bertscore_match_its_shapes_and_the_toolkits_batches(tiny):
    """Every linear FLOP is accounted for by the model's shapes times the padded positions the toolkit's bucketed
    batches hold (plus BERT's pooler on one vector per text); the token counter sees exactly those batches."""
    from nlgmetrics.baselines import BERTScorer
    from nlgmetrics.baselines.embedding import padded_batches
    from nlgmetrics.modelroles.batching import token_lengths

    scorer = BERTScorer(str(tiny["encoder"]))
    with TokenCounter(min_vocab=100) as tokens:
        scores, flops, by_op = count_flops(lambda: scorer.score(HYPS, REFS))
    loaded = scorer._model()
    texts = list(dict.fromkeys(HYPS + [r for refs in REFS for r in ([refs] if isinstance(refs, str) else refs)]))
    batches = padded_batches(loaded.tokenizer, texts, 64, 256)
    padded, real = sum(len(rows) * length for rows, length in batches), sum(token_lengths(loaded.tokenizer, texts, 256))
    assert (tokens.padded, tokens.real) == (padded, real) and padded > real
    config = loaded.model.config
    hidden, inner, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    per_token = layers * 2 * (4 * hidden * hidden + 2 * hidden * inner)  # q, k, v, out; feed-forward in and out
    assert by_op["addmm"] == per_token * padded + 2 * hidden * hidden * len(texts)  # + the pooler, once per text
    assert by_op["_scaled_dot_product_flash_attention_for_cpu"] > 0  # the CPU attention kernel is counted too
    assert flops == sum(by_op.values()) and len(scores) == len(HYPS)


def test_attention_flops_are_the_two_products_of_attention():
    query = torch.randn(2, 4, 16, 8)
    _, flops, by_op = count_flops(lambda: torch.nn.functional.scaled_dot_product_attention(query, query, query))
    assert flops == attention_flops((2, 4, 16, 8), (2, 4, 16, 8), (2, 4, 16, 8)) == 2 * (2 * 2 * 4 * 16 * 16 * 8)
    linear = torch.nn.Linear(16, 8)
    assert count_flops(lambda: linear(torch.randn(4, 16)))[1] == 2 * 4 * 16 * 8


def test_roofline_arithmetic():
    row = roofline(2e9, 0.5, 8.0, 120, 100)
    assert row == {"gflops": 4.0, "utilization": 0.5, "padded_per_real": 1.2, "flops_per_real_token": 2e7}
    unknown = roofline(1e9, 1.0, None, 0, 0)
    assert unknown["utilization"] is None and unknown["padded_per_real"] is None and unknown["gflops"] == 1.0
    assert achieved_gflops(3e9, 1.5) == 2.0
    with pytest.raises(ValueError, match="positive"):
        achieved_gflops(1.0, 0.0)
    same = fidelity([0.1, 0.5, 0.3], [0.1, 0.5, 0.3])
    assert same == {"kendall_vs_float32": 1.0, "max_abs_diff": 0.0, "mean_abs_diff": 0.0}
    moved = fidelity([0.1, 0.2, 0.3], [0.1, 0.3, 0.2])
    assert moved["kendall_vs_float32"] < 1.0 and moved["max_abs_diff"] == pytest.approx(0.1)


def test_peak_products_run_in_every_precision_and_the_best_shape_is_the_roof():
    rows = gemm_peaks(["float32", "int8", "int8-int_mm"], shapes=[(16, 32, 24), (8, 32, 32)], runs=1)
    assert [(r["precision"], r["shape"]) for r in rows][:2] == [("float32", "16x32x24"), ("float32", "8x32x32")]
    assert all(r["gflops"] > 0 and r["seconds"] > 0 for r in rows)
    peaks = peak_by_precision(rows)
    assert peaks["int8"] == max(r["gflops"] for r in rows if r["precision"] == "int8") and len(peaks) == 3


def test_verbose_output_tells_an_amx_machine_from_an_avx2_one():
    amx = "\n".join(
        [
            "onednn_verbose,v1,info,oneDNN v3.12.0 (commit 80afa71)",
            "onednn_verbose,v1,info,cpu,isa:Intel AVX-512 with float16, Intel DL Boost and bfloat16 support and "
            "Intel AMX with bfloat16 and 8-bit integer support",
            "onednn_verbose,v1,primitive,exec,cpu,matmul,brg_matmul:avx512_core_amx,undef,src:bf16::blocked:ab::f0,,,"
            "64x768:768x256,0.1",
            "onednn_verbose,v1,primitive,exec,cpu,reorder,jit:uni,undef,src:f32 dst:bf16,,,64x768,0.01",
            "MKL_VERBOSE oneMKL 2024.0 Update 2 Product build 20240605 for Intel(R) 64 architecture Intel(R) Advanced "
            "Vector Extensions 512 (Intel(R) AVX-512) with support of Intel(R) AMX, Lnx 2.10GHz lp64 gnu_thread",
            "MKL_VERBOSE SGEMM(T,N,256,64,768,0x1,0x2,768,0x3,768,0x4,0x5,256) 24.48ms CNR:OFF Dyn:1 FastMM:1 TID:0",
        ]
    )
    parsed = parse_verbose(amx)
    assert "Intel AMX" in parsed["onednn_isa"]
    assert parsed["onednn_kernels"] == {"matmul": ["brg_matmul:avx512_core_amx"], "reorder": ["jit:uni"]}
    assert "AVX-512" in parsed["mkl"] and parsed["mkl_calls"] == ["SGEMM"]
    assert parse_verbose("nothing from either library") == {
        "onednn_isa": None,
        "onednn_kernels": {},
        "mkl": None,
        "mkl_calls": [],
    }
    cpuinfo = "processor : 0\nflags\t\t: fpu sse avx2 fma avx512f avx512_bf16 amx_tile\nprocessor : 1\n"
    assert cpu_flags(cpuinfo) == ["avx2", "fma", "avx512f", "avx512_bf16", "amx_tile"]
    assert np.all([isinstance(flag, str) for flag in cpu_flags()])


def test_a_fast_path_is_offered_only_when_faithful_and_faster_and_the_target_follows_the_isa():
    from bench.bench_roofline import devmix_result, speed_target, verdict

    assert speed_target(["avx2", "avx512_bf16", "amx_bf16"]) == (3.0, "AMX")
    assert speed_target(["avx2", "avx512_bf16"])[0] == 1.8 and speed_target(["avx2"])[0] == 1.8
    line = (
        '{"metric": "bertscore", "label_a": "bertscore int8", "signature": "bertscore|encoder:packaged:mpnet@ab|'
        'precision:int8", "mean": {"difference": -0.01, "ci95": [-0.03, 0.01]}, "sets": [{"set": "ted", "rows": 26,'
        ' "items": 2, "tau_like_a": 0.1, "tau_like_b": 0.11}, {"set": "webnlg", "rows": 32, "items": 2, '
        '"tau_like_a": 0.2, "tau_like_b": 0.21}]}'
    )
    moved = devmix_result("progress chatter\n" + line)
    assert (moved["metric"], moved["precision"], moved["items_per_set"], moved["rows"]) == (
        "bertscore-mpnet",
        "int8",
        2,
        58,
    )
    assert moved["inside"] and moved["tau_like"]["ted"] == [0.1, 0.11]
    fast = {"kendall_vs_float32": 0.996, "ratio_to_float32": 0.5}
    assert verdict(fast, moved, 1.8)["offered"] == "yes" and verdict(fast, moved, 1.8)["contract"] == "pass"
    assert verdict(fast, moved, 3.0)["contract"] == "fail"  # offered, but short of an AMX machine's target
    assert verdict({**fast, "kendall_vs_float32": 0.7}, None, 1.8)["offered"] == "not offered (Kendall 0.700)"
    assert verdict({**fast, "ratio_to_float32": 4.0}, None, 1.8)["offered"] == "not offered (slower than float32)"
    outside = {**moved, "inside": False}
    assert verdict(fast, outside, 1.8)["offered"] == "not offered (dev-mix tau-like moved)"


def test_refold_judges_the_written_fast_paths_again_and_keeps_timings_and_machine(tmp_path, monkeypatch):
    import json

    import bench.bench_roofline as roofline
    from bench import harness

    monkeypatch.setattr(harness, "RESULTS", tmp_path)
    monkeypatch.setattr(roofline, "RESULTS", tmp_path)
    rows = [
        {"metric": "bertscore-mpnet", "precision": "float32", "ratio_to_float32": 1.0, "kendall_vs_float32": 1.0},
        {"metric": "bertscore-mpnet", "precision": "bfloat16", "ratio_to_float32": 0.5, "kendall_vs_float32": 0.996}
        | roofline.verdict({"ratio_to_float32": 0.5, "kendall_vs_float32": 0.996}, None, 3.0),
        {"metric": "bertscore-mpnet", "precision": "bert-score packaged:mpnet", "ratio_to_float32": 2.2},
    ]
    machine = {"processor": "the machine that timed it"}
    written = {"segments": 4, "seed": 1, "speed_target": 3.0, "devmix": [], "machine": machine}
    (tmp_path / "roofline_x.json").write_text(json.dumps(written | {"rows": rows, "notes": ["timed quietly"]}))
    moved = {
        "metric": "bertscore",
        "label_a": "bertscore bfloat16",
        "signature": "bertscore|encoder:packaged:mpnet@ab|precision:bfloat16",
        "mean": {"difference": -0.02, "ci95": [-0.04, -0.01]},
        "sets": [{"set": "ted", "rows": 26, "items": 2, "tau_like_a": 0.1, "tau_like_b": 0.12}],
    }
    saved = tmp_path / "devmix.json"
    saved.write_text(json.dumps(moved))
    assert rows[1]["offered"] == "yes"
    result = roofline.refold("roofline_x", [str(saved)])
    again = json.loads((tmp_path / "roofline_x.json").read_text())
    assert again["rows"][1]["offered"] == "not offered (dev-mix tau-like moved)"
    assert again["rows"][1]["devmix_ci95"] == "[-0.0400, -0.0100]" and again["rows"][1]["ratio_to_float32"] == 0.5
    assert "offered" not in again["rows"][0] and "offered" not in again["rows"][2]  # float32 and the peer
    assert again["machine"] == machine and again["notes"][0] == "timed quietly" and result["devmix"][0]["rows"] == 26
    assert (
        again["notes"][-1].startswith(roofline.REFOLD_NOTE) and "bertscore-mpnet bfloat16 on ted" in again["notes"][-1]
    )
    assert "not offered (dev-mix tau-like moved)" in (tmp_path / "roofline_x.md").read_text()
    roofline.refold("roofline_x", [str(saved)])  # folding twice keeps one note of it
    assert (
        sum(n.startswith(roofline.REFOLD_NOTE) for n in json.loads((tmp_path / "roofline_x.json").read_text())["notes"])
        == 1
    )
    stray = {**moved, "signature": "bertscore|encoder:packaged:me5@ab|precision:int8", "label_a": "bertscore int8"}
    saved.write_text(json.dumps(stray))
    with pytest.raises(SystemExit, match="no rows for"):
        roofline.refold("roofline_x", [str(saved)])
    with pytest.raises(SystemExit, match="no result to fold into"):
        roofline.refold("roofline_missing", [str(saved)])


def test_operator_kinds_and_profile_shares_add_up():
    import torch

    from bench.bench_roofline import operator_kind, profile_shares

    assert operator_kind("aten::addmm") == "matrix products"
    assert operator_kind("aten::_scaled_dot_product_flash_attention_for_cpu") == "attention outside products"
    assert operator_kind("aten::native_layer_norm") == "norms"
    assert operator_kind("aten::gelu") == "activations"
    assert operator_kind("aten::_to_copy") == "copies and layout"
    assert operator_kind("aten::something_new") == "other operators"
    a, b = torch.randn(256, 256), torch.randn(256, 256)
    shares = profile_shares(lambda: [torch.nn.functional.gelu(a @ b) for _ in range(5)])
    kinds = {row["kind"]: row for row in shares["kinds"]}
    assert kinds["matrix products"]["seconds"] > 0 and "outside operators (tokenization, Python)" in kinds
    assert sum(row["seconds"] for row in shares["kinds"]) >= shares["wall_seconds"] * 0.99
