"""How close CPU scoring runs to the machine's limit, per metric and forward-pass precision, with measured fidelity.

Why: ~85% of a neural metric's CPU time is matrix products, so the question "can it go faster" has a number for an
answer: the FLOPs a metric's forward passes need (counted by ``torch.utils.flop_counter.FlopCounterMode`` on the
batches the toolkit really builds) over its scoring time, against the best matrix-product rate this torch build
reaches on this machine in that precision. The same run times every fast path (bfloat16, int8) against float32 and
against the ``bert-score`` package (the peer), and compares its scores with float32's on the same rows. Machines
differ (an AMD EPYC with or without AVX-512 BF16, an Intel Xeon with AMX), so the run also records which
instruction set each kernel used: the CPU's flags, torch's CPU capability, and what oneDNN and MKL print when asked.

Sections: instruction sets; peak matrix-product rates; FLOPs and tokens; roofline arithmetic; metrics; where the
time goes (``--profile``); main.

    python -m bench.bench_roofline [--segments 48] [--repeats 2] [--metrics menli,sescore,...] [--devmix OUT ...]
    python -m bench.bench_roofline --profile bfloat16 --metrics menli,sescore   # share of time per operator kind

Rows: a seeded sample of TED zh-en MQM segments (``--segments``, ``--seed``). Each (metric, precision) scorer is
timed ``--repeats`` times in turns with the others and the peer (best wall time counts; threads = torch's, the
same as scoring; an arm over twice float32's time runs once). FLOPs come from one extra float32 pass per metric;
an int8 or bfloat16 pass does the same products in another number format, so it is credited with the same FLOPs.
Before measuring, the run waits (up to ``--wait-minutes``) for the one-minute load average to fall below
``--quiet-load``, and records the load at the start and end of each part. ``--devmix`` folds in saved dev-mix
comparisons (``devmix --precision P --versus-precision float32 --half select --limit-items N``), run apart because
each takes minutes per arm; ``--refold --devmix OUT ...`` folds them into a result written earlier without timing
anything again (its rows, notes and machine stay; a note says what was folded in).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from bench.harness import RESULTS, TED_MQM_FILE, LoadSpan, load_average, metric, read_data, write_results

# --- instruction sets ---------------------------------------------------------------------------------------------

# The CPU flags that decide which kernels a product can use: AVX2/FMA (float32 everywhere), AVX-512 and its VNNI
# (int8 dot products), AVX-512 BF16 (native bfloat16 products, AMD Zen 4 and Intel Cooper Lake on), AMX (Intel
# Sapphire Rapids on: tile products in bfloat16 and int8).
RELEVANT_FLAGS = (
    "avx2",
    "fma",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx512_bf16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
)

# One small product per kernel family, each run in its own process under oneDNN/MKL verbose mode: a shared stdout
# buffer would interleave the libraries' lines with ours, so one process per probe keeps each line's source known.
ISA_PROBES = {
    "float32 linear": "F.linear(x, w)",
    "bfloat16 linear": "F.linear(x.bfloat16(), w.bfloat16())",
    "bfloat16 autocast linear": "torch.autocast('cpu', dtype=torch.bfloat16).__enter__(); F.linear(x, w)",
    "float32 conv2d (makes oneDNN print its ISA)": "F.conv2d(torch.randn(2, 16, 16, 16), torch.randn(16, 16, 3, 3))",
}
_PROBE = """
import torch
import torch.nn.functional as F
x, w = torch.randn(64, 768), torch.randn(256, 768)
with torch.backends.mkldnn.verbose(torch.backends.mkldnn.VERBOSE_ON):
    {call}
