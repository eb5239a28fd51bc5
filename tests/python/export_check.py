"""Checks modules written by `moonseed export` (models/export.h) the way a PyTorch user loads them.

usage: export_check.py CASE_DIR...

Each CASE_DIR holds policy.pt (the exported module) and data.pt (a TorchScript container whose
buffers are the inputs and the learner's outputs, written by tests/models/export_check.h). For
each case: torch.jit.load with the spec as an extra file, the spec agrees with the module's
moonseed_spec attribute and names the inputs and outputs of its algorithm, and the module's
outputs on the inputs equal the learner's within 1e-5 (R2D2 and recurrent V-trace: two calls, the
state of the first carried into the second). Prints one line per case; exits 1 on the first failure.
"""
import json
import os
import sys

import torch

TOLERANCE = 1e-5
# Algorithms whose export is a policy net (logits or mean, and value): the actor-critics.
POLICY_ALGOS = ("vtrace", "appo")


def fail(case, what):
    print(f"export_check: {case}: FAIL: {what}")
    sys.exit(1)


def close(case, name, got, want):
    if got.shape != want.shape:
        fail(case, f"{name} has shape {tuple(got.shape)}, the learner's {tuple(want.shape)}")
    diff = (got - want).abs().max().item() if got.numel() else 0.0
    if not diff <= TOLERANCE:
        fail(case, f"{name} differs from the learner's by {diff}")
    return diff


def check(case):
    extra = {"moonseed/spec.json": ""}
    policy = torch.jit.load(os.path.join(case, "policy.pt"), _extra_files=extra)
    text = extra["moonseed/spec.json"]
    text = text.decode() if isinstance(text, bytes) else text  # bytes in PyTorch 1.13
    spec = json.loads(text)
    if policy.moonseed_spec != text:
        fail(case, "the moonseed_spec attribute differs from moonseed/spec.json")
    data = torch.jit.load(os.path.join(case, "data.pt"))
    for key in ("env_id", "observation", "action", "preprocessing", "model", "run_id", "checkpoint"):
        if key not in spec:
            fail(case, f"the spec has no {key}: {spec}")
    obs_dtype = {"uint8": torch.uint8, "float32": torch.float32}[spec["observation"]["dtype"]]
    worst = 0.0
    with torch.no_grad():
        if spec["algo"] in POLICY_ALGOS and spec["inputs"] == ["obs", "prev_action", "prev_reward", "state"]:
            discrete = spec["action"]["kind"] == "discrete"
            if spec["outputs"] != ["logits" if discrete else "mean", "value", "state"]:
                fail(case, f"outputs {spec['outputs']}")
            state = policy.initial_state(data.obs1.shape[0])
            close(case, "initial h", state[0], data.h0)
            close(case, "initial c", state[1], data.c0)
            out1, value1, state = policy(data.obs1, data.prev_action1, data.prev_reward1, state)
            out2, value2, state = policy(data.obs2, data.prev_action2, data.prev_reward2, state)
            worst = max(close(case, "call 1", out1, data.out1), close(case, "value of call 1", value1, data.value1),
                        close(case, "call 2", out2, data.out2), close(case, "value of call 2", value2, data.value2),
                        close(case, "h after call 2", state[0], data.h2),
                        close(case, "c after call 2", state[1], data.c2))
            if not discrete:
                worst = max(worst, close(case, "log_std", policy.log_std, data.log_std))
        elif spec["algo"] in POLICY_ALGOS:
            discrete = spec["action"]["kind"] == "discrete"
            if spec["outputs"] != ["logits" if discrete else "mean", "value"] or spec["inputs"] != ["obs"]:
                fail(case, f"inputs {spec['inputs']} and outputs {spec['outputs']}")
            if data.obs.dtype != obs_dtype or list(data.obs.shape[1:]) != spec["observation"]["shape"]:
                fail(case, f"observations {data.obs.dtype} {tuple(data.obs.shape)} do not fit the spec")
            out, value = policy(data.obs)
            worst = max(close(case, spec["outputs"][0], out, data.out), close(case, "value", value, data.value))
            if not discrete:
                worst = max(worst, close(case, "log_std", policy.log_std, data.log_std))
        elif spec["algo"] == "r2d2":
            if spec["outputs"] != ["q_values", "state"]:
                fail(case, f"outputs {spec['outputs']}")
            state = policy.initial_state(data.obs1.shape[0])
            close(case, "initial h", state[0], data.h0)
            close(case, "initial c", state[1], data.c0)
            q1, state = policy(data.obs1, data.prev_action1, data.prev_reward1, state)
            q2, state = policy(data.obs2, data.prev_action2, data.prev_reward2, state)
            worst = max(close(case, "q_values of call 1", q1, data.q1), close(case, "q_values of call 2", q2, data.q2),
                        close(case, "h after call 2", state[0], data.h2),
                        close(case, "c after call 2", state[1], data.c2))
        else:
            fail(case, f"unknown algo {spec['algo']!r}")
    print(f"export_check: {case}: OK ({spec['algo']} {spec['env_id']}, max difference {worst:.3g})")


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    for case in sys.argv[1:]:
        check(case)
    return 0


if __name__ == "__main__":
    sys.exit(main())
