"""`stx sweep` end to end on a tiny language model (d=16, depths 1 and 2, two schemes, a few
steps): the report and figures, an interruption with SIGTERM and a rerun that skips what ended
and resumes what did not, refusal of a changed setup, a sweep where every run diverges (an
encoder-decoder, so the depth reads "1L-1L"; its two runs at once with --jobs 2), bad input (exit 2, one line),
and scripts/layer-grads.py on the finished runs.
Run: python3 tests/cli/test_sweep.py build/stx"""
import gzip
import json
import math
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

import checks  # noqa: E402
from checks import Checks  # noqa: E402

STX = os.path.abspath(sys.argv[1])
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
# STX_NO_REEXEC: skip stx's start-up re-exec (runtime.h), which doubles the ~1 s library load of
# each of this test's many short processes; the sweep's children inherit it.
ENV = dict(os.environ, OMP_NUM_THREADS="1", OMP_WAIT_POLICY="PASSIVE", STX_NO_REEXEC="1")


check = Checks()
# The outcome labels of an ended run (src/stx/grid/outcome.h, docs/reference.md#run-outcomes).
LABELS = ("trains", "too slow", "stalls", "spiked and recovered", "diverges")


def run(args):
    return checks.run_stx(STX, args, env=ENV, timeout=300)


def lines(path, n):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(n)]


def write(path, text):
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return path


def metrics(run_dir):
    return checks.metrics(run_dir, partial=True)


def expect_bad(name, args, must_mention):
    problems = checks.bad_input_problems(run(args), must_mention)
    check(name, not problems, "; ".join(problems))


MODEL = """model:
  arch: {arch}
  d_model: 16
  n_heads: 2
  d_ff: 32
  encoder_layers: 1
  decoder_layers: 1
  scheme: pre
  dropout: 0.0
  max_len: 64
train:
  lr: 3.0e-3
  warmup_steps: 2
  max_steps: 100
  max_tokens: 300
  label_smoothing: 0.0
  log_every: 1
  eval_every: 3
  checkpoint_every: 1
  probe_sentences: 4
  valid_bleu_sentences: 4
data:
  task: {task}
  corpus: {corpus}
  spm_vocab_size: 200
"""

