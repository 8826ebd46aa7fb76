"""The run-directory contract (docs/training.md#the-run-directory): one process owns a run or
grid directory; every write is checked (a full disk stops the run with exit 5, the log cut back
to whole lines, the resume exact); `--resume` says what it dropped; temporary files of killed
writers are removed; the memory estimate refuses what cannot fit, fast, and matches the peak
resident memory of three shapes.
Run: python3 tests/cli/test_run_dir.py build/stx"""
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from checks import Checks, bad_input_problems, config_args, metrics, run_stx, sha, wait_for_step  # noqa: E402

STX = os.path.abspath(sys.argv[1])
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ENV = dict(os.environ, OMP_NUM_THREADS="1", STX_THREADS="1")
check = Checks()

# A byte-level LM on the embedded Moby-Dick, small enough for seconds a run.
TINY = config_args(os.path.join(ROOT, "configs", "atlas.yaml"), {
    "model.d_model": 32, "model.d_ff": 64, "model.n_heads": 2, "model.decoder_layers": 2, "model.max_len": 64,
    "train.max_tokens": 512, "train.max_steps": 30, "train.warmup_steps": 5, "train.log_every": 2,
    "train.eval_every": 1000, "train.checkpoint_every": 5, "train.valid_sentences": 20, "train.probe_sentences": 2})


def run(args, env=ENV, timeout=600):
    return run_stx(STX, args, env=env, timeout=timeout)


