#!/usr/bin/env python3
"""Every number docs/atlas.md states, recomputed from docs/atlas/atlas.json (python3, no packages).

    python3 scripts/atlas_numbers.py table DEPTH     # final bits/byte per scheme × rate, seed 0 (markdown)
    python3 scripts/atlas_numbers.py cells DEPTH     # per scheme: each rate's seeds, mean and min–max
    python3 scripts/atlas_numbers.py rank DEPTH [REF]  # best rate (≥ 3 seeds) per scheme, paired vs REF (pre)
    python3 scripts/atlas_numbers.py bestrate        # each seed's best rate per scheme and depth
    python3 scripts/atlas_numbers.py spread          # seed spread |ℓ(k) − ℓ(0)| per depth: median, p90, max
    python3 scripts/atlas_numbers.py sensitivity DEPTH  # Wortsman's LR sensitivity per seed, all rates and ≥ 1e-3
    python3 scripts/atlas_numbers.py reach DEPTH     # gradient reach at update 10: runs that learned vs the rest
    python3 scripts/atlas_numbers.py labels          # outcomes per depth × rate; curve rule vs reach fallback
    python3 scripts/atlas_numbers.py times           # minutes per run per depth; run-hours
    python3 scripts/atlas_numbers.py warmup          # warm-up vs none at the default rate, per depth
    python3 scripts/atlas_numbers.py post            # Post-LN and its modifiers: final loss per rate and depth
    python3 scripts/atlas_numbers.py update PAGE     # rewrite PAGE's generated blocks
    python3 scripts/atlas_numbers.py verify PAGE     # exit 1 if a block is stale or a number is in no block

Statistics: scripts/atlas_stats.py (paired by seed; "resolved" only when n ≥ 3 and every paired
difference has one sign). A generated block in a page is

    <!-- atlas_numbers: ARGS -->
    ```
    (the output of `atlas_numbers.py ARGS`)
    ```

and every decimal number from "## At a glance" through "## Findings" must appear in one of its
blocks.
--atlas DIR reads DIR/atlas.json instead of docs/atlas/atlas.json.
"""
import io
import json
import os
import re
import statistics
import sys
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import atlas_stats as st  # noqa: E402

COMMANDS = ("table", "cells", "rank", "bestrate", "spread", "sensitivity", "reach", "labels", "times", "warmup", "post",
            "update", "verify")


def text(a, r):
    rd = r["reading"]
    b = rd.get("final_bpb")
    if r["outcome"] in ("diverged", "diverges") and b is None:
        return f"diverges ({r['step']})"
    if rd.get("failure") == "loss spike":
        return f"spike ({rd.get('failure_step')})" + (f" → {b:.3f}" if b is not None else "")
    if b is None:
        return f"{r['outcome']} (no reading)"
    return f"{b:.3f}" + (" (plateau)" if b >= a.cut else "")


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def table(a, D):
    print(f"final bits/byte at {D} layers, seed 0 (unigram entropy {a.U:.3f}; bold: the best that learned)\n")
    print("| scheme | " + " | ".join(st.fmt_rate(x) for x in a.rates) + " |")
    print("|---" * (1 + len(a.rates)) + "|")
    for s in a.schemes:
        rs = {lr: a.seeds(s, D, lr).get(0) for lr in a.rates}
        if not any(rs.values()):
            continue
        ok = [a.loss(r) for r in rs.values() if r is not None and a.loss(r) is not None]
        best = min(ok) if ok else None
        cells = []
        for lr in a.rates:
            r = rs[lr]
            t = "–" if r is None else text(a, r)
            cells.append(f"**{t}**" if r is not None and best is not None and a.loss(r) == best else t)
        print(f"| {s} | " + " | ".join(cells) + " |")


def cells(a, D):
    print(f"{D} layers: final bits/byte per seed (–: did not learn), mean and [min, max] where all learned\n")
    for s in a.schemes:
        rows = []
        for lr in a.rates:
            n, ls = a.cell(s, D, lr)
            if n < 2:
                continue
            v = " ".join("–" if x is None else f"{x:.3f}" for x in ls.values())
            full = all(x is not None for x in ls.values())
            m = (f"mean {statistics.mean(ls.values()):.3f} [{min(ls.values()):.3f}, {max(ls.values()):.3f}]"
                 if full else "")
            rows.append(f"  {st.fmt_rate(lr)} n={n}: {v}  {m}")
        if rows:
            print(s)
            print("\n".join(rows))


def rank(a, D, ref="pre"):
    rb = a.best(ref, D)
    print(f"{D} layers: best rate per scheme over ≥ {st.MIN_SEEDS} seeds that all learned (mean [min, max]); "
          f"paired difference to {ref} at its best ({'none' if rb is None else st.fmt_rate(rb[0])}); "
          f"'no difference' unless every seed agrees\n")
    rows = []
    for s in a.schemes:
        b = a.best(s, D)
        if b is None:
            continue
        lr, ls = b
        v = list(ls.values())
        p = st.Atlas.paired(ls, rb[1]) if rb is not None and s != ref else None
        verdict = "" if p is None else ("resolved" if st.Atlas.resolved(p) else "no difference")
        rows.append((statistics.mean(v), f"{s:14s} {st.fmt_rate(lr):5s} {statistics.mean(v):.3f} "
                     f"[{min(v):.3f}, {max(v):.3f}] n={len(v)}  vs {ref}: {st.fmt_interval(p)} {verdict}"))
    for _, line in sorted(rows):
        print(line)


