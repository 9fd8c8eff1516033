"""Defaults by measurement: one table per model role from the benchmarks' own result files, plus disk measured here.

Nothing here scores anything; it gathers what the role benchmarks wrote, so every number in the README's
"defaults" tables is one a benchmark printed:

- encoder quality: ``evaluate.py devmix --half select --mix devmix/encoders.yaml --metric bertscore --encoder E
  --versus bertscore --versus-encoder packaged:minilm`` (JSON line saved as ``encoders_devmix_<short>.json``),
  speed: ``bench_encoders.py`` (``encoders.json``);
- NLI quality: each shipped adapter's ``report.json`` (test accuracy) and ``bench/compare_nli.py``
  (``nli_adversarial.json``), speed: ``bench_nli.py --compare`` (``nli_models.json``);
- causal LM quality: ``mars_roc_ablation.json`` (select half; written by ``bench/ablate_mars_roc.py``, removed after
  its run, in git history at commit 6764470), speed: ``bench_causal_lm.py`` (``causal_lm.json``).

Disk is what a user's machine holds for the model: its installed package folders plus the converted copy in the
toolkit cache (or the shipped adapter folder plus its base). A model whose package is not installed here gets
"not installed" instead of a number.

    python -m bench.defaults_table            # -> bench/results/defaults.{json,md}; seconds (reads files)
"""

from __future__ import annotations

import argparse
import importlib.util
import json
from pathlib import Path

from bench.harness import RESULTS, machine, tree_mb

# Licence facts from each model card / package metadata (not measured).
LICENCES = {
    "packaged:minilm": "Apache-2.0",
    "packaged:mpnet": "Apache-2.0",
    "packaged:me5-small": "MIT",
    "packaged:smollm2": "Apache-2.0",
    "packaged:gemma3-270m": "Gemma Terms of Use (not OSI; opt-in)",
}  # an NLI adapter's licence is derived from its base's and its training record (nli_licence)
ENCODER_QUALITY = {"packaged:mpnet": "encoders_devmix_mpnet.json", "packaged:me5-small": "encoders_devmix_me5.json"}
NLI_MODELS = ("packaged:nli-minilm", "packaged:nli-me5", "packaged:nli-mpnet")


def shipped_adapter(spec: str) -> tuple[Path, str]:
    """(folder, base role value) of a shipped NLI adapter: the folder from the model registry, the base from the
    adapter's own nli.yaml, so neither is written down twice."""
    from nlgmetrics.modelroles import PACKAGED
    from nlgmetrics.nli.checkpoint import read_adapter_config

    folder = Path(PACKAGED[spec.split(":", 1)[1]].locate())
    return folder, read_adapter_config(folder).base


def nli_licence(folder: Path, base: str) -> str:
    """The base's licence plus SICK's non-commercial terms when the adapter's training record kept SICK."""
    from nlgmetrics.nli.checkpoint import read_adapter_config

    commercial_only = read_adapter_config(folder).record.get("config", {}).get("commercial_only", False)
    data = (
        "SICK left out of training (--commercial-only)"
        if commercial_only
        else "SICK in training: CC BY-NC-SA (--commercial-only drops it)"
    )
    return f"base {LICENCES[base]}; {data}"


def _read(name: str) -> dict | None:
    path = RESULTS / name
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def disk_mb(spec: str) -> float | None:
    """Installed package folders of a ``packaged:`` model plus its converted cache folder; None if not installed."""
    from nlgmetrics.modelroles import PACKAGED, resolve
    from nlgmetrics.modelroles.cache import cache_root

    packaged = PACKAGED[spec.split(":", 1)[1]]
    if any(importlib.util.find_spec(m) is None for m in packaged.modules):
        return None
    location = Path(resolve(packaged.roles[0], spec).location).resolve()
    if "nli" in packaged.roles:  # a shipped adapter folder over a packaged base (whose package the adapter also needs)
        base_mb = disk_mb(shipped_adapter(spec)[1])
        return None if base_mb is None else tree_mb(location) + base_mb
    total = sum(
        tree_mb(Path(list(importlib.util.find_spec(m).submodule_search_locations)[0])) for m in packaged.modules
    )
    if location.is_dir() and cache_root().resolve() in location.parents:
        total += tree_mb(location)  # the converted copy in the toolkit cache
    return total


