"""bench/gpu_check.py: ready for a CUDA machine, proven here with --device cpu."""

from __future__ import annotations

import json

import pytest

from bench import gpu_check


@pytest.mark.slow
def test_the_gpu_check_passes_on_the_cpu_and_writes_its_results(tmp_path):
    assert gpu_check.main(["--device", "cpu", "--results", str(tmp_path)]) == 0
    result = json.loads((tmp_path / "gpu_cpu.json").read_text())
    assert result["passed"] and result["pytest_exit"] == 0
    checks = {row["check"] for row in result["rows"]}
    assert {"score bertscore", "score menli", "score sescore", "command line score --devices 1"} <= checks
    assert any(check.startswith("sescore fit") for check in checks) and any(c.startswith("nli fit") for c in checks)
    assert all(row["max_abs_difference"] <= row["tolerance"] for row in result["rows"] if "tolerance" in row)
    assert "GPU check (cpu)" in (tmp_path / "gpu_cpu.md").read_text()


def test_a_machine_without_a_needed_package_is_told_which(monkeypatch, tmp_path):
    monkeypatch.setattr(gpu_check, "REQUIRED", ("torch", "surely_not_installed_pkg"))
    with pytest.raises(SystemExit, match="surely_not_installed_pkg"):
        gpu_check.main(["--device", "cpu", "--results", str(tmp_path)])
    assert not list(tmp_path.iterdir())