def bestrate(a):
    print("each seed's best rate (seed 0 / 1 / 2 …; deeper than the shallowest depth, seeds ≥ 1 ran only "
          "seed 0's best rate ± 1)\n")
    for s in a.schemes:
        parts = []
        for D in a.depths:
            b = a.best_per_seed(s, D)
            if b:
                parts.append(f"{D}: " + "/".join(st.fmt_rate(x) for x in b.values()))
        if parts:
            print(f"{s:14s} " + "   ".join(parts))


def spread(a):
    print("seed spread |ℓ(seed k) − ℓ(seed 0)| over the cells where both learned\n")
    for D in a.depths:
        d = []
        for s in a.schemes:
            for lr in a.rates:
                _, ls = a.cell(s, D, lr)
                if 0 in ls and ls[0] is not None:
                    d += [abs(x - ls[0]) for k, x in ls.items() if k != 0 and x is not None]
        if d:
            print(f"{D} layers: n={len(d)} median {statistics.median(d):.3f} p90 {pct(d, 0.9):.3f} "
                  f"p95 {pct(d, 0.95):.3f} max {max(d):.3f}")


def sensitivity(a, D, ref="pre"):
    print(f"{D} layers: learning-rate sensitivity (Wortsman et al. 2023) per seed over all rates and over "
          f"rates ≥ 1e-3 (seeds that ran every rate); mean [min, max]; paired vs {ref}\n")
    seeds = sorted({r["seed"] for r in a.runs if r["depth"] == D and a.ended(r)})

    def per_seed(s, lo):
        out = {k: a.sensitivity(s, D, k, lo) for k in seeds}
        return {k: v for k, v in out.items() if v is not None}

    refs = {lo: per_seed(ref, lo) for lo in (0.0, 1e-3)}
    rows = []
    for s in a.schemes:
        parts = []
        for lo in (0.0, 1e-3):
            v = per_seed(s, lo)
            if not v:
                parts.append("–")
                continue
            p = st.Atlas.paired(v, refs[lo]) if s != ref else None
            verdict = "" if p is None else (" resolved" if st.Atlas.resolved(p) else " no difference")
            parts.append(f"{statistics.mean(v.values()):.3f} [{min(v.values()):.3f}, {max(v.values()):.3f}] "
                         f"n={len(v)}" + ("" if p is None else f" vs {ref} {st.fmt_interval(p)}{verdict}"))
        if parts != ["–", "–"]:
            rows.append(f"{s:14s} all: {parts[0]}\n{'':14s} ≥1e-3: {parts[1]}")
    print("\n".join(rows))


def reach(a, D):
    """Xiong et al.'s gradient ratio at the first logged update as an early sign of a stall."""
    rs = [r for r in a.runs if r["depth"] == D and r["warmup"] and a.ended(r) and r["reading"].get("grad_reach")
          is not None]
    ok = [r["reading"]["grad_reach"] for r in rs if a.learned(r)]
    if not ok:
        return
    lo = min(ok)
    print(f"{D} layers: gradient reach at the first logged update (bottom ÷ top layer gradient norm)\n")
    print(f"learned: n={len(ok)} median {statistics.median(ok):.3g} min {lo:.3g}")
    for name, hi in (("rates ≥ 1e-3", 1e-3), ("rates < 1e-3", 0.0)):
        st_ = [r["reading"]["grad_reach"] for r in rs if not a.learned(r)
               and (r["lr"] >= 1e-3 if hi else r["lr"] < 1e-3)]
        if st_:
            below = sum(1 for g in st_ if g < lo)
            print(f"did not learn, {name}: n={len(st_)} median {statistics.median(st_):.3g}; "
                  f"{below} below every run that learned")


def labels(a):
    print("outcomes of the ended runs with warm-up, per depth and rate (curve rule where a run has its "
          "training curve, else the gradient-reach fallback)\n")
    for D in a.depths:
        for lr in a.rates:
            c = {}
            for r in a.runs:
                if r["depth"] == D and r["lr"] == lr and r["warmup"] and a.ended(r):
                    lab = r["outcome"] if r["outcome"] in st.NEW_ENDED else "(old label) " + r["outcome"]
                    c[lab] = c.get(lab, 0) + 1
            if c:
                print(f"{D:4d} {st.fmt_rate(lr):5s} " + ", ".join(f"{k} {v}" for k, v in sorted(c.items())))
    agree = n = 0
    for r in a.runs:
        if a.ended(r) and r["reading"].get("train_curve"):
            cl = st.curve_label(a, r)
            if cl in ("too slow", "stalls"):
                n += 1
                agree += cl == st.reach_label(a, r)
    print(f"\nabove the cut with a curve: the reach fallback agrees with the curve rule on {agree} of {n}")