def _mb(value: float | None) -> str:
    return "not installed" if value is None else f"{value:,.0f} MB"


def encoder_rows() -> list[dict]:
    speed = {r["encoder"]: r for r in (_read("encoders.json") or {"rows": []})["rows"]}
    quality = {spec: _read(name) for spec, name in ENCODER_QUALITY.items()}
    first = next((q for q in quality.values() if q), None)
    rows = []
    for spec in ("packaged:minilm", "packaged:mpnet", "packaged:me5-small"):
        q = quality.get(spec)
        sets = {}
        if q:
            sets = {s["set"]: s["tau_like_a"] for s in q["sets"]}
        elif spec == "packaged:minilm" and first:
            sets = {s["set"]: s["tau_like_b"] for s in first["sets"]}  # MiniLM is every comparison's baseline
        row = {
            "model": spec,
            **{f"tau_{k}": v for k, v in sets.items()},
            "mean_tau": sum(sets.values()) / len(sets) if sets else None,
        }
        if q:
            m = q["mean"]
            row.update({"diff_vs_minilm": m["difference"], "ci95": m["ci95"], "not_better": m["share_a_not_better"]})
        s = speed.get(spec, {})
        row.update(
            {
                "segments_per_s": s.get("segments_per_s"),
                "time_ratio": s.get("time_ratio_to_minilm"),
                "params_m": s.get("params_m"),
                "disk_mb": disk_mb(spec),
                "licence": LICENCES[spec],
            }
        )
        rows.append(row)
    return rows


def nli_rows() -> list[dict]:
    speed = {r["model"]: r for r in (_read("nli_models.json") or {"rows": []})["rows"]}
    adversarial = {
        (r["protocol"], r["model"]): r["accuracy"] for r in (_read("nli_adversarial.json") or {"rows": []})["rows"]
    }
    rows = []
    for spec in NLI_MODELS:
        folder, base = shipped_adapter(spec)
        tests = json.loads((folder / "report.json").read_text())["tests"]
        s = speed.get(spec, {})
        rows.append(
            {
                "model": spec,
                **{name: tests[name]["raw"]["accuracy"] for name in ("snli", "sick", "breaking_nli")},
                "adv_ref": adversarial.get(("reference-based", spec)),
                "adv_src_de": adversarial.get(("reference-free (German source)", spec)),
                "pairs_per_s": s.get("pairs_per_s"),
                "time_ratio": s.get("time_ratio_to_first"),
                "adapter_mb": tree_mb(folder),
                "disk_mb": disk_mb(spec),
                "licence": nli_licence(folder, base),
            }
        )
    return rows


