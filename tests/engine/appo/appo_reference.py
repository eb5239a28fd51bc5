"""APPO's loss and its gradient computed by python3-torch from the formulas in docs/appo.md,
compared with what the engine computed (tests/engine/appo/appo_loss_test.cc).

usage: appo_reference.py CASE_DIR...

Each CASE_DIR holds data.pt: a TorchScript container whose buffers are a linear policy net's
parameters (policy_head, value_head, and log_std for box actions), a minibatch, its targets,
the loss settings, and the engine's loss terms and gradients. The net is linear so that this
file can write its forward pass out without the engine's code. Prints one line per case; exits
1 on the first difference above 1e-5.
"""
import math
import os
import sys

import torch

TOLERANCE = 1e-5


def fail(case, what):
    print(f"appo_reference: {case}: FAIL: {what}")
    sys.exit(1)


def close(case, name, got, want):
    got = torch.as_tensor(got, dtype=torch.float64)
    want = torch.as_tensor(want, dtype=torch.float64)
    if got.shape != want.shape:
        fail(case, f"{name}: shape {tuple(got.shape)} against the engine's {tuple(want.shape)}")
    diff = (got - want).abs().max().item() if got.numel() else 0.0
    if not diff <= TOLERANCE * max(1.0, want.abs().max().item()):
        fail(case, f"{name}: the reference {got.tolist()} differs from the engine's {want.tolist()} by {diff}")
    return diff


def check(case):
    d = torch.jit.load(os.path.join(case, "data.pt"))
    get = lambda name: getattr(d, name).to(torch.float64)
    box = hasattr(d, "param_log_std")
    w_p = get("param_policy_head_weight").requires_grad_()
    b_p = get("param_policy_head_bias").requires_grad_()
    w_v = get("param_value_head_weight").requires_grad_()
    b_v = get("param_value_head_bias").requires_grad_()
    params = {"policy_head_weight": w_p, "policy_head_bias": b_p, "value_head_weight": w_v, "value_head_bias": b_v}
    if box:
        log_std = get("param_log_std").requires_grad_()
        params["log_std"] = log_std

    obs = get("obs")                     # [T+1, B, O]
    T = obs.shape[0] - 1
    x = obs[:T]
    out = x @ w_p.T + b_p                # logits or mean, [T, B, A]
    values = (x @ w_v.T + b_v).squeeze(-1)
    if box:
        actions = get("actions")[:T]
        std = log_std.exp()
        logpi = (-0.5 * ((actions - out) / std) ** 2 - log_std - 0.5 * math.log(2 * math.pi)).sum(-1)
        entropy = (0.5 + 0.5 * math.log(2 * math.pi) + log_std).sum() * torch.ones_like(logpi)
    else:
        actions = getattr(d, "actions")[:T].long()
        logp_all = torch.log_softmax(out, -1)
        logpi = logp_all.gather(-1, actions.unsqueeze(-1)).squeeze(-1)
        entropy = -(logp_all.exp() * logp_all).sum(-1)

    valid = get("valid")[:T]
    n = max(valid.sum().item(), 1.0)
    mean = lambda t: (t * valid).sum() / n
    clip, value_clip = get("clip").item(), get("value_clip").item()
    kl_coef, value_cost = get("kl_coef").item(), get("value_cost").item()
    entropy_cost = get("entropy_cost").item()

    log_ratio = torch.where(valid > 0, logpi - get("behaviour_logp")[:T], torch.zeros_like(logpi))
    ratio = log_ratio.exp()
    adv = get("advantages")
    if get("normalize").item() > 0:
        m = mean(adv)
        adv = (adv - m) / (((adv - m) ** 2 * valid).sum() / (n - 1)).sqrt().add(1e-8)
    policy = -mean(torch.min(ratio * adv, ratio.clamp(1 - clip, 1 + clip) * adv))
    vs, old = get("vs"), get("old_values")
    err = (vs - values) ** 2
    if value_clip > 0:
        err = torch.max(err, (vs - (old + (values - old).clamp(-value_clip, value_clip))) ** 2)
    value = value_cost * 0.5 * mean(err)
    ent = -entropy_cost * mean(entropy)
    kl = kl_coef * mean((ratio - 1) - log_ratio)
    total = policy + value + ent + (kl if kl_coef > 0 else 0)
    total.backward()

    worst = max(close(case, "total", total.item(), get("loss_total").item()),
                close(case, "policy", policy.item(), get("loss_policy").item()),
                close(case, "value", value.item(), get("loss_value").item()),
                close(case, "entropy", ent.item(), get("loss_entropy").item()),
                close(case, "kl", kl.item() if kl_coef > 0 else 0.0, get("loss_kl").item()),
                close(case, "clip_fraction", mean(((ratio - 1).abs() > clip).double()).item(),
                      get("clip_fraction").item()))
    for name, p in params.items():
        worst = max(worst, close(case, "gradient of " + name, p.grad, get("grad_" + name)))
    clipped = mean(((ratio - 1).abs() > clip).double()).item()
    print(f"appo_reference: {case}: OK (max difference {worst:.3g}, clip fraction {clipped:.2f})")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        sys.exit(2)
    for case in sys.argv[1:]:
        check(case)


if __name__ == "__main__":
    main()
