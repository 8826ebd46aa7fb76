"""`stx train --nproc 2` (c10d, Gloo, loopback) against one process: the same loss trajectory
over 20 updates for post, pre and deepnorm (2 workers with one batch each = 1 process with
update_freq 2); exact resume of a distributed run after SIGTERM; a worker killed with kill -9
ends the job with exit 4 and a message within the timeout, the checkpoint intact; a resume with
another world size, an unreachable master and --nproc inside a worker are refused (exit 2);
PyTorch's own launcher, `torchrun --no-python --standalone --nproc-per-node 2 stx train …`
(workers joining its agent's store), gives the same losses as `--nproc 2`.
Run: python3 tests/cli/test_distributed.py build/stx"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

from checks import ROOT, Checks, cut_bible, wait_for_step  # noqa: E402

STX = os.path.abspath(sys.argv[1])
# One thread per process everywhere, so the single process and each worker compute alike.
ENV = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "MASTER_ADDR", "MASTER_PORT")}
ENV.update(OMP_NUM_THREADS="1", STX_THREADS="1")
check = Checks()


def run(args, env=ENV, timeout=600):
    return subprocess.run([STX] + args, capture_output=True, text=True, timeout=timeout, env=env)


def metrics(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(l) for l in f if l.strip()]


def train_losses(run_dir):
    return {m["step"]: m["loss"] for m in metrics(run_dir) if "loss" in m}


def max_rel_diff(a, b):
    return max(abs(a[s] - b[s]) / abs(a[s]) for s in a)


with tempfile.TemporaryDirectory() as d:
    corpus = cut_bible(os.path.join(d, "corpus"), {"train": 1000, "valid": 24, "test": 24})
    tiny = ["--config", os.path.join(ROOT, "configs", "demo.yaml"),
            "--set", f"data.corpus={corpus}", "--set", "data.spm_vocab_size=300",
            "--set", "model.d_model=32", "--set", "model.d_ff=64", "--set", "model.n_heads=2",
            "--set", "model.encoder_layers=2", "--set", "model.decoder_layers=2", "--set", "model.dropout=0",
            "--set", "train.max_tokens=400", "--set", "train.max_steps=20", "--set", "train.warmup_steps=5",
            "--set", "train.log_every=1", "--set", "train.eval_every=20", "--set", "train.checkpoint_every=5",
            "--set", "train.valid_bleu_sentences=0", "--set", "train.probe_sentences=4",
            "--set", "train.dist_timeout_s=20"]

    # 1. Two workers with one batch each = one process with update_freq 2, per scheme.
    runs = {}
    for scheme in ("post", "pre", "deepnorm"):
        one, two = os.path.join(d, f"one-{scheme}"), os.path.join(d, f"two-{scheme}")
        s = tiny + ["--set", f"model.scheme={scheme}"]
        r1 = run(["train", "--out", one, "--quiet", "--set", "train.update_freq=2"] + s)
        t0 = time.time()
        r2 = run(["train", "--out", two, "--nproc", "2"] + s)
        ok = check(f"{scheme}: 1 process and --nproc 2 exit 0", r1.returncode == 0 and r2.returncode == 0,
                   (r1.stderr + r2.stderr)[-1500:])
        if not ok:
            continue
        print(f"     (--nproc 2: 20 updates in {time.time() - t0:.1f} s)")
        runs[scheme] = two
        a, b = train_losses(one), train_losses(two)
        check(f"{scheme}: a loss for each of the 20 updates, written once (rank 0 only)",
              sorted(a) == list(range(1, 21)) and [m["step"] for m in metrics(two) if "loss" in m] == list(range(1, 21)),
              sorted(b))
        if sorted(a) == sorted(b):
            # Only the summation order of the gradient differs (g0 + g1 in one process, an
            # all-reduce of g0 and g1 in two); 1e-5 relative is ~100 float32 ulps.
            rel = max_rel_diff(a, b)
            print(f"     ({scheme}: max relative loss difference over 20 updates {rel:.2e}; "
                  f"loss {a[1]:.4f} → {a[20]:.4f})")
            check(f"{scheme}: same loss trajectory (≤ 1e-5 relative)", rel <= 1e-5, f"{rel:.3e}")
            check(f"{scheme}: it is a trajectory (loss falls)", a[20] < a[1], (a[1], a[20]))
        va = [m["valid_loss"] for m in metrics(one) if "valid_loss" in m]
        vb = [m["valid_loss"] for m in metrics(two) if "valid_loss" in m]
        check(f"{scheme}: same validation loss", len(va) == len(vb) == 1 and abs(va[0] - vb[0]) <= 1e-5 * va[0], (va, vb))
        check(f"{scheme}: rank 1 logs to worker-1.log", os.path.exists(os.path.join(two, "worker-1.log")))

    # 2. SIGTERM to the launcher: every worker stops after the same step, rank 0 checkpoints;
    #    the resumed job reproduces the uninterrupted one.
    if "post" in runs:
        c = os.path.join(d, "stopped")
        p = subprocess.Popen([STX, "train", "--out", c, "--nproc", "2", "--quiet", "--set", "model.scheme=post"] + tiny,
                             env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        wait_for_step(p, c, 3)
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=120)
        stopped = max(m["step"] for m in metrics(c))
        check("SIGTERM: the job exits 143", p.returncode == 143, (p.returncode, err[-800:]))
        r = run(["train", "--out", c, "--resume", "--nproc", "2", "--quiet"])
        check(f"resume of the stopped job (after step {stopped}) exits 0", r.returncode == 0, r.stderr[-1500:])
        ref, got = train_losses(runs["post"]), train_losses(c)
        check("stopped + resumed job: every loss equals the uninterrupted job's", ref == got,
              [(s, ref.get(s), got.get(s)) for s in ref if ref.get(s) != got.get(s)][:4])

        # A resume with another world size is refused before any work.
        r = run(["train", "--out", c, "--resume", "--set", "train.max_steps=30"])
        check("resume with 1 process of a 2-process run: exit 2, one line naming --nproc 2",
              r.returncode == 2 and "--nproc 2" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr)

    # 3. kill -9 one worker: the job ends with exit 4 and a message naming it, within the
    #    timeout; the last checkpoint is intact (the job resumes from it).
    k = os.path.join(d, "killed")
    p = subprocess.Popen([STX, "train", "--out", k, "--nproc", "2", "--quiet", "--set", "train.max_steps=100000",
                          "--set", "train.eval_every=100000"] + tiny, env=ENV,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_step(p, k, 6)
    rank1 = None
    for pid in open(f"/proc/{p.pid}/task/{p.pid}/children").read().split():
        with open(f"/proc/{pid}/environ", "rb") as f:
            if b"RANK=1" in f.read().split(b"\0"):
                rank1 = int(pid)
    check("found worker rank 1", rank1 is not None)
    t0 = time.time()
    os.kill(rank1, signal.SIGKILL)
    try:
        out, err = p.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
    took = time.time() - t0
    check(f"kill -9 of rank 1: the job exits 4 within the 20 s timeout (took {took:.1f} s)",
          p.returncode == 4 and took < 20 + 10, (p.returncode, took))
    check("the message names rank 1 and signal 9",
          "worker rank 1 was killed by signal 9" in err and "intact" in err, err[-800:])
    last = max(m["step"] for m in metrics(k) if "loss" in m)
    r = run(["train", "--out", k, "--resume", "--nproc", "2", "--quiet", "--set", f"train.max_steps={last + 7}"])
    check("the killed job's checkpoint resumes (exit 0)", r.returncode == 0, r.stderr[-1500:])

    # 4. torchrun (the .venv's PyTorch): its agent hosts the store, the workers join it under
    #    /worker/attempt_0; same losses as --nproc 2, bit for bit (same reduction, same order).
    torchrun = os.path.join(os.path.dirname(sys.executable), "torchrun")
    if "post" in runs and check("torchrun is installed beside the tests' python", os.path.exists(torchrun), torchrun):
        tr = os.path.join(d, "torchrun-post")
        env = dict(ENV)
        env.pop("STX_THREADS", None)  # torchrun sets OMP_NUM_THREADS=1 for its workers itself
        t0 = time.time()
        r = subprocess.run([torchrun, "--no-python", "--standalone", "--nproc-per-node", "2", STX, "train", "--out", tr,
                            "--quiet", "--set", "model.scheme=post"] + tiny, capture_output=True, text=True,
                           timeout=600, env=env)
        ok = check("torchrun --standalone --nproc-per-node 2: exit 0", r.returncode == 0, (r.stdout + r.stderr)[-2000:])
        if ok:
            print(f"     (torchrun: 20 updates in {time.time() - t0:.1f} s)")
            ref, got = train_losses(runs["post"]), train_losses(tr)
            check("torchrun: every loss equals --nproc 2's", ref == got,
                  [(s, ref.get(s), got.get(s)) for s in ref if ref.get(s) != got.get(s)][:4])

    # 5. Bad launches: exit 2, one line.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nobody listens there once closed
    env = dict(ENV, WORLD_SIZE="2", RANK="1", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    t0 = time.time()
    r = run(["train", "--out", os.path.join(d, "nomaster")] + tiny + ["--set", "train.dist_timeout_s=2"], env=env, timeout=60)
    check(f"unreachable master: exit 2, one line naming MASTER_ADDR (in {time.time() - t0:.1f} s)",
          r.returncode == 2 and "MASTER_ADDR" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr)
    env = dict(ENV, WORLD_SIZE="2", RANK="0", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    r = run(["train", "--out", os.path.join(d, "nested"), "--nproc", "2"] + tiny, env=env)
    check("--nproc inside a worker: exit 2, one line", r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr)
    env = dict(ENV, WORLD_SIZE="2", RANK="5", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    r = run(["train", "--out", os.path.join(d, "badrank")] + tiny, env=env)
    check("RANK outside [0, WORLD_SIZE): exit 2 naming RANK", r.returncode == 2 and "RANK=5" in r.stderr, r.stderr)

check.finish()
