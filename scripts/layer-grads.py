#!/usr/bin/env python3
"""Where the gradient reaches in a deep model: per-layer gradient norms from RUN/metrics.jsonl.

    scripts/layer-grads.py RUN [RUN...] [--steps 10,100,300] [--stack decoder]

For each run and logged step: how many layers got an exactly zero gradient (below the smallest
normal float once denormals are flushed), the lowest layer with a non-zero one, and the norm at a
few depths (layer 1, 10 %, 50 %, 90 %, last). Reads `grad_norm_layer.<stack>` (docs/metrics.md).
"""
import argparse
import json
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
    a = ap.parse_args()
    try:
        steps = {int(s) for s in a.steps.split(",") if s}
    except ValueError:
        fail(f"--steps '{a.steps}': expected integers like 10,100,300")
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
    print("| run | step | layers with zero gradient | lowest non-zero layer | layer 1 | 10 % | 50 % | 90 % | last |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(table))

if __name__ == "__main__":
    main()