"""


def cpu_flags(text: str | None = None) -> list[str]:
    """The ``RELEVANT_FLAGS`` the processor reports (Linux ``/proc/cpuinfo``; ``text`` stands in for it in tests)."""
    if text is None:
        try:
            text = Path("/proc/cpuinfo").read_text()
        except OSError:
            return []
    flags: set[str] = set()
    for line in text.splitlines():
        if line.startswith("flags"):
            flags |= set(line.split(":", 1)[1].split())
    return [flag for flag in RELEVANT_FLAGS if flag in flags]


def parse_verbose(output: str) -> dict[str, Any]:
    """What oneDNN and MKL said they ran: oneDNN's detected ISA, each executed primitive's implementation (e.g.
    ``brg_matmul:avx512_core_amx``, ``jit:avx2``) and MKL's first verbose line (its build and code path).

    Args:
        output: a process's stdout and stderr under ``ONEDNN_VERBOSE=1`` and ``MKL_VERBOSE=1``.

    Returns:
        ``onednn_isa`` (None when oneDNN never ran), ``onednn_kernels`` (primitive kind: implementations) and
        ``mkl`` (None when MKL never ran), ``mkl_calls`` (the MKL routines called, e.g. SGEMM).
    """
    isa, kernels, mkl, calls = None, {}, None, []
    for line in output.splitlines():
        fields = line.strip().split(",")
        if line.startswith("onednn_verbose") and "isa:" in line:
            isa = line.split("isa:", 1)[1].strip()
        elif line.startswith("onednn_verbose") and len(fields) > 6 and fields[2:4] == ["primitive", "exec"]:
            kernels.setdefault(fields[5], [])
            if fields[6] not in kernels[fields[5]]:
                kernels[fields[5]].append(fields[6])
        elif line.startswith("MKL_VERBOSE"):
            body = line[len("MKL_VERBOSE") :].strip()
            if mkl is None and not re.match(r"^[A-Z_]+\(", body):
                mkl = body
            elif re.match(r"^[A-Z_]+\(", body):
                calls.append(body.split("(", 1)[0])
    return {"onednn_isa": isa, "onednn_kernels": kernels, "mkl": mkl, "mkl_calls": sorted(set(calls))}


def isa_report() -> dict[str, Any]:
    """The processor's relevant flags, torch's CPU capability and, per probe, what oneDNN and MKL ran.

    Returns:
        ``flags``, ``torch_cpu_capability``, ``mkldnn_bf16_supported`` and ``probes`` (probe name: parsed verbose).
        A probe whose product ran in neither library (e.g. bfloat16 on an AVX2-only CPU, where torch's own
        fallback kernel runs) shows no oneDNN kernels and no MKL call.
    """
    import torch

    env = {**os.environ, "ONEDNN_VERBOSE": "1", "DNNL_VERBOSE": "1", "MKL_VERBOSE": "1"}
    probes = {}
    for name, call in ISA_PROBES.items():
        done = subprocess.run(
            [sys.executable, "-W", "ignore", "-c", _PROBE.format(call=call)],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        probes[name] = parse_verbose(done.stdout + done.stderr)
    return {
        "flags": cpu_flags(),
        "torch_cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "mkldnn_bf16_supported": bool(torch.ops.mkldnn._is_mkldnn_bf16_supported()),
        "probes": probes,
    }


# --- peak matrix-product rates ------------------------------------------------------------------------------------

# (rows, in, out) of an MPNet/BERT-base block's products on a 512-token batch: feed-forward in, out, attention.
PEAK_SHAPES = ((512, 768, 3072), (512, 3072, 768), (512, 768, 768))


def product(precision: str, rows: int, inner: int, cols: int, seed: int = 0) -> Callable[[], Any]:
    """A linear layer's product in ``precision`` as a model runs it: float32 and bfloat16 ``F.linear``; int8 a
    dynamically quantized ``nn.Linear`` (fbgemm: the activation is quantized in the call, as in scoring);
    ``int8-int_mm`` torch's raw int8 product ``torch._int_mm``."""
    import torch
    import torch.nn.functional as F

    generator = torch.Generator().manual_seed(seed)
    x, w = torch.randn(rows, inner, generator=generator), torch.randn(cols, inner, generator=generator)
    if precision == "float32":
        return lambda: F.linear(x, w)
    if precision == "bfloat16":
        xb, wb = x.bfloat16(), w.bfloat16()
        return lambda: F.linear(xb, wb)
    if precision == "int8":
        from nlgmetrics.modelroles.precision import int8_copy

        layer = torch.nn.Linear(inner, cols, bias=False)
        with torch.no_grad():
            layer.weight.copy_(w)
        quantized = int8_copy(torch.nn.ModuleList([layer]))[0]
        return lambda: quantized(x)
    if precision == "int8-int_mm":
        xi = torch.randint(-128, 128, (rows, inner), dtype=torch.int8, generator=generator)
        wi = torch.randint(-128, 128, (inner, cols), dtype=torch.int8, generator=generator)
        return lambda: torch._int_mm(xi, wi)
    raise ValueError(f"unknown product precision '{precision}'")


def best_seconds(fn: Callable[[], Any], runs: int = 5, inner: int = 3, budget_s: float = 20.0) -> float:
    """The fastest mean wall time of ``inner`` calls over ``runs`` rounds, after one warm-up call; stops early once
    ``budget_s`` is spent (a slow emulated kernel must not eat the run)."""
    import torch

    with torch.inference_mode():
        fn()
        best, started = float("inf"), time.perf_counter()
        for _ in range(runs):
            t = time.perf_counter()
            for _ in range(inner):
                fn()
            best = min(best, (time.perf_counter() - t) / inner)
            if time.perf_counter() - started > budget_s:
                break
    return best


