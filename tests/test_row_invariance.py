"""Bit-identity across batch sizes, which the toolkit itself relies on: a few-row product rounds each row as it
does among 8 rows once the rows are filled (``filled_rows``), and the kernel key that decides bit-identity reads this
CPU. (The MKL mode benchmark that first checked these, ``bench/bench_mkl_mode.py``, was removed after its run; in git
history at commit 6c42b7a; its result is ``bench/results/mkl_mode.{json,md}``.)"""

from __future__ import annotations


def few_row_products_invariant(filled: bool = False) -> bool:
    """Does a 768x768 linear layer on 1..8 rows give each row exactly the bits it gets among 8 rows? ``filled``:
    with the rows filled up to 8 by ``filled_rows``, as the toolkit's NLI and SEScore heads are."""
    import numpy as np
    import torch

    from nlgmetrics.modelroles.batching import filled_rows

    generator = torch.Generator().manual_seed(0)
    rows, weight = torch.randn(8, 768, generator=generator), torch.randn(768, 768, generator=generator)
    full = torch.nn.functional.linear(rows, weight)
    picks = [filled_rows(np.arange(m)) if filled else np.arange(m) for m in range(1, 9)]
    return all(
        torch.equal(torch.nn.functional.linear(rows[torch.as_tensor(p)], weight)[:m], full[:m])
        for m, p in zip(range(1, 9), picks)
    )


def test_filling_the_rows_makes_few_row_products_invariant_in_this_process():
    """The toolkit's own mode (strict, set on import) with filled rows: invariant on every CPU this has met."""
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
