"""`stx train` end to end on a tiny corpus cut from the embedded Bible pairs: diagnostics in
metrics.jsonl, exact resume after kill -9 and after SIGTERM, divergence actions, eval /
translate / generate / plot, and bad input (exit 2, one line, nothing overwritten).
Run: python3 tests/cli/test_train.py build/stx"""
import gzip
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

from checks import Checks, bad_input_problems, config_args, cut_bible, metrics, run_stx, sha  # noqa: E402

STX = os.path.abspath(sys.argv[1])
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ENV = dict(os.environ, OMP_NUM_THREADS="1")


check = Checks()


def run(args, input=None):
    return run_stx(STX, args, env=ENV, input=input)


def lines(path, n):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [next(f).rstrip("\n") for _ in range(n)]


def write(path, rows):
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(r + "\n" for r in rows))
    return path


def losses(run_dir):
    """The exact loss texts per step (train and validation lines), as written."""
    out = {}
    for m in metrics(run_dir):
        for k in ("loss", "nll", "valid_loss", "valid_nll", "grad_norm", "delta_f"):
            if k in m:
                out[(m["step"], k)] = repr(m[k])
    return out


def expect_bad(name, args, must_mention, untouched=()):
    before = {p: sha(p) for p in untouched}
    problems = bad_input_problems(run(args), must_mention, before)
    check(name, not problems, "; ".join(problems))