def gemm_peaks(
    precisions: Sequence[str], shapes: Sequence[tuple[int, int, int]] = PEAK_SHAPES, runs: int = 5
) -> list[dict]:
    """GFLOP/s of every (precision, shape) product, best of ``runs`` rounds, on torch's threads.

    Returns:
        One row per product: ``precision``, ``shape`` ("512x768x3072"), ``seconds``, ``gflops``.
    """
    rows = []
    for precision in precisions:
        for m, k, n in shapes:
            seconds = best_seconds(product(precision, m, k, n), runs)
            rows.append(
                {
                    "precision": precision,
                    "shape": f"{m}x{k}x{n}",
                    "seconds": seconds,
                    "gflops": achieved_gflops(2.0 * m * k * n, seconds),
                }
            )
    return rows


def peak_by_precision(peaks: Sequence[dict]) -> dict[str, float]:
    """The best GFLOP/s of each precision over its shapes: the roof each metric row is measured against."""
    out: dict[str, float] = {}
    for row in peaks:
        out[row["precision"]] = max(out.get(row["precision"], 0.0), row["gflops"])
    return out


# --- FLOPs and tokens ---------------------------------------------------------------------------------------------


def count_flops(fn: Callable[[], Any]) -> tuple[Any, int, dict[str, int]]:
    """``fn()``'s result, the FLOPs of every matrix product and attention kernel it ran, and FLOPs per operator.

    FlopCounterMode counts at torch's dispatcher, so what is counted is what ran: the padded batches the toolkit
    built, the models' real shapes. Quantized int8 products are not counted (run it in float32).
    """
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    cpu_attention = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu  # not in torch's own flop table
    counter = FlopCounterMode(display=False, custom_mapping={cpu_attention: attention_flops})
    with counter:
        out = fn()
    by_op = {
        str(op).split(".")[-1] if "." in str(op) else str(op): int(n)
        for op, n in counter.get_flop_counts().get("Global", {}).items()
    }
    return out, int(counter.get_total_flops()), by_op


def attention_flops(
    query: Sequence[int], key: Sequence[int], value: Sequence[int], *args: Any, out_shape: Any = None, **kwargs: Any
) -> int:
    """FLOPs of scaled dot-product attention from its input shapes [batch, heads, length, dim]: the scores Q K^T
    and the weighted sum of V, two products of 2 * batch * heads * query length * key length * dim each."""
    batch, heads, q_len, dim = query
    k_len, v_dim = key[-2], value[-1]
    return 2 * batch * heads * q_len * k_len * dim + 2 * batch * heads * q_len * k_len * v_dim


class TokenCounter:
    """Counts the token positions every model call inside saw: all of them (padding included) and the real ones.

    A global forward pre-hook on ``nn.Embedding`` sees each batch's input ids: a vocabulary table (more than
    ``min_vocab`` rows) with a padding index counts its ids, and those not equal to that index as real. Position and
    relative attention tables are smaller and are skipped. A model whose vocabulary table names no padding index is
    not counted (``padded`` stays 0 for it).
    """

    def __init__(self, min_vocab: int = 1000) -> None:
        self.padded = 0
        self.real = 0
        self.min_vocab = min_vocab
        self._handle: Any = None

    def _hook(self, module: Any, args: tuple) -> None:
        import torch

        ids = args[0] if args else None
        if (
            not isinstance(module, torch.nn.Embedding)
            or module.num_embeddings <= self.min_vocab
            or module.padding_idx is None
            or ids is None
            or ids.dtype not in (torch.int64, torch.int32)
        ):
            return
        self.padded += int(ids.numel())
        self.real += int((ids != module.padding_idx).sum())

    def __enter__(self) -> "TokenCounter":
        from torch.nn.modules.module import register_module_forward_pre_hook

        self._handle = register_module_forward_pre_hook(self._hook)
        return self

    def __exit__(self, *exc: Any) -> None:
        self._handle.remove()


# --- roofline arithmetic ------------------------------------------------------------------------------------------


def achieved_gflops(flops: float, seconds: float) -> float:
    """FLOPs per second in units of 1e9."""
    if seconds <= 0:
        raise ValueError(f"seconds must be positive, got {seconds}")
    return flops / seconds / 1e9