def start(args):
    return subprocess.Popen([STX] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


def step_losses(run_dir):
    return {m["step"]: repr(m["loss"]) for m in metrics(run_dir) if "loss" in m}


def last_step(run_dir):
    """The step of checkpoint_last, from its train_state metadata."""
    with open(os.path.join(run_dir, "checkpoint_last.safetensors"), "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        meta = json.loads(f.read(n))["__metadata__"]
    return json.loads(meta["stx.train"])["step"]


with tempfile.TemporaryDirectory() as d:
    # The uninterrupted reference run.
    ref = os.path.join(d, "ref")
    r = run(["train", "--out", ref, "--quiet"] + TINY)
    check("reference run exits 0", r.returncode == 0, r.stderr[-1500:])
    ref_losses = step_losses(ref)

    # 1. Two trains on one directory: the second is refused while the first runs, and the first
    #    ends exactly as if alone.
    a = os.path.join(d, "a")
    slow = TINY + ["--set", "train.max_steps=1000000"]  # stopped by SIGTERM below: must outlast the checks
    p = start(["train", "--out", a, "--quiet"] + slow)
    wait_for_step(p, a, 2)
    before = {f: sha(os.path.join(a, f)) for f in ("config.yaml", "probe.safetensors")}
    r2 = run(["train", "--out", a, "--quiet"] + slow)
    problems = bad_input_problems(r2, ["in use by process", str(p.pid), a])
    check("a second train on a running directory: exit 2 naming it and the pid", not problems, problems)
    r3 = run(["train", "--out", a, "--resume", "--quiet", "--set", "train.max_steps=60"])
    problems = bad_input_problems(r3, ["in use by process", str(p.pid)])
    check("a resume of a running directory: exit 2", not problems, problems)
    check("the refused processes changed nothing", all(sha(os.path.join(a, f)) == h for f, h in before.items()))
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=120)
    check("the first run stops cleanly on SIGTERM", p.returncode == 128 + signal.SIGTERM, p.returncode)
    steps = [m["step"] for m in metrics(a) if "loss" in m]
    check("its log is whole and in order", steps == list(range(2, steps[-1] + 1, 2)) and steps[-1] <= last_step(a),
          steps)
    r = run(["train", "--out", a, "--resume", "--quiet", "--set", "train.max_steps=30"])
    check("after it ended, --resume takes the directory", r.returncode == 0, r.stderr[-800:])

    # 2. Grid directories: a sweep or experiment refuses a directory another process holds.
    g = os.path.join(d, "grid")
    os.makedirs(g)
    with open(os.path.join(g, ".stx.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        lock.write("4242 (a test)\n")
        lock.flush()
        r = run(["sweep", "--out", g, "--schemes", "pre", "--depths", "2", "--steps", "4"] + TINY[:2])
        problems = bad_input_problems(r, ["in use by process 4242", g])
        check("sweep on a held directory: exit 2", not problems, problems)
        r = run(["experiment", "atlas", "--out", g, "--quick"] + TINY[:2])
        problems = bad_input_problems(r, ["in use by process 4242"])
        check("experiment on a held directory: exit 2", not problems, problems)
    check("nothing written into the held grid directory", os.listdir(g) == [".stx.lock"], os.listdir(g))

    # 3. Stale temporary files of a killed writer are removed when the directory is next opened;
    #    one of a live process is kept. Torn log lines are dropped and reported.
    b = os.path.join(d, "b")
    r = run(["train", "--out", b, "--quiet"] + TINY + ["--set", "train.max_steps=10"])
    check("short run exits 0", r.returncode == 0, r.stderr[-800:])
    pid_max = int(open("/proc/sys/kernel/pid_max").read())
    live = subprocess.Popen(["sleep", "60"])
    dead = [f"checkpoint_last.safetensors.tmp.{pid_max + 1}", f"metrics.jsonl.tmp.{pid_max + 2}",
            "checkpoint_prev.safetensors.tmp"]
    for f in dead + [f"config.yaml.tmp.{live.pid}"]:
        with open(os.path.join(b, f), "wb") as fh:
            fh.write(b"\0" * 100_000)
    with open(os.path.join(b, "metrics.jsonl"), "a") as f:
        f.write('{"step": 4, "loss": 1.0, this is not json}\n{"step": 11, "loss": 2.0, "lr"')  # torn
    r = run(["train", "--out", b, "--resume", "--set", "train.max_steps=12"])
    left = os.listdir(b)
    check("stale temporary files removed, the live process's kept",
          not any(f in left for f in dead) and f"config.yaml.tmp.{live.pid}" in left, left)
    check("the resume says what it removed", "removed 3 temporary file(s)" in r.stderr, r.stderr[-800:])
    n_lines = sum(1 for _ in open(os.path.join(b, "metrics.jsonl")))
    check("the resume says which torn lines it dropped", "dropped 2 torn line(s)" in r.stderr, r.stderr[-800:])
    check("the log holds only whole JSON lines", all(json.loads(l) for l in open(os.path.join(b, "metrics.jsonl"))))
    live.kill()

    # 4. A full disk: the run stops with exit 5, the log ends on whole lines and nothing past it
    #    was checkpointed; moved to a disk with room, the run resumes to the reference's losses.
    small = os.path.join(d, "small")
    os.makedirs(small)
    mounted = os.geteuid() == 0 and subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=1100k", "tmpfs", small], capture_output=True).returncode == 0
    if not mounted:
        print("SKIP disk full: cannot mount a small tmpfs here (needs root)")
    else:
        try:
            # Room for two checkpoints, the one being written and ~100 log lines: full mid-run.
            long = TINY + ["--set", "train.max_steps=150", "--set", "train.log_every=1", "--set",
                           "train.checkpoint_every=10"]
            full_ref = os.path.join(d, "full_ref")
            r = run(["train", "--out", full_ref, "--quiet"] + long)
            check("the full-disk reference run exits 0", r.returncode == 0, r.stderr[-800:])
            c = os.path.join(small, "c")
            r = run(["train", "--out", c, "--quiet"] + long)
            one = [l for l in r.stderr.splitlines() if l.strip()]
            check("a full disk: exit 5 with one line naming the device problem",
                  r.returncode == 5 and len(one) == 1 and "No space left on device" in r.stderr, r.stderr[-800:])
            raw = open(os.path.join(c, "metrics.jsonl")).read()
            check("the log ends on a whole line", raw == "" or raw.endswith("\n"), raw[-200:])
            logged = [m["step"] for m in metrics(c) if "loss" in m]
            ck = last_step(c)
            check("no checkpoint after the last logged line", not logged or ck <= logged[-1] + 1, (ck, logged[-1:]))
            check("the disk filled mid-run (not at the start)", 0 < ck < 150, ck)
            moved = os.path.join(d, "c")
            shutil.copytree(c, moved)
            r = run(["train", "--out", moved, "--resume", "--quiet"])
            check("the resume on a disk with room finishes", r.returncode == 0, r.stderr[-800:])
            check("and its losses equal the uninterrupted run's", step_losses(moved) == step_losses(full_ref),
                  (step_losses(moved), step_losses(full_ref)))
        finally:
            subprocess.run(["umount", small])

    # 5. The memory estimate: an oversized model is refused before allocating, in well under the
    #    time it would take to allocate.
    big = TINY + ["--set", "model.d_model=4096", "--set", "model.n_heads=32", "--set", "model.d_ff=16384",
                  "--set", "model.decoder_layers=48", "--set", "train.max_tokens=4096", "--set", "model.max_len=512"]
    for name, extra in [("4096 × 48 layers", []), ("d_model 1e9", ["--set", "model.d_model=1000000000",
                                                                    "--set", "model.n_heads=1"]),
                        ("max_len 1e9", ["--set", "model.max_len=1000000000"]),
                        ("100,000 layers", ["--set", "model.d_model=64", "--set", "model.n_heads=4",
                                            "--set", "model.d_ff=256", "--set", "model.decoder_layers=100000"])]:
        out = os.path.join(d, "big")
        t0 = time.time()
        r = run(["train", "--out", out] + big + extra, env=dict(ENV, STX_MEMORY_MB="2000"), timeout=120)
        dt = time.time() - t0
        problems = bad_input_problems(r, ["needs about", "are available (STX_MEMORY_MB)"])
        check(f"memory estimate refuses {name}: exit 2 in {dt:.1f} s", not problems and dt < 5, problems)
        check(f"  and leaves no run directory ({name})", not os.path.exists(out))
    r = run(["train", "--out", os.path.join(d, "fits"), "--quiet"] + TINY + ["--set", "model.decoder_layers=512"],
            env=dict(ENV, STX_MEMORY_MB="800"))
    check("the refusal names settings that fit", r.returncode == 2 and "it would fit with" in r.stderr and
          "layers in all" in r.stderr and "train.checkpoint_activations=true" in r.stderr, r.stderr[-600:])
    r = run(["doctor", "--config", os.path.join(ROOT, "configs", "atlas.yaml"), "--set", "model.decoder_layers=1000",
             "--set", "model.scheme=deepnorm"], env=dict(ENV, STX_MEMORY_MB="4000"), timeout=120)
    problems = bad_input_problems(r, ["needs about"])
    check("stx doctor checks the estimate before probing", not problems, problems)

    # 6. The estimate against the measured peak resident memory of three shapes.
    shapes = {
        "d256 × 6, 4096 tokens": {"model.d_model": 256, "model.n_heads": 4, "model.d_ff": 1024,
                                  "model.decoder_layers": 6, "model.max_len": 256, "train.max_tokens": 4096},
        "d64 × 48, 2048 tokens of 512": {"model.d_model": 64, "model.n_heads": 4, "model.d_ff": 256,
                                         "model.decoder_layers": 48, "model.max_len": 512, "train.max_tokens": 2048},
        "d128 × 12, checkpointed": {"model.d_model": 128, "model.n_heads": 4, "model.d_ff": 512,
                                    "model.decoder_layers": 12, "model.max_len": 128, "train.max_tokens": 4096,
                                    "train.checkpoint_activations": "true"},
    }
    for name, sets in shapes.items():
        out = os.path.join(d, "shape")
        shutil.rmtree(out, ignore_errors=True)
        args = ["train", "--out", out, "--quiet"] + TINY + config_args(TINY[1], sets)[2:] + [
            "--set", "train.max_steps=4", "--set", "train.checkpoint_every=4", "--set", "train.probe_sentences=8"]
        r = run(args)
        if not check(f"{name}: runs", r.returncode == 0, r.stderr[-800:]):
            continue
        with open(os.path.join(out, "hosts.jsonl")) as f:
            est = json.loads(f.readline())["memory_estimate_mb"]
        peak = max(m.get("peak_rss_mb", 0) for m in metrics(out))
        print(f"     {name}: estimate {est:.0f} MB, peak RSS {peak:.0f} MB, ratio {est / peak:.2f}")
        check(f"{name}: estimate within 25 % of the peak", 0.75 <= est / peak <= 1.25, (est, peak))

check.finish()
