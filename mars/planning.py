"""Reinforced self-planning (MARS eq. 3-6): nudge one decoding step toward the text that follows the blank.

Paper: k normalised gradient steps theta_d <- theta + eta * sum_i grad J(theta_d / xi) / ||grad J|| on the reward
r = sum_{w in future} log softmax(h_t . emb(w)), then decode from pi_{theta_d}. Updating all 135M-774M weights
per token is far too slow on a CPU (measured: ~5 CPU seconds per token for SmolLM2-135M, ``mars/README.md``; by
``bench/bench_mars_planning.py``, removed after its run; in git history at commit 6c42b7a), and the shared model
must never change. So the delta lives in one of two places and is never written to the model:

* ``head`` (default): a delta D on the output projection for the current position only. The gradient of the
  reward w.r.t. D is G h^T / xi with G = sum_w (onehot(w) - softmax(z / xi)), so a normalised step changes the
  logits by exactly ``eta * ||h|| * G / ||G||``. No matrix product at all: k softmaxes over the vocabulary.
  With twice the paper's eta its next-token distribution is the closest to the all-parameter update's of all
  the cheap deltas measured (benchmark table in ``mars/README.md``).
* ``hidden``: a delta on the last hidden state h (PPLM-style); each step needs two vocabulary-size products.

The parameter-delta reference (``plan_logits_parameters``: all weights, the last layers or the tied head, via
``torch.func.functional_call``) exists for the benchmark and tests; it too leaves the model untouched.

The importance weight eps = pi_d(a) / pi(a) of eq. 4 is a positive scalar per step, which the gradient
normalisation of eq. 6 divides out, so it cannot steer the update. We apply it where it has an effect, as the
truncated importance weight of Munos et al. (2016, the paper's citation): the sampling distribution is
pi(a) * min(eps(a), cap), i.e. planning may raise a token's probability at most ``cap``-fold over the LM.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch


def _future_gradient(logits: torch.Tensor, future_ids: torch.Tensor, temperature: float) -> torch.Tensor:
    """G = sum_w (onehot(w) - softmax(z / xi)) for each row of ``logits`` ([R, V]); future_ids [R, F], -1 = pad."""
    probs = torch.softmax(logits / temperature, dim=-1)
    valid = future_ids >= 0
    counts = valid.sum(dim=-1, keepdim=True).to(logits.dtype)
    grad = -counts * probs
    grad.scatter_add_(1, future_ids.clamp(min=0), valid.to(logits.dtype))
    return grad


def plan_logits_head(
    logits: torch.Tensor,
    hidden_norm: torch.Tensor,
    future_ids: torch.Tensor,
    *,
    eta: float,
    steps: int,
    temperature: float,
) -> torch.Tensor:
    """Planned logits for a head-only delta, in closed form. Shapes: logits [R, V], hidden_norm [R], future [R, F]."""
    planned = logits.clone()
    scale = (eta * hidden_norm).unsqueeze(-1)
    for _ in range(steps):
        grad = _future_gradient(planned, future_ids, temperature)
        norm = grad.norm(dim=-1, keepdim=True).clamp(min=1e-12)
        planned = planned + scale * grad / norm
    return planned


def plan_logits_hidden(
    hidden: torch.Tensor,
    output_weight: torch.Tensor,
    output_bias: torch.Tensor | None,
    future_ids: torch.Tensor,
    *,
    eta: float,
    steps: int,
    temperature: float,
) -> torch.Tensor:
    """Planned logits for a delta on the last hidden state. hidden [R, H], output_weight [V, H]."""
    delta = torch.zeros_like(hidden)
    for _ in range(steps):
        logits = torch.nn.functional.linear(hidden + delta, output_weight, output_bias)
        grad_logits = _future_gradient(logits, future_ids, temperature) / temperature
        grad = grad_logits @ output_weight
        delta = delta + eta * grad / grad.norm(dim=-1, keepdim=True).clamp(min=1e-12)
    return torch.nn.functional.linear(hidden + delta, output_weight, output_bias)


def sampling_probs(
    base_logits: torch.Tensor,
    planned_logits: torch.Tensor | None,
    *,
    temperature: float,
    importance_cap: float | None,
    banned: torch.Tensor | None = None,
    top_k: int = 0,
) -> torch.Tensor:
    """Distribution to sample from: pi_d truncated to ``cap * pi`` (renormalised), bans removed, then top-k."""
    base = torch.softmax(base_logits / temperature, dim=-1)
    if planned_logits is None:
        probs = base
    else:
        probs = torch.softmax(planned_logits / temperature, dim=-1)
        if importance_cap is not None:
            probs = torch.minimum(probs, importance_cap * base)
    if banned is not None:
        probs = probs.masked_fill(banned, 0.0)
    if top_k and top_k < probs.shape[-1]:
        top = torch.topk(probs, top_k, dim=-1)
        probs = torch.zeros_like(probs).scatter_(-1, top.indices, top.values)
    total = probs.sum(dim=-1, keepdim=True)
    if bool((total <= 0).any()):
        raise RuntimeError("no token left to sample after bans and truncation")
    return probs / total


def draw(probs: torch.Tensor, generators: Sequence[torch.Generator], top_k: int = 0) -> list[int]:
    """One token per row, each from its own generator (so a row's draw never depends on the other rows).

    With top-k the multinomial runs over the k kept entries only (same distribution, 1000x fewer numbers).
    """
    if len(generators) != probs.shape[0]:
        raise ValueError(f"{len(generators)} generators for {probs.shape[0]} rows")
    if top_k and top_k < probs.shape[-1]:
        top = torch.topk(probs, top_k, dim=-1)
        return [
            int(top.indices[i, torch.multinomial(top.values[i], 1, generator=g)].item())
            for i, g in enumerate(generators)
        ]
    return [int(torch.multinomial(probs[i], 1, generator=g).item()) for i, g in enumerate(generators)]


# --- parameter-delta reference, for the benchmark and tests only -------------------------------------------------


def scope_parameter_names(model: Any, scope: str) -> list[str]:
    """Names of the parameters a scope touches: ``all``, ``last_layers:N`` (+ final norm) or ``head``."""
    names = [n for n, _ in model.named_parameters()]
    if scope == "all":
        return names
    if scope == "head":
        head = model.get_output_embeddings().weight
        return [n for n, p in model.named_parameters() if p is head]
    if scope.startswith("last_layers:"):
        count = int(scope.split(":", 1)[1])
        n_layers = model.config.num_hidden_layers
        wanted = {str(i) for i in range(n_layers - count, n_layers)}
        picked = []
        for name in names:
            parts = name.split(".")
            for i, part in enumerate(parts[:-1]):
                if part in {"layers", "h"} and parts[i + 1] in wanted:
                    picked.append(name)
                    break
            else:
                if any(tag in name for tag in ("model.norm.", "ln_f.")):
                    picked.append(name)
        return picked
    raise ValueError(f"unknown parameter scope '{scope}'")


def plan_logits_parameters(
    model: Any,
    input_ids: torch.Tensor,
    future_ids: Sequence[int],
    names: Sequence[str],
    *,
    eta: float,
    steps: int,
    temperature: float,
) -> torch.Tensor:
    """Next-token logits after k normalised steps on a delta over the named parameters (eq. 6, literally).

    The model's own tensors are never written: the delta is added in ``functional_call``. Tied weights stay tied
    (a head delta also moves the input embeddings), as in the paper's full-model update.
    """
    from torch.func import functional_call

    params = dict(model.named_parameters())
    base = {n: params[n].detach() for n in names}
    delta = {n: torch.zeros_like(t) for n, t in base.items()}
    future = torch.tensor(list(future_ids), dtype=torch.long)
    for _ in range(steps):
        current = {n: (base[n] + delta[n]).requires_grad_(True) for n in names}
        logits = functional_call(model, current, (input_ids,)).logits[0, -1]
        reward = torch.log_softmax(logits / temperature, dim=-1)[future].sum()
        grads = torch.autograd.grad(reward, list(current.values()))
        norm = torch.sqrt(sum((g.double() ** 2).sum() for g in grads)).float().clamp(min=1e-12)
        for name, grad in zip(current, grads):
            delta[name] = delta[name] + eta * grad / norm
    with torch.no_grad():
        current = {n: base[n] + delta[n] for n in names}
        return functional_call(model, current, (input_ids,)).logits[0, -1]