def roofline(flops: float, seconds: float, peak_gflops: float | None, padded: int, real: int) -> dict[str, Any]:
    """A metric row's rate, its share of the machine's measured peak, and the padding it carried.

    Args:
        flops: the forward passes' FLOPs (counted on the padded batches).
        seconds: scoring wall time.
        peak_gflops: the best product rate of the precision the row ran in (None: unknown).
        padded: token positions the models saw, padding included (0: not counted).
        real: real tokens among them.

    Returns:
        ``gflops``, ``utilization`` (gflops / peak), ``padded_per_real`` (1.0 = no padding) and
        ``flops_per_real_token``.
    """
    gflops = achieved_gflops(flops, seconds)
    return {
        "gflops": gflops,
        "utilization": gflops / peak_gflops if peak_gflops else None,
        "padded_per_real": padded / real if real else None,
        "flops_per_real_token": flops / real if real else None,
    }


def fidelity(fast: Sequence[float], reference: Sequence[float]) -> dict[str, float]:
    """How far a fast path's scores are from float32's on the same rows: Kendall tau-b and max/mean |difference|."""
    from scipy.stats import kendalltau

    a, b = np.asarray(fast, dtype=np.float64), np.asarray(reference, dtype=np.float64)
    return {
        "kendall_vs_float32": float(kendalltau(a, b).statistic),
        "max_abs_diff": float(np.abs(a - b).max()),
        "mean_abs_diff": float(np.abs(a - b).mean()),
    }


def speed_target(flags: Sequence[str]) -> tuple[float, str]:
    """The speed-up over float32 a fast path must reach on this processor to be worth offering, and why.

    AMX multiplies bfloat16 and int8 tiles: 3x. AVX-512 BF16 (or VNNI for int8) doubles the products per cycle:
    1.8x (2x less the parts that do not speed up). Without either (AVX2 only) no format is native, and 1.8x stands.
    """
    if "amx_bf16" in flags or "amx_int8" in flags:
        return 3.0, "AMX"
    if "avx512_bf16" in flags:
        return 1.8, "AVX-512 BF16"
    return 1.8, "no AMX and no AVX-512 BF16"


def devmix_result(output: str) -> dict[str, Any]:
    """The dev-mix comparison a ``devmix --precision P --versus-precision float32`` run printed (its last line):
    which metric row and precision it was, its item limit and the mean-of-sets tau-like difference with its 95% CI.

    Args:
        output: the command's standard output.

    Returns:
        ``metric`` (a ``METRICS`` row name), ``precision``, ``items_per_set``, ``rows``, ``tau_like`` (per set:
        fast, float32), ``difference`` and ``ci95``, ``inside`` (the CI holds 0: not told apart from float32).
    """
    result = json.loads(output.strip().splitlines()[-1])
    name = result["metric"]
    if name == "bertscore" and "encoder:packaged:mpnet@" in result["signature"]:
        name = "bertscore-mpnet"
    low, high = result["mean"]["ci95"]
    return {
        "metric": name,
        "precision": result["label_a"].rsplit(" ", 1)[-1],
        "items_per_set": max(s["items"] for s in result["sets"]),
        "rows": sum(s["rows"] for s in result["sets"]),
        "tau_like": {s["set"]: [s["tau_like_a"], s["tau_like_b"]] for s in result["sets"]},
        "difference": result["mean"]["difference"],
        "ci95": [low, high],
        "inside": low <= 0.0 <= high,
    }


def verdict(row: dict, devmix: dict | None, target: float) -> dict[str, Any]:
    """Whether a fast path is offered (Kendall >= .99 with float32, where measured a dev-mix tau-like not told apart
    from float32's, and faster than float32) and whether it meets the contract (that, Kendall >= .995 and ``target``
    times float32's speed). ``offered`` names the first reason a path is not.
    """
    kendall, speed_up = row["kendall_vs_float32"], 1.0 / row["ratio_to_float32"]
    reasons = [
        reason
        for failed, reason in (
            (kendall < 0.99, f"Kendall {kendall:.3f}"),
            (devmix is not None and not devmix["inside"], "dev-mix tau-like moved"),
            (speed_up <= 1.0, "slower than float32"),
        )
        if failed
    ]
    passes = not reasons and kendall >= 0.995 and speed_up >= target
    return {
        "speed_up": speed_up,
        "offered": "yes" if not reasons else f"not offered ({reasons[0]})",
        "contract": "pass" if passes else "fail",
        "devmix_difference": None if devmix is None else devmix["difference"],
        "devmix_ci95": None if devmix is None else "[{:+.4f}, {:+.4f}]".format(*devmix["ci95"]),
        "devmix_items_per_set": None if devmix is None else devmix["items_per_set"],
    }


