"""Which parameters MARS's self-planning has to touch: cost and fidelity of each planning scope, on real blanks.

The paper plans each blank with a gradient step on every parameter of the LM, which costs seconds per token on a
CPU (~5 CPU s for SmolLM2-135M). Cheaper deltas (the output head in closed form, the last hidden state, the last
layers' parameters) are compared here against that all-parameter update on the first inner blank of each ROC
reference: CPU seconds per planned token, Pearson r of the logit changes over the vocabulary, KL(pi_all ||
pi_scope) at the cloze temperature, overlap of the 50 most likely tokens, and the reward gain (log-probability of
the text after the blank); scope "none" is no planning. ``configs/mars/offline.yaml`` ships ``planning.scope:
head`` on the strength of this table (``mars/README.md``).

    python -m bench.bench_mars_planning [--n 3] [--ratio 0.4] [--threads 1] [--skip-all]
        [--scopes none head 'head*2' hidden hidden_matched param:head param:last_layers:1 param:last_layers:2]
        # a few minutes for --n 3 with the all-parameter update (its reference); -> mars_planning.{json,md}

(It was ``python -m mars.benchmark planning``; that module's ``speed`` is ``bench/bench_mars.py``.)
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from bench.harness import REPO, roc_references, write_results

SCOPES = [
    "none",
    "head",
    "head*2",
    "hidden",
    "hidden_matched",
    "param:head",
    "param:last_layers:1",
    "param:last_layers:2",
]
KEYS = ("cpu_s", "r", "kl", "top50_overlap", "gain")


def causal_lm(scorer: Any) -> Any:
    """The scorer's causal LM (models are cached per process: the one its augmenter uses)."""
    from nlgmetrics.modelroles import load_model

    return load_model("causal_lm", scorer.config.models.causal_lm, device=scorer.config.device)


def planning_cases(scorer: Any, refs: list[str], srcs: list[str], ratio: float) -> list[tuple[list[int], list[int]]]:
    """(input ids up to a blank, tokens of the text after it) for the first inner blank of each reference, from the
    template whose masking ratio is nearest ``ratio``."""
    from mars.cloze import ClozeAugmenter, ClozeJob

    augmenter = ClozeAugmenter(causal_lm(scorer), scorer.config.cloze, scorer.config.planning)
    cases = []
    for src, templates in zip(srcs, scorer.templates(refs, srcs)):
        template = min(templates, key=lambda t: abs(t.ratio - ratio))
        prefix, segments = augmenter._program(ClozeJob(template, src, 0))
        tokens = list(prefix)
        for segment in segments:
            if segment.kind == "blank" and segment.future:
                cases.append((tokens, segment.future))
                break
            tokens += segment.tokens if segment.kind == "text" else []
    return cases


def planned_logits(
    scope: str, model: Any, base: Any, hidden: Any, input_ids: Any, future: list[int], planning: Any, temperature: float
) -> Any:
    """The next-token logits after planning with one scope ("head*2": the head delta at twice the step)."""
    import torch

    from mars.planning import plan_logits_head, plan_logits_hidden, plan_logits_parameters, scope_parameter_names

    head = model.get_output_embeddings()
    fut = torch.tensor([future])
    if scope == "none":
        return base
    if scope.split("*")[0] == "head":
        eta = planning.eta * float(scope.split("*")[1]) if "*" in scope else planning.eta
        return plan_logits_head(
            base[None], hidden.norm()[None], fut, eta=eta, steps=planning.steps, temperature=temperature
        )[0]
    if scope.startswith("hidden"):
        # hidden_matched: eta * ||h||, the same step length as the head delta in logit space
        eta = planning.eta * float(hidden.norm()) if scope == "hidden_matched" else planning.eta
        return plan_logits_hidden(
            hidden[None], head.weight, head.bias, fut, eta=eta, steps=planning.steps, temperature=temperature
        )[0]
    names = scope_parameter_names(model, scope.split(":", 1)[1])
    return plan_logits_parameters(
        model, input_ids, future, names, eta=planning.eta, steps=planning.steps, temperature=temperature
    )


