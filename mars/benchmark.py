"""Small MARS measurements: augmentation speed, and which parameters self-planning has to touch.

``python -m mars.benchmark speed --n 5`` times augmentation (four ratios) on ROC-story references.
``python -m mars.benchmark planning --n 3`` compares planning scopes on real blanks: CPU seconds per planned
token, and how closely each cheap delta reproduces the logit change of the paper's full-parameter update
(Pearson r of the logit changes over the vocabulary, KL(pi_all || pi_scope) at temperature xi, overlap of the
50 most likely tokens, reward gain; scope "none" = no planning). Both print one JSON
object per line. Data come from $NLGMETRICS_DATA (default ../shared/data next to the repository).
"""
from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

import torch

ROC = "judgments/story_union_rocstories.jsonl"


def data_root() -> Path:
    default = Path(__file__).resolve().parent.parent.parent / "shared" / "data"
    return Path(os.environ.get("NLGMETRICS_DATA", default))


def load_rows(n: int, path: str | None = None) -> list[dict[str, Any]]:
    file = Path(path) if path else data_root() / ROC
    if not file.is_file():
        raise SystemExit(f"data file not found: {file} (set NLGMETRICS_DATA)")
    rows = []
    with open(file, encoding="utf-8") as handle:
        for line in handle:
            rows.append(json.loads(line))
            if len(rows) >= n:
                break
    return rows


def speed(args: argparse.Namespace) -> None:
    """Seconds per reference to augment it at every nonzero ratio (models loaded before timing)."""
    from mars.config import parse_overrides
    from mars.scorer import build

    torch.set_num_threads(args.threads)
    scorer = build(args.config, overrides={"cache_dir": None, "progress": False, **parse_overrides(args.set)})
    rows = load_rows(args.n, args.data)
    refs, srcs = [r["refs"][0] for r in rows], [r["src"] for r in rows]
    scorer.templates(refs[:1], srcs[:1])
    augmenter = scorer._get("augmenter")
    if hasattr(augmenter, "_vocab_masks"):
        augmenter._vocab_masks()
    wall, cpu = time.perf_counter(), time.process_time()
    sets = scorer.augment(refs, srcs)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    words = sum(len(r.split()) for r in refs) / len(refs)
    print(json.dumps({
        "what": "augmentation", "config": str(args.config), "overrides": args.set, "references": len(refs),
        "ratios": [r for r in scorer.config.masking.ratios if r > 0], "mean_reference_words": round(words, 1),
        "threads": args.threads, "wall_s_per_reference": round(wall / len(refs), 2),
        "cpu_s_per_reference": round(cpu / len(refs), 2), "load_average": os.getloadavg()[0],
    }))
    if args.show:
        for refs_of in sets[: args.show]:
            for text in refs_of:
                print("   ", text)


def _planning_cases(scorer: Any, rows: list[dict[str, Any]], ratio: float) -> list[tuple[list[int], list[int]]]:
    """(input ids up to a blank, tokens of the text after it) for the first inner blank of each reference."""
    from mars.cloze import ClozeAugmenter, ClozeJob

    lm = scorer._get("causal_lm")
    augmenter = ClozeAugmenter(lm, scorer.config.cloze, scorer.config.planning)
    cases = []
    for row, templates in zip(rows, scorer.templates([r["refs"][0] for r in rows], [r["src"] for r in rows])):
        template = min(templates, key=lambda t: abs(t.ratio - ratio))
        prefix, segments = augmenter._program(ClozeJob(template, row["src"], 0))
        tokens = list(prefix)
        for segment in segments:
            if segment.kind == "blank" and segment.future:
                cases.append((tokens, segment.future))
                break
            tokens += segment.tokens if segment.kind == "text" else []
    return cases