def read_devmix(files: Sequence[str]) -> dict[tuple[str, str], dict[str, Any]]:
    """Saved ``devmix`` outputs (``devmix_result``) keyed by the (metric, precision) row they judge."""
    return {(d["metric"], d["precision"]): d for d in (devmix_result(Path(f).read_text()) for f in files)}


def judge(rows: list[dict], devmix: dict[tuple[str, str], dict], target: float, fast: Callable[[dict], bool]) -> None:
    """Add ``verdict`` to each row ``fast`` picks, with its dev-mix comparison where one was saved."""
    for row in rows:
        if fast(row):
            row.update(verdict(row, devmix.get((row["metric"], row["precision"])), target))


# --- metrics ------------------------------------------------------------------------------------------------------

# metric row name: (toolkit metric, its options, takes a precision, bert-score peer encoder for its ratio)
METRICS: dict[str, tuple[str, dict[str, Any], bool, str]] = {
    "menli": ("menli", {"task": "mt"}, True, "packaged:mpnet"),
    "sescore": ("sescore", {}, True, "packaged:mpnet"),
    "bertscore": ("bertscore", {}, True, "packaged:me5-small"),
    "bertscore-mpnet": ("bertscore", {"encoder": "packaged:mpnet"}, True, "packaged:mpnet"),
    "lm-ratio": ("lm-ratio", {}, False, "packaged:mpnet"),
}
PEER_LENGTH = 256  # our BERTScorer's truncation; the peer is set to the same (as bench_peers.py)


def scorer(name: str, precision: str) -> Any:
    """A toolkit scorer of a ``METRICS`` row (MENLI without its pair memo, so a repeat is not a lookup)."""
    toolkit_name, options, takes_precision, _ = METRICS[name]
    made = metric(toolkit_name, progress=False, **options, **({"precision": precision} if takes_precision else {}))
    if hasattr(made, "pair_cache"):
        made.pair_cache = 0
    return made


def peer(encoder: str) -> Callable[[list[str], list[str]], list[float]]:
    """The ``bert-score`` package's F1 on the same encoder folder, last layer, no idf, 256-token truncation, in
    float32 (a folder stored in float16, as me5-small's, would otherwise load in float16, emulated on a CPU)."""
    import bert_score
    from transformers import AutoConfig

    from nlgmetrics.modelroles import resolve

    folder = resolve("encoder", encoder).location
    layers = AutoConfig.from_pretrained(folder).num_hidden_layers
    peer_scorer = bert_score.BERTScorer(model_type=folder, num_layers=layers, batch_size=64, idf=False)
    peer_scorer._tokenizer.model_max_length = PEER_LENGTH
    peer_scorer._model.float()
    return lambda hyps, refs: peer_scorer.score(hyps, refs)[2].tolist()


def wait_quiet(threshold: float, limit_s: float, pause_s: float = 60.0) -> dict[str, Any]:
    """Sleep in ``pause_s`` steps until the one-minute load average is at most ``threshold`` or ``limit_s`` passed.

    Returns:
        ``quiet`` (whether the threshold was met), ``waited_s`` and the load averages seen.
    """
    seen, started = [load_average()], time.monotonic()
    while seen[-1] > threshold and time.monotonic() - started + pause_s <= limit_s:
        time.sleep(pause_s)
        seen.append(load_average())
    return {
        "quiet": seen[-1] <= threshold,
        "threshold": threshold,
        "waited_s": round(time.monotonic() - started),
        "loads_seen": seen,
    }


def sample_rows(segments: int, seed: int) -> tuple[list[str], list[str]]:
    """A seeded sample of ``segments`` TED zh-en MQM rows (hypotheses, first references), in file order."""
    rows = read_data(TED_MQM_FILE)
    picked = sorted(np.random.default_rng(seed).choice(len(rows), size=min(segments, len(rows)), replace=False))
    return [rows[i]["hyp"] for i in picked], [rows[i]["refs"][0] for i in picked]


def time_in_turns(arms: dict[str, Callable[[], Sequence[float]]], repeats: int, slow: float = 2.0) -> tuple[dict, dict]:
    """Each arm's best wall and CPU seconds over ``repeats`` rounds taken in turns, and its scores (first round).

    An arm more than ``slow`` times slower than the first arm (the reference) in the first round runs only once: no
    second run makes it a fast path, and an emulated kernel would otherwise take most of the time budget.

    Returns:
        (arm: {"wall": s, "cpu": s, "runs": n}, arm: scores).
    """
    best = {arm: {"wall": float("inf"), "cpu": float("inf"), "runs": 0} for arm in arms}
    scores: dict[str, list[float]] = {}
    reference = next(iter(arms))
    for round_ in range(repeats):
        for arm, run in arms.items():
            if round_ and best[arm]["wall"] > slow * best[reference]["wall"]:
                continue
            wall, cpu = time.perf_counter(), time.process_time()
            out = run()
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            best[arm] = {
                "wall": min(best[arm]["wall"], wall),
                "cpu": min(best[arm]["cpu"], cpu),
                "runs": best[arm]["runs"] + 1,
            }
            scores.setdefault(arm, [float(s) for s in out])
    return best, scores


