#!/usr/bin/env python3
"""Where the gradient reaches in a deep model: per-layer gradient norms from RUN/metrics.jsonl.

    scripts/layer-grads.py RUN [RUN...] [--steps 10,100,300] [--stack decoder] [--alpha A]

For each run and logged step: how many layers got an exactly zero gradient (below the smallest
normal float once denormals are flushed), the lowest layer with a non-zero one, and the norm at a
few depths (layer 1, 10 %, 50 %, 90 %, last). Reads `grad_norm_layer.<stack>` (docs/metrics.md).

With --alpha A (the residual weight: 1 for Post-LN, (2N)^(1/4) for a DeepNorm decoder-only
model) it also prints the LayerNorm estimate of the same profile: a sub-layer LN(αx + G(x))
passes the gradient on scaled by about α/a, a = ‖αx + G(x)‖/√d its logged input norm
(`ln_input_norm`), if G's own Jacobian is ignored; so log10(g_k / g_top) ≈ Σ_{l>k} Σ_norms
log10(α / a_l), against the measured log10 of the ratio. (Not meaningful for Pre-LN: its
LayerNorms are off the residual path, and `ln_input_norm` there is the residual stream.)
"""
import argparse
import json
import math
import sys


def fail(msg):
    print(f"layer-grads: {msg}", file=sys.stderr)
    sys.exit(2)


def records(run):
    path = f"{run}/metrics.jsonl"
    try:
        with open(path) as f:
            rows = [json.loads(line) for line in f]
    except (OSError, json.JSONDecodeError) as e:
        fail(f"cannot read {path}: {e} (expected a run directory written by stx train)")
    return [j for j in rows if "event" not in j and "grad_norm_layer" in j]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--steps", default="", help="comma-separated steps (default: every logged step)")
    ap.add_argument("--stack", default="decoder", help="encoder or decoder (default decoder)")
    ap.add_argument("--alpha", type=float, help="residual weight α for the LayerNorm estimate (1 for Post-LN)")
    a = ap.parse_args()
    try:
        steps = {int(s) for s in a.steps.split(",") if s}
    except ValueError:
        fail(f"--steps '{a.steps}': expected integers like 10,100,300")
    if a.alpha is not None and not a.alpha > 0:
        fail(f"--alpha {a.alpha}: expected a positive residual weight (1 for Post-LN, (2N)^(1/4) for DeepNorm)")
    table = []  # built whole before the first line is printed: a bad run leaves no partial table
    for run in a.runs:
        for j in records(run):
            if steps and j["step"] not in steps:
                continue
            g = j["grad_norm_layer"].get(a.stack)
            if not g:
                fail(f"{run}: no '{a.stack}' stack in grad_norm_layer (the model's stacks: {', '.join(j['grad_norm_layer'])})")
            n = len(g)
            zero = sum(1 for x in g if x == 0.0)
            lowest = next((i + 1 for i, x in enumerate(g) if x > 0.0), None)
            at = [g[min(n - 1, max(0, round(f * n) - 1))] for f in (1 / n, 0.1, 0.5, 0.9, 1.0)]
            table.append(f"| {run.rstrip('/').split('/')[-1]} | {j['step']} | {zero} of {n} | {lowest} | "
                         + " | ".join(f"{x:.2g}" for x in at) + " |")
    estimate = estimate_table(a, steps) if a.alpha is not None else None
    print("| run | step | layers with zero gradient | lowest non-zero layer | layer 1 | 10 % | 50 % | 90 % | last |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(table))
    if estimate is not None:
        print()
        print(estimate)


def estimate_table(a, steps):
    """Predicted (LN input norms) and measured log10(g_k / g_top) at 80/90/95/99 % of the stack."""
    out = ["| run | step | layer | predicted log10(g / g_top) | measured |", "|---|---:|---:|---:|---:|"]
    for run in a.runs:
        for j in records(run):
            if (steps and j["step"] not in steps) or "ln_input_norm" not in j:
                continue
            g = j["grad_norm_layer"][a.stack]
            norms = list(j["ln_input_norm"].get(a.stack, {}).values())
            n = len(g)
            if not norms or any(len(x) != n for x in norms) or g[-1] <= 0:
                fail(f"{run}: step {j['step']} has no per-layer LN input norms of '{a.stack}' to estimate from")
            for f in (0.8, 0.9, 0.95, 0.99):
                k = min(n - 1, max(0, round(f * n) - 1))
                pred = sum(math.log10(a.alpha / x[l]) for l in range(k + 1, n) for x in norms)
                meas = f"{math.log10(g[k] / g[-1]):.1f}" if g[k] > 0 else "zero"
                out.append(f"| {run.rstrip('/').split('/')[-1]} | {j['step']} | {k + 1} | {pred:.1f} | {meas} |")
    return "\n".join(out)


if __name__ == "__main__":
    main()