def times(a):
    for D in a.depths:
        m = [r["seconds"] / 60 for r in a.runs if a.ended(r) and r["depth"] == D
             and r["outcome"] not in ("diverged", "diverges")]
        if not m:
            continue
        tot = sum(r["seconds"] for r in a.runs if a.ended(r) and r["depth"] == D) / 3600
        print(f"{D} layers: {len(m)} runs that ran all steps, minutes median {statistics.median(m):.1f} "
              f"(min {min(m):.1f}, max {max(m):.1f}); all ended runs {tot:.1f} run-hours")


def warmup(a):
    for D in a.depths:
        nw = [r for r in a.runs if r["depth"] == D and not r["warmup"] and a.ended(r)]
        if not nw:
            continue
        print(f"{D} layers: no warm-up at {st.fmt_rate(nw[0]['lr'])} vs warm-up at the same rate, seed 0 (bits/byte)")
        for r in nw:
            w = a.seeds(r["scheme"], D, r["lr"]).get(0)
            x, y = a.loss(r), (a.loss(w) if w else None)
            diff = f"{x - y:+.3f}" if x is not None and y is not None else "n/a"
            print(f"    {r['scheme']:14s} without {text(a, r):22s} with {text(a, w) if w else '–':22s} {diff}")


def post(a):
    for s in [x for x in a.schemes if x in ("post", "sigma") or x.startswith("post-") and x != "post-init"]:
        for D in a.depths:
            rs = [(lr, a.seeds(s, D, lr)) for lr in a.rates]
            rs = [(lr, c) for lr, c in rs if c]
            if rs:
                print(f"{s:14s} {D:4d}L  " + "  ".join(
                    f"{st.fmt_rate(lr)}:" + "/".join(text(a, c[k]) for k in sorted(c)) for lr, c in rs))


def run(a, argv):
    cmd = argv[0]
    arg = argv[1:]
    if cmd == "table":
        table(a, int(arg[0]) if arg else 96)
    elif cmd == "cells":
        cells(a, int(arg[0]))
    elif cmd == "rank":
        rank(a, int(arg[0]), *arg[1:2])
    elif cmd == "bestrate":
        bestrate(a)
    elif cmd == "spread":
        spread(a)
    elif cmd == "sensitivity":
        sensitivity(a, int(arg[0]), *arg[1:2])
    elif cmd == "reach":
        reach(a, int(arg[0]))
    elif cmd == "labels":
        labels(a)
    elif cmd == "times":
        times(a)
    elif cmd == "warmup":
        warmup(a)
    elif cmd == "post":
        post(a)


BLOCK = re.compile(r"<!-- atlas_numbers: ([^>]*?) -->\n```\n(.*?)```\n", re.S)


def output_of(a, args):
    buf = io.StringIO()
    with redirect_stdout(buf):
        run(a, args.split())
    return buf.getvalue()


def page(a, path, write):
    """update (write) or verify a page's blocks; returns the problems found."""
    src = open(path, encoding="utf-8").read()
    problems, outs = [], []

    def redo(m):
        out = output_of(a, m.group(1))
        outs.append(out)
        if out != m.group(2):
            problems.append(f"stale block: atlas_numbers.py {m.group(1)}")
        return f"<!-- atlas_numbers: {m.group(1)} -->\n```\n{out}```\n"

    new = BLOCK.sub(redo, src)
    if write:
        if new != src:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
        return []
    # The checked part: from "## At a glance" (or "## Findings") through the end of "## Findings".
    start = new.find("\n## At a glance")
    start = start if start >= 0 else new.find("\n## Findings")
    end = new.find("\n## ", new.find("\n## Findings") + 1) if "\n## Findings" in new else -1
    findings = BLOCK.sub("", new[start:end if end > 0 else len(new)]) if start >= 0 else ""
    known = "\n".join(outs)
    for num in sorted(set(re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", findings))):
        if not re.search(r"(?<![\d.])" + re.escape(num) + r"(?![\d])", known):
            problems.append(f"number {num} in Findings appears in no generated block")
    return problems


def main():
    args = sys.argv[1:]
    atlas = "docs/atlas"
    if "--atlas" in args:
        i = args.index("--atlas")
        atlas = args[i + 1]
        del args[i:i + 2]
    if not args or args[0] not in COMMANDS or (args[0] in ("update", "verify") and len(args) != 2):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    path = os.path.join(atlas, "atlas.json")
    try:
        a = st.Atlas(json.load(open(path)))
    except (OSError, ValueError, KeyError) as e:
        print(f"atlas_numbers: cannot read {path}: {e}", file=sys.stderr)
        sys.exit(2)
    if args[0] in ("update", "verify"):
        problems = page(a, args[1], args[0] == "update")
        for p in problems:
            print(f"{args[1]}: {p}")
        sys.exit(1 if problems else 0)
    run(a, args)


if __name__ == "__main__":
    main()