def measure_metric(
    name: str, precisions: Sequence[str], hyps: list[str], refs: list[str], repeats: int, peaks: dict[str, float]
) -> list[dict]:
    """One metric's rows: FLOPs and tokens of a float32 pass, then every precision and the peer timed in turns.

    Returns:
        One row per precision plus one for the peer, with speed, roofline and fidelity columns.
    """
    load = LoadSpan()
    takes_precision, peer_encoder = METRICS[name][2], METRICS[name][3]
    chosen = [p for p in precisions if takes_precision or p == "float32"]
    scorers = {p: scorer(name, p) for p in chosen}
    for made in scorers.values():  # loads the models (and makes an int8 copy) outside the timing
        made.score(hyps[:8], refs[:8])
    with TokenCounter() as tokens:
        _, flops, by_op = count_flops(lambda: scorers["float32"].score(hyps, refs))
    arms: dict[str, Callable[[], Sequence[float]]] = {p: (lambda s=s: s.score(hyps, refs)) for p, s in scorers.items()}
    peer_arm = f"bert-score {peer_encoder}"
    peer_run = peer(peer_encoder)
    peer_run(hyps[:8], refs[:8])
    arms[peer_arm] = lambda: peer_run(hyps, refs)
    best, scores = time_in_turns(arms, repeats)
    span = load.span()
    rows = []
    for arm in arms:
        row: dict[str, Any] = {
            "metric": name,
            "precision": arm,
            "wall_seconds": best[arm]["wall"],
            "cpu_seconds": best[arm]["cpu"],
            "timed_runs": best[arm]["runs"],
            "segments_per_s": len(hyps) / best[arm]["wall"],
            "ratio_to_float32": best[arm]["wall"] / best["float32"]["wall"],
            "ratio_to_peer": best[arm]["wall"] / best[peer_arm]["wall"],
            "load": span,
        }
        if arm != peer_arm:
            row.update(roofline(flops, best[arm]["wall"], peaks.get(arm), tokens.padded, tokens.real))
            row.update(
                {
                    "flops": flops,
                    "flops_by_op": by_op,
                    "padded_tokens": tokens.padded,
                    "real_tokens": tokens.real,
                    **fidelity(scores[arm], scores["float32"]),
                }
            )
        rows.append(row)
    return rows


# --- main ---------------------------------------------------------------------------------------------------------

COLUMNS = [
    "metric",
    "precision",
    "wall_seconds",
    "segments_per_s",
    "ratio_to_float32",
    "ratio_to_peer",
    "gflops",
    "utilization",
    "padded_per_real",
    "flops_per_real_token",
    "kendall_vs_float32",
    "max_abs_diff",
    "devmix_difference",
    "devmix_ci95",
    "devmix_items_per_set",
    "offered",
    "contract",
]


REFOLD_NOTE = "dev-mix comparisons folded in after the timing run"


# --- where the time goes ------------------------------------------------------------------------------------------

# operator kinds of a profile, first match wins (aten names, lower case); what matches none is "other operators"
OPERATOR_KINDS = (
    ("matrix products", ("mm", "addmm", "bmm", "baddbmm", "matmul", "linear", "mkldnn", "onednn", "int_mm")),
    ("attention outside products", ("scaled_dot_product", "softmax", "masked_fill", "where")),
    ("norms", ("layer_norm", "rms_norm", "rsqrt", "norm")),
    ("activations", ("gelu", "tanh", "silu", "relu", "sigmoid")),
    ("elementwise arithmetic", ("add", "mul", "div", "sub", "pow", "mean", "sum", "max", "min", "neg", "exp")),
    ("copies and layout", ("copy", "to", "clone", "contiguous", "cat", "index", "embedding", "fill", "empty", "pad")),
)


def operator_kind(name: str) -> str:
    """The kind of a profiled operator (``aten::addmm`` -> "matrix products"), by its name's last part."""
    base = name.lower().split("::")[-1].strip("_")
    for kind, stems in OPERATOR_KINDS:
        if any(base == stem or base.startswith(stem) or base.endswith(stem) for stem in stems):
            return kind
    return "other operators"