def compare_scopes(scorer: Any, cases: list[tuple[list[int], list[int]]], scopes: list[str]) -> dict[str, dict]:
    """Per scope, the mean over cases of its CPU seconds, reward gain and (against ``param:all``, when measured)
    logit-change correlation, KL and top-50 overlap."""
    import torch

    model = causal_lm(scorer).model
    planning, xi = scorer.config.planning, scorer.config.cloze.temperature
    results: dict[str, dict[str, list[float]]] = {s: {k: [] for k in KEYS} for s in scopes}
    for ids, future in cases:
        input_ids = torch.tensor([ids])
        with torch.no_grad():
            out = model(input_ids, output_hidden_states=True)
        base, hidden = out.logits[0, -1], out.hidden_states[-1][0, -1]

        def reward(z: torch.Tensor) -> float:
            return float(torch.log_softmax(z / xi, -1)[torch.tensor(future)].sum())

        planned = {}
        for scope in scopes:
            started = time.process_time()
            planned[scope] = planned_logits(scope, model, base, hidden, input_ids, future, planning, xi).detach()
            results[scope]["cpu_s"].append(time.process_time() - started)
        reference = planned.get("param:all")
        for scope, z in planned.items():
            results[scope]["gain"].append(reward(z) - reward(base))
            if reference is None:
                continue
            a, b = z - base, reference - base
            r = torch.corrcoef(torch.stack([a, b]))[0, 1] if scope != "none" else torch.tensor(0.0)
            results[scope]["r"].append(float(r))
            log_ref, log_z = torch.log_softmax(reference / xi, -1), torch.log_softmax(z / xi, -1)
            results[scope]["kl"].append(float((log_ref.exp() * (log_ref - log_z)).sum()))
            top_ref, top_z = set(reference.topk(50).indices.tolist()), set(z.topk(50).indices.tolist())
            results[scope]["top50_overlap"].append(len(top_ref & top_z) / 50)
    return {
        scope: {
            "cases": len(values["cpu_s"]),
            **{k: round(sum(v) / len(v), 4) if v else None for k, v in values.items()},
        }
        for scope, values in results.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default=str(REPO / "configs" / "mars" / "offline.yaml"))
    parser.add_argument("--data", type=Path, default=None, help="ROC JSONL (default: the shared data's)")
    parser.add_argument("--n", type=int, default=3, help="ROC references (one blank each)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--ratio", type=float, default=0.4, help="masking ratio of the template planned on")
    parser.add_argument("--skip-all", action="store_true", help="skip the slow all-parameter update (no fidelity)")
    parser.add_argument(
        "--scopes",
        nargs="*",
        default=SCOPES,
        help="none, head, head*X (eta times X), hidden, hidden_matched, param:head, param:last_layers:N",
    )
    parser.add_argument("--name", default="mars_planning", help="result file stem under bench/results")
    args = parser.parse_args()

    import torch

    import mars

    torch.set_num_threads(args.threads)
    scorer = mars.build(args.config, overrides={"cache_dir": None, "progress": False})
    refs, srcs = roc_references(args.n, args.data)
    scopes = [s for s in args.scopes if s != "param:all"] + ([] if args.skip_all else ["param:all"])
    summary = compare_scopes(scorer, planning_cases(scorer, refs, srcs, args.ratio), scopes)
    rows = [{"scope": scope, **values} for scope, values in summary.items()]
    notes = [
        "cpu_s: CPU seconds of one planned token; r, kl, top50_overlap: against the all-parameter update "
        "(param:all, the paper's), empty with --skip-all; gain: log-probability of the text after the blank, "
        "planned minus unplanned.",
        f"{args.n} ROC references, the first inner blank of each template nearest ratio {args.ratio}; "
        f"{args.threads} torch thread(s).",
    ]
    write_results(
        args.name,
        {
            "config": str(args.config),
            "n": args.n,
            "ratio": args.ratio,
            "threads": args.threads,
            "signature": scorer.signature(),
        },
        rows,
        ["scope", "cases", *KEYS],
        "MARS self-planning: cost and fidelity by scope",
        notes,
    )


if __name__ == "__main__":
    main()
