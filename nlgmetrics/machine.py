"""What a measurement depends on besides the code: the processor, its vector extensions and torch's threads.

Result files (benchmarks, ``nlgmetrics-evaluate nli-accuracy --json``) record :func:`machine` beside their numbers;
the regression test keys bit-identity on :func:`kernel_key`.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields of Linux ``/proc/cpuinfo`` (empty elsewhere)."""
    fields: dict[str, str] = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if not line.strip():
                break
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def cpu_model() -> str:
    """The processor's model name (Linux ``/proc/cpuinfo``), else the architecture: timings and, with MKL, the last
    bits of results differ by CPU (bench/results/mkl_mode.md: an AMD EPYC rounds few-row products unlike the earlier
    CPU)."""
    return _cpuinfo().get("model name") or platform.processor() or platform.machine()


# The vector extensions that decide which matrix kernels MKL and oneDNN dispatch to, widest first. Two CPUs with the
# same model name can differ here (an AMD EPYC with AVX2 only, another with AVX-512 and AVX512-BF16), and the last
# bits of a float32 product differ with them.
KERNEL_FLAGS = ("amx_bf16", "amx_tile", "avx512_bf16", "avx512_vnni", "avx512f", "avx2", "fma")


def kernel_key() -> dict:
    """What decides the CPU kernels a score runs through: torch's version and dispatch capability, the CPU vendor
    (MKL dispatches on it) and which of :data:`KERNEL_FLAGS` the CPU reports.

    Why: results are bit-identical only between machines whose kernels are the same; the model name alone
    ("AMD EPYC") covers CPUs that take different paths.
    """
    import torch

    info = _cpuinfo()
    flags = set(info.get("flags", "").split())
    return {
        "torch": torch.__version__,
        "capability": torch.backends.cpu.get_cpu_capability(),
        "vendor": info.get("vendor_id") or platform.machine(),
        "flags": [flag for flag in KERNEL_FLAGS if flag in flags],
    }


def machine() -> dict:
    """Python, torch, torch threads, cores and processor: what every result file records beside its numbers."""
    import torch

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "cpus": os.cpu_count(),
        "processor": cpu_model(),
        "kernels": kernel_key(),
    }