def profile_shares(fn: Callable[[], Any]) -> dict[str, Any]:
    """Run ``fn`` once under torch's profiler and split its wall time by operator kind (self CPU time, so nested
    operators are not counted twice); what no operator accounts for (tokenization, Python, waiting) is the rest.

    Returns:
        wall seconds, and per kind its seconds and share of the wall time, largest first.
    """
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as recorded:
        started = time.perf_counter()
        fn()
        wall = time.perf_counter() - started
    seconds: dict[str, float] = {}
    for event in recorded.key_averages():
        kind = operator_kind(event.key)
        seconds[kind] = seconds.get(kind, 0.0) + event.self_cpu_time_total / 1e6
    # an operator's time is recorded on the thread that called it (its intra-op threads inside it): comparable
    # with the wall time as it is
    kinds = dict(seconds)
    kinds["outside operators (tokenization, Python)"] = max(0.0, wall - sum(kinds.values()))
    ordered = sorted(kinds.items(), key=lambda item: -item[1])
    return {
        "wall_seconds": wall,
        "kinds": [{"kind": k, "seconds": v, "share": v / wall if wall else 0.0} for k, v in ordered],
    }


def profile_rows(names: Sequence[str], precision: str, hyps: list[str], refs: list[str]) -> list[dict]:
    """One profiled scoring call per metric after one warm-up call (model load and first-call costs left out)."""
    rows = []
    for name in names:
        made = scorer(name, precision)
        made.score(hyps, refs)
        shares = profile_shares(lambda: made.score(hyps, refs))
        for entry in shares["kinds"]:
            rows.append({"metric": name, "precision": precision, "wall_seconds": shares["wall_seconds"], **entry})
    return rows


def title(segments: int, seed: int) -> str:
    """The Markdown heading of a roofline result."""
    return f"Roofline of CPU scoring ({segments} TED zh-en segments, seed {seed}; wall-time ratios)"