def planning(args: argparse.Namespace) -> None:
    """Cost and fidelity of each place the planning delta can live, against the paper's all-parameter update."""
    from mars.planning import plan_logits_head, plan_logits_hidden, plan_logits_parameters, scope_parameter_names
    from mars.scorer import build

    torch.set_num_threads(args.threads)
    scorer = build(args.config, overrides={"cache_dir": None, "progress": False})
    model = scorer._get("causal_lm").model
    p, xi = scorer.config.planning, scorer.config.cloze.temperature
    head = model.get_output_embeddings()
    scopes = [s for s in args.scopes if s != "param:all"] + ([] if args.skip_all else ["param:all"])
    keys = ("cpu_s", "r", "kl", "top50_overlap", "gain")
    results: dict[str, dict[str, list[float]]] = {s: {k: [] for k in keys} for s in scopes}
    for ids, future in _planning_cases(scorer, load_rows(args.n, args.data), args.ratio):
        input_ids = torch.tensor([ids])
        fut = torch.tensor([future])
        with torch.no_grad():
            out = model(input_ids, output_hidden_states=True)
        base, h = out.logits[0, -1], out.hidden_states[-1][0, -1]

        def reward(z: torch.Tensor) -> float:
            return float(torch.log_softmax(z / xi, -1)[fut[0]].sum())

        planned: dict[str, torch.Tensor] = {}
        cost: dict[str, float] = {}
        for scope in scopes:
            start = time.process_time()
            if scope == "none":
                z = base
            elif scope.split("*")[0] == "head":  # "head*2" = head delta with twice the learning rate
                eta = p.eta * float(scope.split("*")[1]) if "*" in scope else p.eta
                z = plan_logits_head(base[None], h.norm()[None], fut, eta=eta, steps=p.steps, temperature=xi)[0]
            elif scope.startswith("hidden"):
                eta = p.eta
                if scope == "hidden_matched":  # eta * ||h||: the same step length as the head delta in logit space
                    eta = p.eta * float(h.norm())
                z = plan_logits_hidden(h[None], head.weight, head.bias, fut, eta=eta, steps=p.steps, temperature=xi)[0]
            else:
                names = scope_parameter_names(model, scope.split(":", 1)[1])
                z = plan_logits_parameters(model, input_ids, future, names, eta=p.eta, steps=p.steps, temperature=xi)
            cost[scope] = time.process_time() - start
            planned[scope] = z.detach()
        reference = planned.get("param:all")
        for scope in scopes:
            z = planned[scope]
            results[scope]["cpu_s"].append(cost[scope])
            results[scope]["gain"].append(reward(z) - reward(base))
            if reference is not None:
                a, b = (z - base), (reference - base)
                r = torch.corrcoef(torch.stack([a, b]))[0, 1] if scope != "none" else torch.tensor(0.0)
                results[scope]["r"].append(float(r))
                log_ref, log_z = torch.log_softmax(reference / xi, -1), torch.log_softmax(z / xi, -1)
                results[scope]["kl"].append(float((log_ref.exp() * (log_ref - log_z)).sum()))
                top_ref, top_z = set(reference.topk(50).indices.tolist()), set(z.topk(50).indices.tolist())
                results[scope]["top50_overlap"].append(len(top_ref & top_z) / 50)
    for scope, values in results.items():
        summary = {k: round(sum(v) / len(v), 4) if v else None for k, v in values.items()}
        print(json.dumps({"what": "planning_scope", "scope": scope, "cases": len(values["cpu_s"]),
                          "threads": args.threads, **summary}))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    for name, func in (("speed", speed), ("planning", planning)):
        cmd = sub.add_parser(name, help=func.__doc__)
        cmd.add_argument("--config", default="configs/mars/offline.yaml")
        cmd.add_argument("--data", default=None, help="JSONL with refs/src (default: ROC stories in NLGMETRICS_DATA)")
        cmd.add_argument("--n", type=int, default=5)
        cmd.add_argument("--threads", type=int, default=1)
        cmd.set_defaults(func=func)
    sub.choices["speed"].add_argument("--set", nargs="*", default=[], help="config overrides key=value")
    sub.choices["speed"].add_argument("--show", type=int, default=0, help="print augmented references of N rows")
    sub.choices["planning"].add_argument("--ratio", type=float, default=0.4)
    sub.choices["planning"].add_argument("--skip-all", action="store_true", help="skip the slow all-parameter update")
    sub.choices["planning"].add_argument(
        "--scopes", nargs="*",
        default=["none", "head", "head*2", "hidden", "hidden_matched", "param:head", "param:last_layers:1",
                 "param:last_layers:2"],
        help="none, head, head*X (eta times X), hidden, hidden_matched, param:head, param:last_layers:N",
    )
    args = parser.parse_args(argv)
    args.func(args)


if __name__ == "__main__":
    main()
