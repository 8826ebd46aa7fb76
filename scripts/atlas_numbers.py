#!/usr/bin/env python3
"""The derived numbers docs/atlas.md quotes, from docs/atlas/atlas.json (python3, no packages).

    python3 scripts/atlas_numbers.py table DEPTH   # final bits/byte per scheme × rate at DEPTH (markdown)
    python3 scripts/atlas_numbers.py seeds         # 6-layer seed spread per scheme: mean, max |ℓ(s1) − ℓ(s0)|
    python3 scripts/atlas_numbers.py times         # minutes per run: per depth, and per scheme at each depth
    python3 scripts/atlas_numbers.py warmup        # warm-up vs no warm-up at each depth (the default rate)
    python3 scripts/atlas_numbers.py post          # Post-LN and its modifiers: final loss per rate and depth

A run's loss is its final validation bits per byte; "plateau" is within 0.1 bit of the corpus's
unigram entropy (or above), as in stx's report (src/stx/atlas/atlas_summary.h). --atlas DIR reads
DIR/atlas.json instead.
"""
import json
import os
import statistics
import sys

args = sys.argv[1:]
atlas = "docs/atlas"
if "--atlas" in args:
    i = args.index("--atlas")
    atlas = args[i + 1]
    del args[i:i + 2]
path = os.path.join(atlas, "atlas.json")
if not args or args[0] not in ("table", "seeds", "times", "warmup", "post"):
    sys.exit(__doc__)
try:
    A = json.load(open(path))
except (OSError, ValueError) as e:
    print(f"atlas_numbers: cannot read {path}: {e}", file=sys.stderr)
    sys.exit(2)
U = A["unigram_entropy_bits"]
RUNS = A["runs"]
SCHEMES = A["plan"]["schemes"]
RATES = A["plan"]["lrs"]


def ended(r):
    return r["outcome"] in ("converged", "stalled", "diverged")


def loss(r):
    """The final loss of a run that ended without diverging or spiking (None otherwise)."""
    if not ended(r) or r["outcome"] == "diverged" or r["reading"].get("failure") == "loss spike":
        return None
    return r["reading"].get("final_bpb")


def text(r):
    rd = r["reading"]
    if r["outcome"] == "diverged":
        return f"diverged (step {r['step']})"
    b = rd.get("final_bpb")
    if rd.get("failure") == "loss spike":
        return f"spike ({rd.get('failure_step')})" + (f" → {b:.3f}" if b is not None else "")
    if b is None:
        return f"{r['outcome']} (no reading)"
    return f"{b:.3f}" + (" (plateau)" if b >= U - 0.1 else "")


def runs(scheme=None, depth=None, seed=0, warmup=True):
    return [r for r in RUNS if ended(r) and (scheme is None or r["scheme"] == scheme)
            and (depth is None or r["depth"] == depth) and r["seed"] == seed and r["warmup"] == warmup]


def rate(x):
    return f"{x:.0e}".replace("e-0", "e-")


cmd = args[0]
if cmd == "table":
    D = int(args[1]) if len(args) > 1 else 96
    print(f"final bits/byte at {D} layers (unigram entropy {U:.3f}; bold: the best that learned)\n")
    print("| scheme | " + " | ".join(rate(x) for x in RATES) + " |")
    print("|---" * (1 + len(RATES)) + "|")
    for s in SCHEMES:
        rs = {r["lr"]: r for r in runs(s, D)}
        if not rs:
            continue
        ok = [loss(r) for r in rs.values() if loss(r) is not None and loss(r) < U - 0.1]
        best = min(ok) if ok else None
        cells = []
        for x in RATES:
            r = rs.get(x)
            t = "–" if r is None else text(r)
            cells.append(f"**{t}**" if r is not None and best is not None and loss(r) == best else t)
        print(f"| {s} | " + " | ".join(cells) + " |")
elif cmd == "seeds":
    D = min(r["depth"] for r in RUNS)
    print(f"seed spread at {D} layers: |ℓ(seed 1) − ℓ(seed 0)| over the rates where both learned\n")
    allv = []
    for s in SCHEMES:
        a = {r["lr"]: loss(r) for r in runs(s, D, 0)}
        b = {r["lr"]: loss(r) for r in runs(s, D, 1)}
        d = [abs(a[x] - b[x]) for x in a if x in b and a[x] is not None and b[x] is not None
             and a[x] < U - 0.1 and b[x] < U - 0.1]
        allv += d
        if d:
            print(f"{s:14s} n={len(d)}  mean {statistics.mean(d):.3f}  median {statistics.median(d):.3f}  "
                  f"max {max(d):.3f}")
    if allv:
        print(f"\nall: n={len(allv)}  median {statistics.median(allv):.3f}  mean {statistics.mean(allv):.3f}  "
              f"max {max(allv):.3f}")
elif cmd == "times":
    for D in sorted({r["depth"] for r in RUNS}):
        m = [r["seconds"] / 60 for r in RUNS if ended(r) and r["depth"] == D and r["outcome"] != "diverged"]
        if not m:
            continue
        tot = sum(r["seconds"] for r in RUNS if ended(r) and r["depth"] == D) / 3600
        print(f"{D} layers: {len(m)} runs that ran all steps, minutes median {statistics.median(m):.1f} "
              f"(min {min(m):.1f}, max {max(m):.1f}); all ended runs {tot:.1f} run-hours")
        if D >= 96:
            for s in SCHEMES:
                t = [f"{r['seconds'] / 60:.1f}" for r in RUNS if ended(r) and r["depth"] == D and r["scheme"] == s
                     and r["warmup"]]
                if t:
                    print(f"    {s:14s} " + " ".join(t))
elif cmd == "warmup":
    for D in sorted({r["depth"] for r in RUNS}):
        nw = runs(depth=D, warmup=False)
        if not nw:
            continue
        print(f"{D} layers: no warm-up at {rate(nw[0]['lr'])} vs warm-up at the same rate (bits/byte)")
        for r in nw:
            w = [x for x in runs(r["scheme"], D) if x["lr"] == r["lr"]]
            a, b = loss(r), (loss(w[0]) if w else None)
            diff = f"{a - b:+.3f}" if a is not None and b is not None else "n/a"
            print(f"    {r['scheme']:14s} without {text(r):22s} with {text(w[0]) if w else '–':22s} {diff}")
elif cmd == "post":
    for s in [x for x in SCHEMES if x in ("post", "sigma") or x.startswith("post-") and x != "post-init"]:
        for D in sorted({r["depth"] for r in RUNS}):
            rs = sorted(runs(s, D), key=lambda r: r["lr"])
            if rs:
                print(f"{s:14s} {D:4d}L  " + "  ".join(f"{rate(r['lr'])}:{text(r)}" for r in rs))