def refold(name: str, devmix_files: Sequence[str]) -> dict[str, Any]:
    """Fold saved dev-mix comparisons into a roofline result written earlier, without measuring again.

    Why: a dev-mix comparison takes minutes per arm and is often run after the roofline (on the same machine, in
    the same session); the fast paths' ``offered`` verdict depends on it, so it is re-derived from the written
    rows rather than by re-timing everything.

    Args:
        name: the result file stem under ``bench/results``.
        devmix_files: saved outputs of ``devmix --precision P --versus-precision float32`` runs.

    Returns:
        The result as rewritten.
    """
    path = RESULTS / f"{name}.json"
    if not path.is_file():
        raise SystemExit(f"--refold: no result to fold into at {path}")
    if not devmix_files:
        raise SystemExit("--refold needs --devmix files to fold in")
    result = json.loads(path.read_text(encoding="utf-8"))
    devmix = read_devmix(devmix_files)
    measured = {(row["metric"], row["precision"]) for row in result["rows"]}
    unknown = sorted(key for key in devmix if key not in measured)
    if unknown:
        raise SystemExit(f"--refold: {path.name} has no rows for {unknown}")
    # the fast paths' rows are those the measuring run judged
    judge(result["rows"], devmix, result["speed_target"], lambda row: "offered" in row)
    rows, notes = result.pop("rows"), [n for n in result.pop("notes") if not n.startswith(REFOLD_NOTE)]
    result["devmix"] = list(devmix.values())
    notes.append(
        f"{REFOLD_NOTE} (--refold): "
        + "; ".join(
            f"{metric} {precision} on {', '.join(d['tau_like'])}, {d['items_per_set']} items per set at most"
            for (metric, precision), d in devmix.items()
        )
    )
    write_results(name, result, rows, COLUMNS, title(result["segments"], result["seed"]), notes)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metrics", default=",".join(METRICS), help=f"comma-separated, of {', '.join(METRICS)}")
    parser.add_argument("--precisions", default="float32,int8,bfloat16")
    parser.add_argument("--segments", type=int, default=48, help="TED zh-en MQM segments, a seeded sample")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--peak-runs", type=int, default=5)
    parser.add_argument("--quiet-load", type=float, default=0.7, help="wait until the 1-min load is at most this")
    parser.add_argument("--wait-minutes", type=float, default=20.0)
    parser.add_argument(
        "--devmix",
        nargs="*",
        default=[],
        help="saved outputs of 'devmix --precision P --versus-precision float32' runs, folded into "
        "the fidelity columns",
    )
    parser.add_argument("--name", default="roofline", help="result file stem under bench/results")
    parser.add_argument(
        "--refold",
        action="store_true",
        help="measure nothing: fold the --devmix outputs into the existing bench/results/<name>.json and "
        "re-derive its offered and contract columns (its timings, notes and machine stay as written)",
    )
    parser.add_argument(
        "--profile",
        metavar="PRECISION",
        help="measure nothing else: profile one scoring call per --metrics entry in this precision and write "
        "bench/results/<name>_profile (share of the time per operator kind)",
    )
    args = parser.parse_args()
    if args.refold:
        refold(args.name, args.devmix)
        return
    if args.profile:
        hyps, refs = sample_rows(args.segments, args.seed)
        names = [m for m in args.metrics.split(",") if m]
        load = LoadSpan()
        rows = profile_rows(names, args.profile, hyps, refs)
        write_results(
            f"{args.name}_profile",
            {
                "segments": len(hyps),
                "seed": args.seed,
                "data": TED_MQM_FILE,
                "precision": args.profile,
                "load": load.span(),
            },
            rows,
            ["metric", "precision", "kind", "seconds", "share", "wall_seconds"],
            f"Where the time of one {args.profile} scoring call goes, by operator kind ({len(hyps)} segments)",
            [
                "torch.profiler, CPU activities; self time per operator on the calling thread (nested calls "
                "counted once, intra-op threads inside the operator's time); one warm-up call first",
                "outside operators: wall time no operator accounts for (tokenization, Python between calls)",
                f"load average during the run: {load.span()}",
            ],
        )
        return

    import torch

    import nlgmetrics  # noqa: F401  (sets MKL's reproducible mode before the first product, as scoring runs it)

    precisions = [p for p in args.precisions.split(",") if p]
    if precisions[0] != "float32":
        raise SystemExit("--precisions must start with float32: it is the reference of every ratio")
    waited = wait_quiet(args.quiet_load, args.wait_minutes * 60)
    run_load = LoadSpan()
    isa = isa_report()
    load = LoadSpan()
    peak_rows = gemm_peaks([*precisions, "int8-int_mm"], runs=args.peak_runs)
    peaks = peak_by_precision(peak_rows)
    peak_load = load.span()
    hyps, refs = sample_rows(args.segments, args.seed)
    rows: list[dict] = []
    for name in [m for m in args.metrics.split(",") if m]:
        rows += measure_metric(name, precisions, hyps, refs, args.repeats, peaks)
        print(json.dumps(rows[-1], default=str)[:300], flush=True)
    target, why = speed_target(isa["flags"])
    devmix = read_devmix(args.devmix)
    judge(rows, devmix, target, lambda row: row["precision"] in precisions and row["precision"] != "float32")
    notes = [
        f"wait for a quiet machine: {waited}",
        f"contract: Kendall >= .995 with float32, dev-mix tau-like difference CI holding 0, and {target}x "
        f"float32's speed ({why}); offered: Kendall >= .99, the dev-mix CI holding 0 and faster than float32",
        f"load average over the whole run: {run_load.span()}; each metric's rows carry their own span (load)",
        f"ISA: flags {isa['flags']}; torch CPU capability {isa['torch_cpu_capability']}; oneDNN bf16 "
        f"supported: {isa['mkldnn_bf16_supported']}",
        *[
            f"probe {name}: oneDNN isa {probe['onednn_isa']}, kernels {probe['onednn_kernels'] or 'none'}; MKL "
            f"calls {probe['mkl_calls'] or 'none'}"
            for name, probe in isa["probes"].items()
        ],
        "int8 products run in fbgemm, which prints nothing: it picks its AVX2, AVX-512 or VNNI kernels from the "
        "same CPU flags",
        "peaks (GFLOP/s, best shape): " + ", ".join(f"{p} {g:.1f}" for p, g in peaks.items()) + f"; load {peak_load}",
        "utilization = FLOPs of a float32 pass / scoring wall time / the precision's peak; int8 and bfloat16 "
        "rows do the same products, so they are credited with the same FLOPs",
        "ratio_to_float32 and ratio_to_peer: wall time over the float32 row's and over the bert-score "
        "package's (same rows, same run, in turns); below 1 is faster",
    ]
    write_results(
        args.name,
        {
            "segments": len(hyps),
            "seed": args.seed,
            "data": TED_MQM_FILE,
            "repeats": args.repeats,
            "threads": torch.get_num_threads(),
            "timing": "best wall time of the repeats, taken in turns",
            "wait": waited,
            "run_load": run_load.span(),
            "isa": isa,
            "peaks": peak_rows,
            "peak_load": peak_load,
            "speed_target": target,
            "devmix": list(devmix.values()),
        },
        rows,
        COLUMNS,
        title(len(hyps), args.seed),
        notes,
    )


if __name__ == "__main__":
    main()
