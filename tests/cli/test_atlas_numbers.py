"""scripts/atlas_numbers.py and atlas_stats.py: the statistics docs/atlas.md states (paired by seed,
"resolved" only when n ≥ 3 seeds agree in sign), Wortsman's sensitivity, the outcome rules
recomputed from the curves, and `verify`: the committed page's numbers are those the committed
atlas.json gives. Usage: python3 test_atlas_numbers.py [STX_BINARY] (the binary is not used)."""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

from checks import Checks

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
import atlas_stats as st  # noqa: E402

SCRIPT = os.path.join(ROOT, "scripts", "atlas_numbers.py")
check = Checks()


def run(*args, cwd=ROOT):
    return subprocess.run([sys.executable, SCRIPT, *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def mk(scheme, depth, lr, seed, bpb, outcome="trains", curve=None, reach=0.5, failure=""):
    return {"scheme": scheme, "depth": depth, "lr": lr, "seed": seed, "warmup": True, "outcome": outcome,
            "step": 400, "seconds": 60.0, "name": f"{scheme}-L{depth}-lr{lr:g}-s{seed}",
            "reading": {"final_bpb": bpb, "train_curve": curve or [], "grad_reach": reach, "failure": failure}}


U = 4.4
A = {"unigram_entropy_bits": U, "init_loss_bits": 8.0,
     "plan": {"schemes": ["pre", "x"], "lrs": [1e-3, 1e-2], "depths": [6]},
     "runs": [mk("pre", 6, 1e-3, k, 3.5 + 0.01 * k) for k in range(3)]
     + [mk("pre", 6, 1e-2, k, 3.3 + 0.01 * k) for k in range(3)]
     + [mk("x", 6, 1e-3, k, 3.4 - 0.02 * k) for k in range(3)]
     + [mk("x", 6, 1e-2, 0, None, "diverges", failure="diverged (non-finite)"),
        mk("x", 6, 1e-2, 1, 4.6, "stalls"), mk("x", 6, 1e-2, 2, 3.0)]}
a = st.Atlas(A)

b = a.best("pre", 6)
check("best: the rate whose 3 seeds all learned with the lowest mean",
      b[0] == 1e-2 and sorted(b[1]) == [0, 1, 2] and all(abs(b[1][k] - (3.3 + 0.01 * k)) < 1e-12 for k in b[1]), b)
check("best: a rate where one seed failed is not a best (x at 1e-2 has a 3.0)", a.best("x", 6)[0] == 1e-3)
p = st.Atlas.paired(a.best("x", 6)[1], a.best("pre", 6)[1])
check("paired differences by seed: mean, min, max, n",
      p is not None and abs(p[0] - 0.07) < 1e-9 and abs(p[1] - 0.04) < 1e-9 and abs(p[2] - 0.1) < 1e-9 and p[3] == 3,
      p)
check("resolved when all 3 agree in sign", st.Atlas.resolved(p))
check("not resolved when the interval spans 0", not st.Atlas.resolved((0.01, -0.02, 0.03, 3)))
check("not resolved with 2 seeds even if they agree", not st.Atlas.resolved((0.05, 0.04, 0.06, 2)))
# Sensitivity: mean over rates of min(ℓ, ℓ₀) − ℓ*; a guard-stopped run counts as ℓ₀, a plateau run as its loss.
check("sensitivity of pre, seed 0: (3.5 + 3.3)/2 − 3.3", abs(a.sensitivity("pre", 6, 0) - 0.1) < 1e-9)
check("sensitivity of x, seed 0: the diverged rate counts as ℓ₀ = 8",
      abs(a.sensitivity("x", 6, 0) - (0 + (8.0 - 3.4)) / 2) < 1e-9, a.sensitivity("x", 6, 0))
check("sensitivity of x, seed 1: the plateau rate counts as its final loss",
      abs(a.sensitivity("x", 6, 1) - (0 + (4.6 - 3.38)) / 2) < 1e-9, a.sensitivity("x", 6, 1))
check("sensitivity over rates ≥ 1e-2 only: one rate, 0", a.sensitivity("pre", 6, 0, 1e-2) == 0)

# The outcome rules from the curve (docs/reference.md#run-outcomes).
flat = [[10 * i, 4.45] for i in range(1, 41)]
slow = [[10 * i, 5.5 - 0.01 * i] for i in range(1, 41)]
spike = [[10 * i, 3.5] for i in range(1, 41)]
spike[20][1] = 3.5 + 1.0 / math.log(2) + 0.01
check("curve rule: above the cut and flat → stalls", st.curve_label(a, mk("x", 6, 1, 0, 4.45, curve=flat)) == "stalls")
check("curve rule: above the cut, falling ≥ 0.02 bit per quarter → too slow",
      st.curve_label(a, mk("x", 6, 1, 0, 4.4, curve=slow)) == "too slow")
check("curve rule: exactly at the cut is above it", st.curve_label(a, mk("x", 6, 1, 0, U - 0.1, curve=flat)) == "stalls")
check("curve rule: just below the cut trains", st.curve_label(a, mk("x", 6, 1, 0, U - 0.1001, curve=flat)) == "trains")
check("curve rule: a spike of > 1 nat that ends below the cut → spiked and recovered",
      st.curve_label(a, mk("x", 6, 1, 0, 3.5, curve=spike)) == "spiked and recovered")
check("curve rule: a spike that ends above the cut → diverges",
      st.curve_label(a, mk("x", 6, 1, 0, 4.5, curve=spike)) == "diverges")
check("reach fallback: reach < 0.01 → stalls, else too slow",
      st.reach_label(a, mk("x", 6, 1, 0, 4.5, reach=1e-6)) == "stalls"
      and st.reach_label(a, mk("x", 6, 1, 0, 4.5, reach=0.3)) == "too slow")

# The committed atlas: every label the report wrote from a curve is the curve rule's.
J = json.load(open(os.path.join(ROOT, "docs", "atlas", "atlas.json")))
c = st.Atlas(J)
with_curve = [r for r in J["runs"] if r["outcome"] in st.NEW_ENDED and r["reading"].get("train_curve")]
bad = [(r["name"], r["outcome"], st.curve_label(c, r)) for r in with_curve if st.curve_label(c, r) != r["outcome"]]
check(f"the committed atlas.json's labels from curves follow the stated rules ({len(with_curve)} runs)", not bad, bad[:5])

# verify: the committed page agrees with the committed data; a stale block and a stray number are caught.
r = run("verify", "docs/atlas.md")
check("verify docs/atlas.md: every block current, every Findings number in a block", r.returncode == 0,
      (r.stdout + r.stderr)[-1500:])
with tempfile.TemporaryDirectory() as d:
    shutil.copytree(os.path.join(ROOT, "docs", "atlas"), os.path.join(d, "atlas"),
                    ignore=shutil.ignore_patterns("runs", "figures"))
    page = os.path.join(d, "page.md")
    with open(page, "w") as f:
        f.write("# p\n\n## Findings\n\nPre-LN ends at 9.876 bits.\n\n<!-- atlas_numbers: spread -->\n```\nold\n```\n"
                "\n## Other\n\n1.234 here is not checked.\n")
    r = run("--atlas", os.path.join(d, "atlas"), "verify", page)
    check("verify: a stale block and a number in no block → exit 1, both named",
          r.returncode == 1 and "stale block: atlas_numbers.py spread" in r.stdout and "9.876" in r.stdout
          and "1.234" not in r.stdout, r.stdout)
    r = run("--atlas", os.path.join(d, "atlas"), "update", page)
    r2 = run("--atlas", os.path.join(d, "atlas"), "verify", page)
    check("update rewrites the block; the stray number is still reported",
          r.returncode == 0 and "seed spread" in open(page).read() and r2.returncode == 1
          and "stale" not in r2.stdout and "9.876" in r2.stdout, r2.stdout)
r = run("nonsense")
check("an unknown command: exit 2 with the usage", r.returncode == 2 and "verify PAGE" in r.stderr)
r = run("--atlas", "/nonexistent", "spread")
check("a missing atlas.json: exit 2, one line naming it", r.returncode == 2 and "/nonexistent/atlas.json" in r.stderr
      and len(r.stderr.strip().splitlines()) == 1, r.stderr)
check.finish()
