"""Parity of stx::Optimizer with torch.optim (2.11's default CPU path, foreach=False) over 5 steps:
every element bit-equal, for the fused loop (kernels/adam.h) and for the ATen ops alike.

Generates parameters and gradients (numpy seed), runs torch.optim.Adam / AdamW / SGD with
weight decay and a changing learning rate, and writes the initial parameters, the gradients of
every step and torch's parameters after every step into a safetensors file (safetensors_io.py).
The C++ test OptimizerParity.MatchesTorchOptim (build/tests/stx_tests, skipped unless
STX_OPT_PARITY_FILE is set) replays the gradients through stx::Optimizer and requires every
result within 1e-6 (relative to max(1, |expected|)). The file also holds a copy of the adamw
case with one expected value moved by 1e-3, flagged "perturbed", which the C++ test must report
as out of tolerance (so the comparison cannot pass vacuously).

Usage: python3 tests/ref/test_optimizer_parity.py build/stx   (exit status 0 on success)
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_io  # noqa: E402

STEPS = 5
LRS = [1e-3, 3e-3, 2e-2, 5e-3, 1e-1]  # a changing learning rate, as from a schedule
# Small tensors (ATen's scalar tails) and one large enough for its vector loops and several of
# the fused loop's blocks.
SHAPES = {"w": (7, 5), "b": (5,), "emb": (3, 4, 2), "big": (257, 41)}

CASES = [
    dict(name="adam", optimizer="adam", betas=[0.9, 0.98], eps=1e-8, weight_decay=1e-2, momentum=0.0),
    dict(name="adam_nowd", optimizer="adam", betas=[0.9, 0.999], eps=1e-6, weight_decay=0.0, momentum=0.0),
    dict(name="adamw", optimizer="adamw", betas=[0.9, 0.98], eps=1e-8, weight_decay=0.1, momentum=0.0),
    # AdamW with decay independent of the rate (train.weight_decay_mode independent, peak rate
    # train.lr = LR_PEAK): torch.optim.AdamW with weight_decay λ/LR_PEAK decays by 1 − η_t·λ/LR_PEAK.
    dict(name="adamw_independent", optimizer="adamw", betas=[0.9, 0.95], eps=1e-8, weight_decay=0.1, momentum=0.0,
         weight_decay_mode="independent", peak_lr=2e-2),
    dict(name="sgd", optimizer="sgd", betas=[0.9, 0.98], eps=1e-8, weight_decay=1e-2, momentum=0.9),
    dict(name="sgd_plain", optimizer="sgd", betas=[0.9, 0.98], eps=1e-8, weight_decay=0.0, momentum=0.0),
]


def torch_optimizer(case, params):
    if case["optimizer"] == "adam":
        return torch.optim.Adam(params, lr=LRS[0], betas=tuple(case["betas"]), eps=case["eps"],
                                weight_decay=case["weight_decay"], foreach=False)
    if case["optimizer"] == "adamw":
        wd = case["weight_decay"]
        if case.get("weight_decay_mode") == "independent":
            wd = wd / case["peak_lr"]
        return torch.optim.AdamW(params, lr=LRS[0], betas=tuple(case["betas"]), eps=case["eps"],
                                 weight_decay=wd, foreach=False)
    return torch.optim.SGD(params, lr=LRS[0], momentum=case["momentum"],
                           weight_decay=case["weight_decay"], foreach=False)


def build(rng):
    tensors, cases = {}, []
    for case in CASES:
        name = case["name"]
        params = {}
        for p, shape in SHAPES.items():
            init = rng.standard_normal(shape).astype(np.float32)
            tensors[f"{name}.init.{p}"] = init.copy()
            params[p] = torch.nn.Parameter(torch.from_numpy(init.copy()))
        opt = torch_optimizer(case, list(params.values()))
        for s in range(1, STEPS + 1):
            for p, x in params.items():
                # gradients of very different scales, including exact zeros
                g = (rng.standard_normal(x.shape) * 10.0 ** rng.integers(-4, 2)).astype(np.float32)
                g[rng.random(x.shape) < 0.1] = 0.0
                tensors[f"{name}.grad.{s}.{p}"] = g
                x.grad = torch.from_numpy(g.copy())
            for group in opt.param_groups:
                group["lr"] = LRS[s - 1]
            opt.step()
            for p, x in params.items():
                tensors[f"{name}.expect.{s}.{p}"] = x.detach().numpy().copy()
        cases.append(dict(case, lr=LRS, params=list(SHAPES)))
    return tensors, cases


def add_perturbed(tensors, cases, source="adamw", key="expect.3.w", index=(2, 1)):
    """A copy of case `source` with one expected value moved by 1e-3, flagged "perturbed": the
    C++ test must report it (so the comparison cannot pass vacuously)."""
    name = source + "_perturbed"
    for k in [k for k in tensors if k.startswith(source + ".")]:
        tensors[name + k[len(source):]] = tensors[k].copy()
    tensors[f"{name}.{key}"][index] += 1e-3
    case = next(c for c in cases if c["name"] == source)
    cases.append(dict(case, name=name, perturbed=True))
    return name, key


def main():
    if len(sys.argv) < 2:
        print("usage: test_optimizer_parity.py build/stx")
        return 2
    binary = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "tests", "stx_tests")
    if not os.path.exists(binary):
        print(f"FAIL: gtest binary not found at {binary}")
        return 1
    tensors, cases = build(np.random.default_rng(1234))
    bad_name, bad_key = add_perturbed(tensors, cases)
    with tempfile.TemporaryDirectory(prefix="stx_optparity_") as tmp:
        path = os.path.join(tmp, "parity.safetensors")
        safetensors_io.save(path, tensors, {"cases": json.dumps(cases)})
        env = dict(os.environ, STX_OPT_PARITY_FILE=path)
        env.setdefault("OMP_NUM_THREADS", "1")
        r = subprocess.run([binary, "--gtest_filter=OptimizerParity.*"], env=env, capture_output=True,
                           text=True, timeout=300)
    out = r.stdout + r.stderr
    lines = [line for line in out.splitlines() if line.startswith("[parity]")]
    for line in lines:
        print(line)
    failures = []
    if "the fused loop's square root is torch.sqrt's (MKL vmsSqrt): yes" not in out:
        failures.append("the fused Adam loop did not find MKL's vmsSqrt (torch.sqrt's) in LibTorch")
    if r.returncode != 0 or "[  PASSED  ] 1 test" not in out or "SKIPPED" in out:
        failures.append(f"stx::Optimizer differs from torch.optim (exit {r.returncode}):\n{out[-4000:]}")
    for c in cases:
        for impl in ("fused", "aten"):
            if not any(line.startswith(f"[parity] {c['name']} ({impl}):") for line in lines):
                failures.append(f"case {c['name']} ({impl}) was not reported by the C++ test")
    step, p = bad_key.split(".")[1:]
    for impl in ("fused", "aten"):
        if not any(line.startswith(f"[parity] {bad_name} ({impl}): detected") and f"step {step} {p} " in line
                   for line in lines):
            failures.append(f"the perturbed expectation {bad_name}.{bad_key} was not detected ({impl})")
    for f in failures:
        print("FAIL:", f)
    if not failures:
        print(f"OK: {len(CASES)} optimizer cases x {STEPS} steps bit-equal to torch.optim {torch.__version__} "
              "(fused loop and ATen ops); a 1e-3 error is detected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