t_start = time.time()
with tempfile.TemporaryDirectory() as d:
    lmc = os.path.join(d, "lmcorpus")
    os.makedirs(lmc)
    moby = os.path.join(ROOT, "data", "default", "moby-dick")
    for split, n in (("train", 200), ("valid", 12)):
        write(os.path.join(lmc, f"{split}.txt"), "".join(l + "\n" for l in lines(os.path.join(moby, f"{split}.txt.gz"), n)))
    lm_cfg = write(os.path.join(d, "lm.yaml"), MODEL.format(arch="decoder", task="lm", corpus=lmc))
    sweep = os.path.join(d, "b6")  # first aborted by a bad --set below (no run trained), then reused
    cmd = ["sweep", "--config", lm_cfg, "--depths", "1,2", "--schemes", "pre,deepnorm", "--steps", "6", "--out", sweep]

    # 1. Bad input, before any run starts.
    expect_bad("unknown scheme", cmd[:5] + ["--schemes", "pre,postln", "--steps", "8", "--out", os.path.join(d, "b1")],
               ["postln", "deepnorm", "sigma"])
    expect_bad("depth 0", ["sweep", "--config", lm_cfg, "--depths", "1,0", "--steps", "8", "--out", os.path.join(d, "b2")], ["0"])
    expect_bad("unparsable depth", ["sweep", "--config", lm_cfg, "--depths", "6,x", "--steps", "8", "--out", os.path.join(d, "b3")],
               ["'x'"])
    expect_bad("steps 0", ["sweep", "--config", lm_cfg, "--depths", "1", "--steps", "0", "--out", os.path.join(d, "b4")], ["--steps"])
    expect_bad("missing config", ["sweep", "--config", os.path.join(d, "nope.yaml"), "--depths", "1", "--steps", "8",
                                  "--out", os.path.join(d, "b5")], ["nope.yaml"])
    expect_bad("--set of a key the sweep sets", ["sweep", "--config", lm_cfg, "--depths", "1", "--steps", "8", "--set",
                                                 "model.decoder_layers=3", "--out", os.path.join(d, "b5")], ["--depths"])
    os.makedirs(os.path.join(d, "notasweep"))
    write(os.path.join(d, "notasweep", "x.txt"), "x")
    expect_bad("--out is not a sweep", ["sweep", "--config", lm_cfg, "--depths", "1", "--steps", "8",
                                        "--out", os.path.join(d, "notasweep")], ["sweep_plan.json"])
    expect_bad("a child's bad input aborts the sweep",
               ["sweep", "--config", lm_cfg, "--set", "data.corpus=/nonexistent/corpus", "--depths", "1", "--schemes", "pre",
                "--steps", "8", "--out", os.path.join(d, "b6")], ["pre-L1", "/nonexistent/corpus"])
    check("no output for bad arguments", not any(os.path.exists(os.path.join(d, f"b{i}")) for i in range(1, 6)))

    # 2. SIGTERM during the second run (deepnorm-L1; order: depth, then scheme), then rerun.
    t0 = time.time()
    p = subprocess.Popen([STX] + cmd, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    second = os.path.join(sweep, "deepnorm-L1")
    while p.poll() is None and not metrics(second):
        time.sleep(0.02)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=120)
    check("after a bad-input abort (no run trained), the corrected command may reuse --out",
          os.path.exists(os.path.join(sweep, "pre-L1", "metrics.jsonl")), err[-600:])
    check("SIGTERM: exit 143 after the child stops", p.returncode == 143 and "rerun" in err, (p.returncode, out, err[-600:]))
    with open(os.path.join(sweep, "sweep.md")) as f:
        md = f.read()
    check("interrupted sweep.md says incomplete", "Incomplete" in md, md[:800])
    with open(os.path.join(sweep, "pre-L1", "sweep_status.json")) as f:
        st = json.load(f)
    check("first run recorded as ended, not by the guard", st["outcome"] in LABELS and st["guard_stop"] is False
          and st["exit_code"] == 0, st)
    interrupted_at = max([m["step"] for m in metrics(second)] or [0])
    with open(os.path.join(sweep, "pre-L1", "train.log")) as f:
        attempts = f.read().count("# stx sweep")

    r = run(cmd)
    print(f"     (4 runs of 6 steps, interrupted and resumed: {time.time() - t0:.1f} s)")
    check("rerun exits 0", r.returncode == 0, (r.stdout, r.stderr[-800:]))
    check("rerun skips the finished first run", "pre-L1:" in r.stdout and "(done before)" in r.stdout.split("pre-L1:")[1].split("\n")[0],
          r.stdout)
    with open(os.path.join(sweep, "pre-L1", "train.log")) as f:
        check("the rerun did not start the first run again", f.read().count("# stx sweep") == attempts)
    with open(os.path.join(second, "train.log")) as f:
        log = f.read()
    check("the interrupted run was resumed, not restarted",
          interrupted_at == 6 or "--resume" in log, (interrupted_at, log[-600:]))
    steps2 = [m["step"] for m in metrics(second) if "loss" in m]
    check("resumed run logged every step once", steps2 == list(range(1, 7)), steps2)

    with open(os.path.join(sweep, "sweep.json")) as f:
        sj = json.load(f)
    runs = {x["name"]: x for x in sj["runs"]}
    check("sweep.json has the 4 runs, all ended, none stopped by the guard",
          sorted(runs) == ["deepnorm-L1", "deepnorm-L2", "pre-L1", "pre-L2"] and
          all(x["outcome"] in LABELS and not x["guard_stop"] and x["step"] == 6 for x in runs.values()), runs)
    check("sweep.json: the unit of its tables, H of the training split and the cut, f of every run",
          sj["loss_unit"] == "nats per token" and isinstance(sj["unigram_entropy_bits"], float)
          and 0 < sj["unigram_entropy_bits"] < 9 and abs(sj["plateau_cut_bits"] - sj["unigram_entropy_bits"] + 0.1) < 1e-9
          and all(isinstance(x["final_bits"], float) for x in runs.values()), sj)
    last_valid = [m["valid_loss"] for m in metrics(os.path.join(sweep, "pre-L2")) if "valid_loss" in m][-1]
    check("table entry is the run's last valid_loss", abs(runs["pre-L2"]["valid_loss"] - last_valid) < 1e-12,
          (runs["pre-L2"], last_valid))
    with open(os.path.join(sweep, "sweep.md")) as f:
        md = f.read()
    rows = {l.split("|")[1].strip(): [c.strip() for c in l.split("|")[2:-1]] for l in md.splitlines()
            if l.startswith("| Pre-LN |") or l.startswith("| DeepNorm |")}
    check("sweep.md: the command, the header, and a number in every cell",
          "stx sweep --config" in md and "| scheme | 1L | 2L |" in md and len(rows) == 2 and
          all(len(c) == 2 and all(x.split()[0].replace(".", "").isdigit() for x in c) for c in rows.values()) and
          "Incomplete" not in md, md[:1500])
    figs = ["loss_L1.png", "loss_L2.png", "early_L1.png", "early_L2.png", "valid_vs_depth.png"]
    check("figures drawn and linked", all(os.path.getsize(os.path.join(sweep, "figures", f)) > 1000 and f"figures/{f}" in md
                                          for f in figs), os.listdir(os.path.join(sweep, "figures")))

    # scripts/layer-grads.py (docs/depth.md) on the finished runs: one row per logged step, the
    # layer count and the last layer's norm as metrics.jsonl has them; bad input → exit 2.
    lg = [sys.executable, os.path.join(ROOT, "scripts", "layer-grads.py")]
    r = subprocess.run(lg + [os.path.join(sweep, "pre-L2"), os.path.join(sweep, "deepnorm-L1"), "--steps", "3,6"],
                       capture_output=True, text=True, timeout=60)
    rows_lg = [l.split("|")[1:-1] for l in r.stdout.splitlines() if l.startswith("| pre-L2") or l.startswith("| deepnorm-L1")]
    top = [m["grad_norm_layer"]["decoder"][-1] for m in metrics(os.path.join(sweep, "pre-L2")) if m.get("step") == 6
           and "grad_norm_layer" in m]
    check("layer-grads.py: a row per run and step, layer counts and norms from metrics.jsonl",
          r.returncode == 0 and len(rows_lg) == 4 and rows_lg[1][2].strip().endswith("of 2") and
          rows_lg[3][2].strip().endswith("of 1") and len(top) == 1 and
          rows_lg[1][-1].strip() == f"{top[0]:.2g}", (r.stdout, r.stderr, top))
    # The LN-norm estimate on a synthetic 10-layer log: every norm input at 2 with α = 1 gives
    # log10(1/2) per layer above k; the gradient falls 10× per layer downward.
    fake = os.path.join(d, "fake-L10")
    os.makedirs(fake)
    write(os.path.join(fake, "metrics.jsonl"), json.dumps({
        "step": 5, "grad_norm_layer": {"decoder": [10.0 ** (l - 9) for l in range(10)]},
        "ln_input_norm": {"decoder": {"self_attn_layer_norm": [2.0] * 10}}}) + "\n")
    r = subprocess.run(lg + [fake, "--alpha", "1"], capture_output=True, text=True, timeout=60)
    est = [[c.strip() for c in l.split("|")[3:6]] for l in r.stdout.splitlines() if l.startswith("| fake-L10 | 5 | ")][1:]
    check("layer-grads.py --alpha: predicted Σ log10(α/a) and measured log10(g_k/g_top) per row",
          r.returncode == 0 and est == [["8", "-0.6", "-2.0"], ["9", "-0.3", "-1.0"], ["10", "0.0", "0.0"], ["10", "0.0", "0.0"]],
          (r.stdout, r.stderr))
    r = subprocess.run(lg + [os.path.join(sweep, "deepnorm-L2"), "--alpha", "-1"], capture_output=True, text=True, timeout=60)
    check("layer-grads.py: --alpha -1 exits 2 with no table", r.returncode == 2 and r.stdout == "", (r.returncode, r.stdout))
    r = subprocess.run(lg + [os.path.join(d, "no-run")], capture_output=True, text=True, timeout=60)
    check("layer-grads.py: a missing run exits 2 with one line and no table",
          r.returncode == 2 and r.stdout == "" and len(r.stderr.strip().splitlines()) == 1, (r.returncode, r.stdout, r.stderr))

    r = run(cmd)
    check("a finished sweep reruns as a no-op", r.returncode == 0 and r.stdout.count("(done before)") == 4, r.stdout + r.stderr)
    expect_bad("changed --steps is refused", cmd[:-3] + ["9", "--out", sweep], ["--steps 6", "9"])
    expect_bad("changed config is refused", cmd + ["--set", "train.lr=0.01"], ["train.lr"])

    # 3. Every run diverges: an encoder-decoder with an absurd learning rate.
    mtc = os.path.join(d, "mtcorpus")
    os.makedirs(mtc)
    bible = os.path.join(ROOT, "data", "default", "bible-es-en")
    for split, n in (("train", 120), ("valid", 6)):
        for lang in ("es", "en"):
            write(os.path.join(mtc, f"{split}.{lang}"), "".join(l + "\n" for l in lines(os.path.join(bible, f"{split}.{lang}.gz"), n)))
    mt_cfg = write(os.path.join(d, "mt.yaml"), MODEL.format(arch="encoder-decoder", task="translation", corpus=mtc))
    div = os.path.join(d, "div")
    expect_bad("--jobs 0", ["sweep", "--config", mt_cfg, "--depths", "1", "--steps", "8", "--jobs", "0", "--out", div], ["--jobs 0"])
    # Both runs at once (--jobs 2): each child started, each result line printed once.
    r = run(["sweep", "--config", mt_cfg, "--depths", "1", "--schemes", "post,sigma", "--steps", "8", "--out", div, "--quiet",
             "--jobs", "2", "--set", "train.lr=1e30", "--set", "train.warmup_steps=0", "--set", "train.schedule=constant"])
    check("diverging sweep exits 0 (every run ended)", r.returncode == 0, (r.stdout, r.stderr[-800:]))
    check("--jobs 2: both runs started before either ended, one result line each",
          [l.split(": ")[1] for l in r.stdout.splitlines()[:2]] == ["started", "started"] and
          all(sum(l.startswith(f"[{i}/2] ") and "diverges: the guard stopped it at step" in l
                  for l in r.stdout.splitlines()) == 1 for i in (1, 2)),
          r.stdout)
    with open(os.path.join(div, "sweep.md")) as f:
        md = f.read()
    cells = [l for l in md.splitlines() if l.startswith("| Post-LN")]
    check("every cell says diverges @ step (cause), depth 1L-1L",
          "| scheme | 1L-1L |" in md and len(cells) == 2 and all("diverges @ " in c for c in cells), md[:1200])
    with open(os.path.join(div, "sweep.json")) as f:
        dj = json.load(f)
    check("diverged runs: exit 1, a step and a cause",
          all(x["outcome"] == "diverges" and x["guard_stop"] is True and x["exit_code"] == 1 and x["step"] >= 1
              and x["cause"] for x in dj["runs"]), dj["runs"])
    check("the summary line counts the runs per label", "sweep: 0 train, 0 too slow, 0 stall, 0 spiked and recovered, "
          "2 diverge; report in" in r.stdout, r.stdout[-400:])
    with open(os.path.join(div, "post-L1", "sweep_status.json")) as f:
        st = json.load(f)
        check("status file records the divergence: the label and the guard stop",
              st["outcome"] == "diverges" and st["guard_stop"] is True, st)
    with open(os.path.join(div, "sigma-L1", "config.yaml")) as f:
        y = f.read()
    check("sigma = post + sigma_reparam", ('scheme: "post"' in y or "scheme: post" in y) and "sigma_reparam: true" in y, y[:400])

    # 4. The demo's shape (scripts/demo.sh): a byte-level LM with the live table (--watch). Every
    # output speaks the outcome labels — never "converged" — in bits per byte, with H, and each
    # label is the one the rules give (recomputed here from metrics.jsonl and the corpus).
    demo = os.path.join(d, "demo")
    r = run(["sweep", "--config", lm_cfg, "--depths", "1", "--schemes", "post,pre", "--steps", "16", "--out", demo,
             "--watch", "--set", "data.tokenizer=bytes", "--set", "train.eval_every=8", "--set", "train.log_every=2"])
    check("demo-style sweep exits 0", r.returncode == 0, (r.stdout[-800:], r.stderr[-800:]))
    summary = [l for l in r.stdout.splitlines() if l.startswith("sweep: ")]
    check("the summary line counts per label", len(summary) == 1 and re.match(
        r"sweep: \d+ trains?, \d+ too slow, \d+ stalls?, \d+ spiked and recovered, \d+ diverges?; report in ",
        summary[0]), r.stdout[-600:])
    with open(os.path.join(demo, "sweep.md")) as f:
        md = f.read()
    with open(os.path.join(demo, "sweep.json")) as f:
        dj = json.load(f)
    statuses = "".join(open(os.path.join(demo, x["name"], "sweep_status.json")).read() for x in dj["runs"])
    check("no output says converged (stdout, sweep.md, sweep.json, sweep_status.json)",
          not any("converged" in t.lower() for t in (r.stdout, r.stderr, md, json.dumps(dj), statuses)))
    # H of the train split in bits per byte, one eos per line (data/unigram.h).
    counts = {}
    with open(os.path.join(lmc, "train.txt"), "rb") as f:
        for ln in f.read().split(b"\n")[:-1]:
            for b in ln.rstrip(b"\r"):
                counts[b] = counts.get(b, 0) + 1
            counts["eos"] = counts.get("eos", 0) + 1
    n = sum(counts.values())
    H = -sum(k / n * math.log2(k / n) for k in counts.values())
    check("sweep.json: H of the training split in bits per byte, the unit bits per byte",
          abs(dj["unigram_entropy_bits"] - H) < 1e-9 and dj["loss_unit"] == "bits per byte",
          (dj["unigram_entropy_bits"], H, dj["loss_unit"]))
    check("sweep.md states H, the unit in its headers", f"H = **{H:.3f} bits per byte**" in md
          and "valid loss (bits/byte)" in md and "## Validation bits per byte" in md, md[:1500])

    def label(m, cut):
        bits = [x["loss"] / math.log(2) if isinstance(x.get("loss"), (int, float)) else float("nan")
                for x in m if "loss" in x and "event" not in x]
        valid = [x["valid_nll"] / math.log(2) for x in m if "valid_nll" in x]
        f = valid[-1] if valid else statistics.mean(bits[-max(1, (len(bits) + 9) // 10):])
        lo, spiked = None, False
        for b in bits:
            if b != b or (lo is not None and b >= lo + 1 / math.log(2)):
                spiked = True
            lo = b if lo is None else min(lo, b)
        if spiked:
            return "spiked and recovered" if f < cut else "diverges"
        if f < cut:
            return "trains"
        q = -(-len(bits) // 4)
        improving = len(bits) >= 8 and statistics.mean(bits[-2 * q:-q]) - statistics.mean(bits[-q:]) >= 0.02
        return "too slow" if improving else "stalls"

    for x in dj["runs"]:
        m = metrics(os.path.join(demo, x["name"]))
        want = label(m, H - 0.1)
        v = [y["valid_nll"] for y in m if "valid_nll" in y][-1] / math.log(2)
        row = [l for l in md.splitlines() if l.startswith("| Pre-LN |" if x["scheme"] == "pre" else "| Post-LN |")]
        cell = f"{v:.3f}" + ("" if want == "trains" else f" ({want})")
        check(f"{x['name']}: its label is the rules' ({want}), its cell the valid bits/byte with the label",
              x["outcome"] == want and abs(x["valid_bits"] - v) < 1e-9 and len(row) == 1 and f"| {cell} |" in row[0],
              (x["outcome"], want, row))
        table = [l for l in r.stdout.splitlines() if l.startswith(("Post-LN 1L", "Pre-LN 1L")[x["scheme"] == "pre"])]
        check(f"{x['name']}: the live table's last row ends with its label", table and table[-1].endswith("  " + want),
              table[-2:])

check.finish(f" ({time.time() - t_start:.1f} s)")