with tempfile.TemporaryDirectory() as d:
    corpus = cut_bible(os.path.join(d, "corpus"), {"train": 1500, "valid": 40, "test": 40})
    tiny = config_args(os.path.join(ROOT, "configs", "demo.yaml"), {
        "data.corpus": corpus, "data.spm_vocab_size": 300, "model.d_model": 32, "model.d_ff": 64, "model.n_heads": 2,
        "model.encoder_layers": 2, "model.decoder_layers": 2, "train.max_tokens": 600, "train.max_steps": 40,
        "train.warmup_steps": 10, "train.log_every": 5, "train.eval_every": 20, "train.checkpoint_every": 5,
        "train.valid_bleu_sentences": 10, "train.probe_sentences": 4})

    # 1. An uninterrupted run and its diagnostics.
    a = os.path.join(d, "a")
    os.makedirs(a)  # a directory left by an earlier start that never checkpointed: its host line is not this run's
    with open(os.path.join(a, "hosts.jsonl"), "w") as f:
        f.write(json.dumps({"cpu": "stale", "step": 99, "resumed": True}) + "\n")
    t0 = time.time()
    r = run(["train", "--out", a] + tiny)
    check("train exits 0", r.returncode == 0, r.stderr[-2000:])
    print(f"     (40 steps in {time.time() - t0:.1f} s)")
    ms = metrics(a)
    train_lines = [m for m in ms if "loss" in m]
    valid_lines = [m for m in ms if "valid_loss" in m]
    check("train lines every log_every", [m["step"] for m in train_lines] == list(range(5, 41, 5)),
          [m["step"] for m in train_lines])
    check("valid lines at eval_every and the end", [m["step"] for m in valid_lines] == [20, 40], valid_lines)
    m = train_lines[-1]
    need = ["grad_norm", "grad_norm_layer", "grad_norm_sublayer", "grad_norm_w2", "delta_f", "ln_input_norm",
            "attn_entropy", "param_norm", "lr", "tokens_per_s"]
    check("diagnostic keys", all(k in m for k in need), [k for k in need if k not in m])
    check("per-layer grad norms for both stacks",
          len(m["grad_norm_layer"]["encoder"]) == 2 and len(m["grad_norm_layer"]["decoder"]) == 2, m["grad_norm_layer"])
    ent = m["attn_entropy"]["decoder"]["encoder_attn"]
    check("attention entropy per layer, min ≤ mean ≤ log T",
          all(0 <= lo <= me + 1e-9 for lo, me in zip(ent["min_head"], ent["mean"])), ent)
    check("ΔF grows from 0", 0 < train_lines[0]["delta_f"] < train_lines[-1]["delta_f"] * 10, [t["delta_f"] for t in train_lines])
    check("loss decreases", train_lines[-1]["loss"] < train_lines[0]["loss"], [t["loss"] for t in train_lines])
    check("valid BLEU logged", "valid_bleu" in valid_lines[-1], valid_lines[-1])
    for f in ("config.yaml", "spm.src.model", "spm.tgt.model", "checkpoint_last.safetensors",
              "checkpoint_best.safetensors", "probe.safetensors"):
        check(f"run has {f}", os.path.exists(os.path.join(a, f)))
    ha = [json.loads(x) for x in open(os.path.join(a, "hosts.jsonl"))]
    check("a fresh start begins hosts.jsonl anew: one line, step 0", [(h.get("step"), h.get("resumed")) for h in ha]
          == [(0, False)], ha)

    # 2. kill -9 at a random step, resume: the same losses bit for bit.
    b = os.path.join(d, "b")
    p = subprocess.Popen([STX, "train", "--out", b, "--quiet"] + tiny, env=ENV,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    target = random.Random(os.getpid()).randint(8, 30)
    while p.poll() is None:
        try:
            steps = [x["step"] for x in metrics(b)]
        except (FileNotFoundError, json.JSONDecodeError):
            steps = []
        if steps and steps[-1] >= target:
            break
        time.sleep(0.05)
    p.send_signal(signal.SIGKILL)
    p.wait()
    killed_at = max([x["step"] for x in metrics(b)] or [0])
    r = run(["train", "--out", b, "--resume", "--quiet"])
    check(f"resume after kill -9 (around step {killed_at}) exits 0", r.returncode == 0, r.stderr[-2000:])
    la, lb = losses(a), losses(b)
    diff = [k for k in la if la.get(k) != lb.get(k)]
    check("kill -9 + resume reproduces every loss bit for bit", la == lb and not diff, diff[:5])
    hosts = [json.loads(x) for x in open(os.path.join(b, "hosts.jsonl"))] if os.path.exists(
        os.path.join(b, "hosts.jsonl")) else []
    check("hosts.jsonl: one line per start, the resume's from its checkpoint's step, with the CPU",
          [h.get("resumed") for h in hosts] == [False, True] and hosts[0].get("step") == 0
          and 0 <= hosts[1].get("step", -1) <= killed_at and all(h.get("cpu") and h.get("blas") for h in hosts),
          hosts)

    # 3. SIGTERM: finish the step, checkpoint, exit 143; resume reproduces the losses.
    c = os.path.join(d, "c")
    p = subprocess.Popen([STX, "train", "--out", c] + tiny, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    while p.poll() is None and not (os.path.exists(os.path.join(c, "metrics.jsonl")) and metrics(c)):
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=300)
    check("SIGTERM exits 143 with a message", p.returncode == 143 and "--resume" in err, (p.returncode, err[-500:]))
    r = run(["train", "--out", c, "--resume", "--quiet"])
    check("SIGTERM + resume reproduces every loss", r.returncode == 0 and losses(c) == la, r.stderr[-500:])

    # 4. Using the run.
    r = run(["eval", "--run", a, "--split", "test", "--beam", "2", "--sentences", "10"])
    check("eval prints loss, ppl and BLEU", r.returncode == 0 and "ppl" in r.stdout and "BLEU" in r.stdout, r.stdout + r.stderr)
    r = run(["eval", "--run", a, "--split", "test", "--baseline", "copy"])
    check("copy baseline", r.returncode == 0 and "copy-the-source BLEU" in r.stdout, r.stdout + r.stderr)
    r = run(["translate", "--run", a, "--beam", "2"], input="En el principio creó Dios los cielos y la tierra.\nY dijo Dios.\n")
    check("translate: one line out per line in", r.returncode == 0 and len(r.stdout.splitlines()) == 2, r.stdout + r.stderr)
    r = run(["plot", a, b, "--out", os.path.join(d, "fig")])
    pngs = [f for f in os.listdir(os.path.join(d, "fig"))] if r.returncode == 0 else []
    check("plot writes the figures", r.returncode == 0 and {"loss.png", "delta_f.png", "entropy_lowest.png"} <= set(pngs),
          (r.stderr, pngs))

    # 4b. A language model: train a few steps, evaluate, generate.
    moby = os.path.join(ROOT, "data", "default", "moby-dick")
    lmc = os.path.join(d, "lmcorpus")
    os.makedirs(lmc)
    for split, n in (("train", 300), ("valid", 20)):
        write(os.path.join(lmc, f"{split}.txt"), lines(os.path.join(moby, f"{split}.txt.gz"), n))
    lm = os.path.join(d, "lm")
    r = run(["train", "--out", lm, "--quiet", "--config", os.path.join(ROOT, "configs", "lm-deepnorm.yaml"),
             "--set", f"data.corpus={lmc}", "--set", "data.spm_vocab_size=300", "--set", "model.d_model=32",
             "--set", "model.d_ff=64", "--set", "model.n_heads=2", "--set", "model.decoder_layers=2",
             "--set", "train.max_steps=10", "--set", "train.log_every=5", "--set", "train.eval_every=10",
             "--set", "train.max_tokens=1000"])
    check("LM train exits 0", r.returncode == 0, r.stderr[-1000:])
    lm_lines = metrics(lm) if r.returncode == 0 else []
    check("LM logs decoder diagnostics", any("attn_entropy" in m and "decoder" in m["attn_entropy"] for m in lm_lines), lm_lines[:1])
    r = run(["eval", "--run", lm, "--split", "valid"])
    check("LM eval prints perplexity", r.returncode == 0 and "ppl" in r.stdout and "BLEU" not in r.stdout, r.stdout + r.stderr)
    r = run(["generate", "--run", lm, "--prompt", "Call me", "--max-new-tokens", "12", "--seed", "3"])
    r2 = run(["generate", "--run", lm, "--prompt", "Call me", "--max-new-tokens", "12", "--seed", "3"])
    check("generate continues the prompt, reproducibly", r.returncode == 0 and r.stdout.startswith("Call me") and r.stdout == r2.stdout,
          r.stdout + r.stderr)
    expect_bad("translate with an LM run", ["translate", "--run", lm], ["generate"])

    # 5. Divergence: an absurd learning rate.
    for action, code in (("stop", 1), ("skip", 1), ("rollback", 1)):
        e = os.path.join(d, f"div-{action}")
        r = run(["train", "--out", e, "--quiet"] + tiny + ["--set", "train.lr=1e30", "--set", "train.warmup_steps=0",
                                                           "--set", "train.schedule=constant", "--set", "model.scheme=post",
                                                           "--set", f"train.on_divergence={action}", "--set", "train.max_skips=2",
                                                           "--set", "train.max_rollbacks=2"])
        events = [x for x in metrics(e) if x.get("event") == "divergence"] if os.path.exists(os.path.join(e, "metrics.jsonl")) else []
        ok = r.returncode == code and "diverged at step" in r.stderr and len(events) >= 1 and events[0]["action"] == action
        if action != "stop":
            ok = ok and len(events) >= 3  # max 2 skips/rollbacks, then stop
        check(f"divergence with on_divergence {action}", ok, (r.returncode, r.stderr[-400:], events[:4]))

    # 6. Bad input.
    ck = os.path.join(a, "checkpoint_last.safetensors")
    expect_bad("train into an existing run", ["train", "--out", a] + tiny, ["--resume"], [ck])
    expect_bad("resume with a different model", ["train", "--out", a, "--resume", "--set", "model.d_model=64"] + [],
               ["model.d_model"], [ck])
    empty = os.path.join(d, "empty")
    os.makedirs(empty)
    for split in ("train", "valid"):
        write(os.path.join(empty, f"{split}.es"), [])
        write(os.path.join(empty, f"{split}.en"), [])
    expect_bad("empty corpus", ["train", "--out", os.path.join(d, "x1")] + tiny + ["--set", f"data.corpus={empty}"], ["empty"])
    mism = os.path.join(d, "mism")
    os.makedirs(mism)
    for split in ("train", "valid"):
        write(os.path.join(mism, f"{split}.es"), ["uno", "dos", "tres"])
        write(os.path.join(mism, f"{split}.en"), ["one", "two"])
    expect_bad("mismatched pair counts", ["train", "--out", os.path.join(d, "x2")] + tiny + ["--set", f"data.corpus={mism}"],
               ["3", "2"])
    expect_bad("missing corpus", ["train", "--out", os.path.join(d, "x3")] + tiny + ["--set", "data.corpus=/nonexistent/dir"],
               ["/nonexistent/dir"])
    c2 = os.path.join(d, "c2")
    os.makedirs(c2)
    for f in ("spm.src.model", "spm.tgt.model", "config.yaml", "metrics.jsonl", "probe.safetensors"):
        with open(os.path.join(c, f), "rb") as s, open(os.path.join(c2, f), "wb") as t:
            t.write(s.read())
    with open(os.path.join(c, "checkpoint_last.safetensors"), "rb") as s:
        data = s.read()
    with open(os.path.join(c2, "checkpoint_last.safetensors"), "wb") as t:
        t.write(data[: len(data) // 2])
    expect_bad("corrupt checkpoint (resume)", ["train", "--out", c2, "--resume"], ["checkpoint_last.safetensors"],
               [os.path.join(c2, "checkpoint_last.safetensors"), os.path.join(c2, "metrics.jsonl")])
    expect_bad("corrupt checkpoint (eval)", ["eval", "--run", c2, "--checkpoint", "last"], ["checkpoint_last.safetensors"])
    os.remove(os.path.join(c, "spm.tgt.model"))
    expect_bad("missing SentencePiece model", ["eval", "--run", c], ["spm.tgt.model"])
    expect_bad("eval of a non-run", ["eval", "--run", d], ["checkpoint"])
    expect_bad("generate with a translation run", ["generate", "--run", a, "--prompt", "hello"], ["translate"])

check.finish()
