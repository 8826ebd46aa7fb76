"""`stx experiment atlas` end to end on a tiny grid (the shape of the outputs, not the numbers):
a byte-level LM (data.tokenizer: bytes) on a slice of the embedded Moby-Dick, 2 schemes × 3
depths × 2 rates (+ the no-warm-up column, + a second seed at the shallowest depth), the deep
row limited to the rates around the best below; atlas.md / atlas.json / figures; a rerun does
nothing; a fourth depth added later follows the third; bad input exits 2 with one line.
Run: python3 tests/cli/test_atlas.py build/stx"""
import json
import math
import os
import re
import statistics
import sys
import tempfile

from checks import Checks, bad_input_problems, cut_moby, run_stx  # noqa: E402

STX = os.path.abspath(sys.argv[1])
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ENV = dict(os.environ, OMP_NUM_THREADS="1")
check = Checks()
# The outcome labels of an ended run (src/stx/grid/outcome.h, docs/reference.md#run-outcomes).
LABELS = ("trains", "too slow", "stalls", "spiked and recovered", "diverges")


def rule_label(x, unigram):
    """A run's label by the rules, from its atlas.json entry (the curve, else the reach fallback)."""
    rd = x["reading"]
    if x["guard_stop"]:
        return "diverges"
    curve = [b for _, b in rd.get("train_curve", [])]
    cut, f = unigram - 0.1, rd["final_bpb"]
    if curve:
        lo, spiked = None, False
        for b in curve:
            spiked = spiked or b is None or (lo is not None and b >= lo + 1 / math.log(2) - 1e-9)
            lo = b if lo is None or b is None else min(lo, b)
    else:
        spiked = rd.get("failure") == "loss spike"
    if f is None and curve:
        f = statistics.mean(curve[-max(1, (len(curve) + 9) // 10):])
    below = f is not None and f < cut - 1e-9
    if spiked:
        return "spiked and recovered" if below else "diverges"
    if below:
        return "trains"
    if curve:
        q = -(-len(curve) // 4)
        improving = len(curve) >= 8 and statistics.mean(curve[-2 * q:-q]) - statistics.mean(curve[-q:]) >= 0.02 - 1e-9
        return "too slow" if improving else "stalls"
    return "too slow" if rd.get("grad_reach") is not None and rd["grad_reach"] >= 0.01 else "stalls"


with tempfile.TemporaryDirectory() as d:
    corpus = cut_moby(os.path.join(d, "lm"), {"train": 400, "valid": 30})
    out = os.path.join(d, "atlas")
    args = ["experiment", "atlas", "--config", os.path.join(ROOT, "configs", "atlas.yaml"), "--out", out,
            "--set", f"data.corpus={corpus}", "--set", "model.d_model=32", "--set", "model.d_ff=64",
            "--set", "model.n_heads=2", "--set", "model.max_len=64", "--set", "train.max_tokens=1024",
            "--set", "train.log_every=5", "--set", "train.eval_every=20", "--set", "train.valid_sentences=10",
            "--schemes", "post,pre", "--depths", "1,2,3", "--lrs", "1e-3,1e-2", "--seeds", "2", "--steps", "20",
            "--warmup", "5", "--nowarm-lr", "1e-2", "--neighbours", "0", "--quiet"]
    r0 = run_stx(STX, args + ["--max-depth", "1"], env=ENV, timeout=900)
    j0 = json.load(open(os.path.join(out, "atlas.json"))) if os.path.exists(os.path.join(out, "atlas.json")) else {}
    runs0 = j0.get("runs", [])
    check("--max-depth 1: exit 0, depth 1 ended, the deeper runs planned and waiting, none started",
          r0.returncode == 0 and runs0 and all(x["outcome"] != "not-started" for x in runs0 if x["depth"] == 1)
          and all(x["outcome"] == "not-started" and x["skipped"].startswith("waiting") for x in runs0
                  if x["depth"] > 1 and x["seed"] == 0 and x["warmup"]), (r0.stdout + r0.stderr)[-800:])
    r = run_stx(STX, args, env=ENV, timeout=900)
    check("atlas runs to the end (exit 0)", r.returncode == 0, (r.stdout + r.stderr)[-1500:])
    j = json.load(open(os.path.join(out, "atlas.json"))) if os.path.exists(os.path.join(out, "atlas.json")) else {}
    runs = j.get("runs", [])
    # 2 schemes × (depth 1: 2 rates × 2 seeds + nowarm; depth 2: the same; depth 3: 2 × 2 candidates)
    check("every planned run is in atlas.json", len(runs) == 2 * (5 + 5 + 4), len(runs))
    ran = [x for x in runs if x["outcome"] in LABELS]
    deep = [x for x in runs if x["depth"] == 3 and x["warmup"]]
    check("depths 1 and 2 ran in full (seed 0)", all(x["outcome"] in LABELS
                                                     for x in runs if x["depth"] < 3 and x["seed"] == 0),
          [x["name"] for x in runs])
    for scheme in ("post", "pre"):
        below = [x for x in runs if x["scheme"] == scheme and x["depth"] == 2 and x["warmup"]]
        survived = any(x["outcome"] == "trains" and x["reading"]["final_bpb"] < j["unigram_entropy_bits"] - 0.1
                       for x in below)
        mine = [x for x in deep if x["scheme"] == scheme]
        n_ran = sum(1 for x in mine if x["outcome"] != "not-started")
        check(f"{scheme}: the deep row ran only the best rate below (neighbours 0)",
              n_ran == (1 if survived else 0) and all(x["skipped"] for x in mine if x["outcome"] == "not-started"),
              [(x["name"], x["outcome"], x["skipped"]) for x in mine])
    cells = {(c["scheme"], c["depth"]): c for c in j.get("cells", [])}
    check("a cell per scheme × depth", sorted(cells) == [(s, dd) for s in ("post", "pre") for dd in (1, 2, 3)],
          sorted(cells))
    c = cells.get(("pre", 1), {})
    check("pre at depth 1: a best loss in bits/byte, a sensitivity ≥ 0, a seed spread",
          isinstance(c.get("best_bpb"), float) and 0 < c["best_bpb"] < 9 and c.get("lr_sensitivity") is not None
          and c["lr_sensitivity"] >= 0 and c.get("seed_spread_mean") is not None, c)
    partial = [c for c in cells.values() if c["depth"] == 3 and c.get("lr_sensitivity") is not None]
    check("a deep row's sensitivity names the rates it averages (1 of 2 with neighbours 0)",
          all(c.get("lr_sensitivity_rates") == 1 for c in partial)
          and all(c.get("lr_sensitivity_rates") == 2 for c in j.get("cells", []) if c["depth"] == 1), partial)
    check("the unigram entropy of the corpus is reported", isinstance(j.get("unigram_entropy_bits"), float)
          and 3 < j["unigram_entropy_bits"] < 6, j.get("unigram_entropy_bits"))
    md = open(os.path.join(out, "atlas.md")).read() if os.path.exists(os.path.join(out, "atlas.md")) else ""
    for section in ("Best final loss", "Learning-rate sensitivity", "Without warm-up", "Seed spread", "Every run"):
        check(f"atlas.md has '{section}'", section in md)
    if partial:
        check("atlas.md marks a sensitivity over part of the grid", "over 1 of 2 rates" in md)
    check("every ended run's label is the one the rules give from its reading; a guard stop is marked",
          all(x["outcome"] == rule_label(x, j["unigram_entropy_bits"]) for x in ran)
          and all(x["guard_stop"] == (x["reading"]["failure"].startswith("diverged")
                                      or x["guard_stop"] and x["reading"]["failure"] == "loss spike") for x in ran),
          [(x["name"], x["outcome"], rule_label(x, j["unigram_entropy_bits"])) for x in ran][:6])
    check("no run, report or cell says converged", "converged" not in json.dumps(j) and "converged" not in md
          and all(set(c["outcomes"]) <= set(LABELS) for c in j.get("cells", [])), [c.get("outcomes") for c in j["cells"]])
    for fig in ("atlas_map.png", "loss_vs_lr.png", "grad_reach.png", "sensitivity_vs_depth.png"):
        check(f"figure {fig}", os.path.exists(os.path.join(out, "figures", fig)))
    check("every run records the CPU and BLAS kernel that trained it",
          all(len(x.get("hosts", [])) == 1 and re.search(r", OpenBLAS \S+$", x["hosts"][0]) for x in ran),
          [(x["name"], x.get("hosts")) for x in ran][:3])
    machines = [ln for ln in md.splitlines() if ln.startswith("Machines (")]
    counted = sum(int(n) for n in re.findall(r" — (\d+) runs?;", machines[0])) if machines else -1
    check("atlas.md's Machines line counts every ended run once (none moved)",
          counted == len(ran) and "resumed on another machine: 0;" in (machines or [""])[0], machines)
    check("every run's reading has the diagnostics", all(
        x["reading"]["max_attn_logit"] is not None and x["reading"]["grad_reach"] is not None for x in ran),
        [x["name"] for x in ran if x["reading"]["max_attn_logit"] is None])
    check("every run's reading keeps its training curve (step, bits) and the last gradient reach", all(
        len(x["reading"].get("train_curve", [])) == 4 and x["reading"]["train_curve"][-1][0] == 20
        and x["reading"].get("grad_reach_last") is not None for x in ran if not x["guard_stop"]),
        [(x["name"], x["reading"].get("train_curve")) for x in ran][:2])
    for scheme in ("post", "pre"):  # neighbours 0: a second seed only at seed 0's best rate of its depth
        for depth in (2, 3):
            seed0 = [x for x in runs if x["scheme"] == scheme and x["depth"] == depth and x["seed"] == 0
                     and x["warmup"] and x["outcome"] != "not-started"]
            seed1 = [x for x in runs if x["scheme"] == scheme and x["depth"] == depth and x["seed"] == 1
                     and x["outcome"] != "not-started"]
            check(f"{scheme} at depth {depth}: seed 1 runs at most one rate, one that seed 0 ran",
                  len(seed1) <= 1 and (len(seed1) == 1) == bool(seed0)
                  and all(any(y["lr"] == x["lr"] for y in seed0) for x in seed1),
                  [(x["name"], x["outcome"], x["skipped"]) for x in runs if x["scheme"] == scheme
                   and x["depth"] == depth])
    r2 = run_stx(STX, args, env=ENV, timeout=300)
    check("a rerun has nothing left to do", r2.returncode == 0 and "started" not in r2.stdout, r2.stdout[-600:])
    # A copy without runs/ (what the repository keeps) carries on from atlas.json: nothing to redo.
    import shutil
    copy = os.path.join(d, "copy")
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("runs"))
    r3 = run_stx(STX, [copy if a == out else a for a in args], env=ENV, timeout=300)
    j3 = json.load(open(os.path.join(copy, "atlas.json"))) if os.path.exists(os.path.join(copy, "atlas.json")) else {}
    check("a copy without runs/ has nothing to redo and the same results",
          r3.returncode == 0 and "started" not in r3.stdout and j3.get("cells") == j.get("cells"),
          r3.stdout[-600:])
    # --report-only rewrites the report from what ended and starts nothing, under the stored command.
    shutil.rmtree(os.path.join(copy, "figures"), ignore_errors=True)
    r5 = run_stx(STX, [copy if a == out else a for a in args] + ["--report-only"], env=ENV, timeout=300)
    j5 = json.load(open(os.path.join(copy, "atlas.json"))) if os.path.exists(os.path.join(copy, "atlas.json")) else {}
    check("--report-only: exit 0, nothing started, the same cells, the stored command, figures redrawn",
          r5.returncode == 0 and "started" not in r5.stdout + r5.stderr and j5.get("cells") == j.get("cells")
          and j5.get("command") == j3.get("command") and "--report-only" not in j5.get("command", "")
          and os.path.exists(os.path.join(copy, "figures", "loss_vs_lr.png")), (r5.stdout + r5.stderr)[-600:])
    # An atlas.json written before the outcome labels ("converged", "stalled", "diverged"; no
    # guard_stop; half the runs without their training curve, as entries made before the curves
    # were kept): imported, every run is ended and its label recomputed from its reading — the
    # curve rule where it has one, the gradient-reach fallback where not.
    old = os.path.join(d, "old")
    shutil.copytree(copy, old)
    jo = json.load(open(os.path.join(old, "atlas.json")))
    for i, x in enumerate(jo["runs"]):
        if x["outcome"] not in LABELS:
            continue
        x["outcome"] = ("diverged" if x.pop("guard_stop") else
                        "stalled" if x["outcome"] in ("too slow", "stalls") else "converged")
        if i % 2:
            x["reading"].pop("train_curve", None), x["reading"].pop("grad_reach_last", None)
    json.dump(jo, open(os.path.join(old, "atlas.json"), "w"))
    r6 = run_stx(STX, [old if a == out else a for a in args] + ["--report-only"], env=ENV, timeout=300)
    j6 = json.load(open(os.path.join(old, "atlas.json")))
    want = {x["name"]: x for x in jo["runs"]}
    for x in want.values():
        x["guard_stop"] = x["outcome"] == "diverged"
    ended6 = [x for x in j6["runs"] if x["outcome"] in LABELS]
    check("old spellings imported: every ended run still ended, nothing started",
          r6.returncode == 0 and "started" not in r6.stdout + r6.stderr and len(ended6) == len(ran),
          (r6.stdout + r6.stderr)[-600:])
    check("old spellings imported: each label recomputed from the reading (curve rule or the reach fallback)",
          all(x["outcome"] == rule_label(want[x["name"]], j6["unigram_entropy_bits"])
              and x["guard_stop"] == want[x["name"]]["guard_stop"] for x in ended6),
          [(x["name"], x["outcome"], rule_label(want[x["name"]], j6["unigram_entropy_bits"])) for x in ended6][:6])
    check("the recorded command names no machine's path (stx, not the binary's absolute path)",
          j.get("command", "").split(" ")[0] == "stx", j.get("command", "")[:120])  # STX is absolute
    check("ended runs keep no checkpoints", not any(
        f.endswith(".safetensors") for x in ran for f in os.listdir(os.path.join(out, "runs", x["name"]))))
    # A fourth depth added later: its row follows the third's best rate; it must not wait for the
    # third depth's ruled-out runs, which never start.
    r4 = run_stx(STX, [("1,2,3,4" if a == "1,2,3" else a) for a in args], env=ENV, timeout=600)
    j4 = json.load(open(os.path.join(out, "atlas.json"))) if os.path.exists(os.path.join(out, "atlas.json")) else {}
    runs4 = j4.get("runs", [])
    check("a fourth depth added later runs (exit 0)", r4.returncode == 0, (r4.stdout + r4.stderr)[-800:])
    for scheme in ("post", "pre"):
        third = [x for x in runs4 if x["scheme"] == scheme and x["depth"] == 3 and x["warmup"]]
        learned = any(x["outcome"] == "trains" and x["reading"]["final_bpb"] < j4["unigram_entropy_bits"] - 0.1
                      for x in third)
        fourth = [x for x in runs4 if x["scheme"] == scheme and x["depth"] == 4]
        check(f"{scheme}: depth 4 ran the best rate at depth 3 (or nothing if none learned), waiting for nothing",
              sum(1 for x in fourth if x["outcome"] != "not-started") == (1 if learned else 0)
              and not any(x["skipped"].startswith("waiting") for x in fourth),
              [(x["name"], x["outcome"], x["skipped"]) for x in fourth])
    # Results are never lost or mixed: over the copy without runs/ (a fresh clone) and over out,
    # a narrower grid and other --steps are refused (exit 2, one line) and atlas.json is untouched.
    for what, where, change, mention in (
            ("a narrower grid (fewer depths), fresh clone", copy, ("1,2,3", "1"), ["outside this grid"]),
            ("a narrower grid (fewer schemes)", out, ("post,pre", "pre"), ["outside this grid"]),
            ("other --steps, fresh clone", copy, ("20", "25"), ["--steps"]),
            ("other --warmup", out, ("5", "4"), ["--warmup"])):
        before = open(os.path.join(where, "atlas.json"), "rb").read()
        args_ = [where if a == out else a for a in args]
        i = args_.index(change[0])
        args_[i] = change[1]
        r = run_stx(STX, args_, env=ENV, timeout=300)
        problems = bad_input_problems(r, mention)
        check(f"refused: {what}", not problems, "; ".join(problems))
        check(f"{what}: atlas.json untouched", open(os.path.join(where, "atlas.json"), "rb").read() == before)
    # Bad input: one line, exit 2.
    base = ["experiment", "atlas", "--config", os.path.join(ROOT, "configs", "atlas.yaml"),
            "--out", os.path.join(d, "bad")]
    for what, extra, mention in (
            ("decreasing rates", ["--lrs", "1e-2,1e-3"], ["--lrs", "increase"]),
            ("unknown scheme", ["--schemes", "post,nope"], ["nope"]),
            ("zero jobs", ["--jobs", "0"], ["--jobs"]),
            ("a negative --max-depth", ["--max-depth", "-1"], ["--max-depth"]),
            ("warm-up past the steps", ["--steps", "10", "--warmup", "10"], ["--warmup"]),
            ("an entropy-collapse option", ["--arms", "post"], ["--arms", "entropy-collapse"]),
            ("--report-only where no atlas is", ["--report-only"], ["--report-only", "no atlas"]),
            ("a key the atlas sets", ["--set", "train.lr=1e-3"], ["train.lr"]),
            ("a translation config", ["--config", os.path.join(ROOT, "configs", "demo.yaml")], ["decoder"])):
        args_ = base + extra
        if extra[0] == "--config":
            args_ = base[:2] + base[4:] + extra  # its own --config instead of atlas.yaml
        r = run_stx(STX, args_, env=ENV)
        check(f"refused: {what}", not bad_input_problems(r, mention), "; ".join(bad_input_problems(r, mention)))
    r = run_stx(STX, ["init", "--config", os.path.join(ROOT, "configs", "atlas.yaml"), "--set", "data.tokenizer=chars",
                      "--out", os.path.join(d, "x.safetensors")], env=ENV)
    check("refused: data.tokenizer=chars", not bad_input_problems(r, ["data.tokenizer", "spm | bytes"]),
          bad_input_problems(r, ["data.tokenizer", "spm | bytes"]))

check.finish()
