"""The MKL mode benchmark's summary: best time per mode and metric, ratio to MKL's default, bit-level changes."""

from __future__ import annotations

import pytest

from bench.bench_mkl_mode import summarise


def _run(mode: str, menli_s: float, changed: int) -> dict:
    return {
        "mkl_cbwr": mode,
        "few_row_products_invariant": changed == 0,
        "filled_products_invariant": True,
        "load_s": 1.0,
        "score_s": menli_s + 1.0,
        "peak_rss_mb": 100.0,
        "metrics": {
            "menli": {"seconds": menli_s, "rows_changed_by_batch_size_1": changed, "max_abs_change": 1e-8 * changed},
            "bertscore": {"seconds": 1.0, "rows_changed_by_batch_size_1": 0, "max_abs_change": 0.0},
        },
    }


def test_summary_takes_each_metrics_best_time_and_the_ratio_to_the_default_mode():
    runs = {
        "mkl-strict": [_run("AUTO,STRICT", 4.0, 0), _run("AUTO,STRICT", 3.0, 0)],
        "mkl-default": [_run("OFF", 2.0, 5), _run("OFF", 6.0, 5)],
    }
    rows = {(r["mode"], r["metric"]): r for r in summarise(runs, 10)}
    assert rows["mkl-strict", "menli"]["seconds"] == 3.0
    assert rows["mkl-strict", "menli"]["time_ratio_to_default"] == pytest.approx(1.5)
    assert rows["mkl-default", "menli"]["rows_changed_by_batch_size_1"] == 5
    assert rows["mkl-strict", "bertscore"]["time_ratio_to_default"] == 1.0
    assert rows["mkl-strict", "menli"]["few_row_products_invariant"] is True
    assert rows["mkl-default", "menli"]["few_row_products_invariant"] is False
    assert rows["mkl-default", "menli"]["filled_products_invariant"] is True


def test_filling_the_rows_makes_few_row_products_invariant_in_this_process():
    """The toolkit's own mode (strict, set on import) with filled rows: invariant on every CPU this has met."""
    from bench.bench_mkl_mode import few_row_products_invariant

    assert few_row_products_invariant(filled=True)


def test_the_kernel_key_reads_this_cpu(monkeypatch, tmp_path):
    """The key that decides bit-identity reads vendor and vector flags from cpuinfo, widest first, nothing else."""
    from bench import harness
    from nlgmetrics import machine

    info = tmp_path / "cpuinfo"
    info.write_text("vendor_id\t: GenuineIntel\nflags\t\t: fpu sse2 avx2 fma avx512f amx_bf16 amx_tile\n")
    real = machine.Path
    monkeypatch.setattr(machine, "Path", lambda p: info if p == "/proc/cpuinfo" else real(p))
    key = harness.kernel_key()
    assert key["vendor"] == "GenuineIntel"
    assert key["flags"] == ["amx_bf16", "amx_tile", "avx512f", "avx2", "fma"]
    info.write_text("vendor_id\t: AuthenticAMD\nflags\t\t: fpu avx2 fma\n")
    assert harness.kernel_key()["flags"] == ["avx2", "fma"]


def test_a_failed_mode_is_a_row_and_a_failed_default_stops():
    rows = summarise({"mkl-strict": [], "mkl-default": [_run("OFF", 2.0, 0)]}, 10)
    assert {"mode": "mkl-strict", "status": "failed"} in rows
    with pytest.raises(SystemExit, match="MKL default"):
        summarise({"mkl-strict": [_run("AUTO,STRICT", 1.0, 0)], "mkl-default": []}, 10)