def causal_rows() -> list[dict]:
    speed = {r["model"]: r for r in (_read("causal_lm.json") or {"rows": []})["rows"]}
    ablation = (_read("mars_roc_ablation.json") or {"rows": []})["rows"]
    rows = []
    for spec in ("packaged:smollm2", "packaged:gemma3-270m"):
        short = spec.split(":", 1)[1]
        mars = {
            r["split"]: r["select_kendall"]
            for r in ablation
            if r["filler"] == short and r["encoder"] == "minilm" and r["variant"].startswith("default: cosine")
        }
        s = speed.get(spec, {})
        rows.append(
            {
                "model": spec,
                **{f"mars_{k}": v for k, v in mars.items()},
                "texts_per_s": s.get("texts_per_s"),
                "tokens_per_s": s.get("tokens_per_s"),
                "time_ratio": s.get("time_ratio_to_smollm2"),
                "params_m": s.get("params_m"),
                "disk_mb": disk_mb(spec),
                "licence": LICENCES[spec],
            }
        )
    return rows


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def markdown(encoders: list[dict], nli: list[dict], causal: list[dict]) -> str:
    sets = [k[4:] for k in encoders[0] if k.startswith("tau_")]
    lines = [
        "# Defaults by measurement",
        "",
        "## encoder (BERTScore-F1, last layer; dev mix **select** half, split seed 0; tau-like = WMT20 item-grouped)",
        "",
        "| encoder | " + " | ".join(sets) + " | mean | vs MiniLM [95% CI] | P(not better) "
        "| segments/s (2 threads) | time vs MiniLM | disk | licence |",
        "|---" * (len(sets) + 8) + "|",
    ]
    for r in encoders:
        diff = (
            f"{r['diff_vs_minilm']:+.4f} [{r['ci95'][0]:+.4f}, {r['ci95'][1]:+.4f}]"
            if "diff_vs_minilm" in r
            else "(baseline)"
        )
        lines.append(
            f"| `{r['model']}` | "
            + " | ".join(_f(r.get(f"tau_{s}"), 4) for s in sets)
            + f" | {_f(r['mean_tau'], 4)} | {diff} | {_f(r.get('not_better'))} | {_f(r['segments_per_s'], 1)} "
            f"| {_ratio(r['time_ratio'])} | {_mb(r['disk_mb'])} | {r['licence']} |"
        )
    lines += [
        "",
        "## nli (3-way accuracy on the visible test sets; MENLI `e <->` mean accuracy on adv_menli_wmt20_de)",
        "",
        "| model | SNLI | SICK | Breaking-NLI | adversarial, English ref | adversarial, German source "
        "| pairs/s | time vs nli-minilm | shipped adapter | disk with base | licence |",
        "|---" * 11 + "|",
    ]
    for r in nli:
        lines.append(
            f"| `{r['model']}` | {_f(r['snli'])} | {_f(r['sick'])} | {_f(r['breaking_nli'])} | "
            f"{_f(r['adv_ref'])} | {_f(r['adv_src_de'])} | {_f(r['pairs_per_s'], 1)} | "
            f"{_ratio(r['time_ratio'])} | {r['adapter_mb']:.1f} MB | {_mb(r['disk_mb'])} | {r['licence']} |"
        )
    splits = [k[5:] for k in causal[0] if k.startswith("mars_")]
    lines += [
        "",
        "## causal_lm (MARS-cosine on ROC, MiniLM, shipped weighting: Kendall on the **select** half of each "
        "split; lm-likelihood throughput)",
        "",
        "| model | " + " | ".join(f"MARS {s}" for s in splits) + " | texts/s | tokens/s | time vs SmolLM2 "
        "| disk | licence |",
        "|---" * (len(splits) + 6) + "|",
    ]
    for r in causal:
        lines.append(
            f"| `{r['model']}` | "
            + " | ".join(_f(r.get(f"mars_{s}")) for s in splits)
            + f" | {_f(r['texts_per_s'], 1)} | {_f(r['tokens_per_s'], 0)} | {_ratio(r['time_ratio'])} | "
            f"{_mb(r['disk_mb'])} | {r['licence']} |"
        )
    lines += [
        "",
        "- Sources: bench/results/encoders_devmix_*.json, encoders.json, "
        "nlgmetrics/nli/checkpoints/*/report.json, nli_adversarial.json, nli_models.json, "
        "mars_roc_ablation.json (unbounded masking, before the window), causal_lm.json; disk measured by this "
        "script (package folders + converted cache copy).",
        "- Only the select half was used for these choices; no report-half number enters this table.",
        f"- Machine: {machine()}",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()  # --help, and nothing else
    encoders, nli, causal = encoder_rows(), nli_rows(), causal_rows()
    (RESULTS / "defaults.json").write_text(
        json.dumps({"encoder": encoders, "nli": nli, "causal_lm": causal, "machine": machine()}, indent=1)
    )
    text = markdown(encoders, nli, causal)
    (RESULTS / "defaults.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
