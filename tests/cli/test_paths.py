"""Bad paths, corpora and config files: every case exits 2 with one stderr line naming the real
problem (a symbolic link loop, a file name too long, a directory, a FIFO or a device where a file is
needed, permission denied; "not found" only when nothing is there), writes no output and never
hangs. Run: python3 tests/cli/test_paths.py build/stx"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from checks import ROOT, Checks, bad_input_problems  # noqa: E402

STX = os.path.abspath(sys.argv[1])
ENV = dict(os.environ, OMP_NUM_THREADS="1")
ATLAS = os.path.join(ROOT, "configs", "atlas.yaml")
DEMO = os.path.join(ROOT, "configs", "demo.yaml")
# A tiny byte-level LM (configs/atlas.yaml: no SentencePiece to train) for the runs that get as far as the corpus.
TINY = ["--config", ATLAS] + [a for kv in (
    "model.d_model=16", "model.n_heads=2", "model.d_ff=32", "model.decoder_layers=1", "model.max_len=32",
    "train.max_steps=2", "train.warmup_steps=1", "train.log_every=1", "train.eval_every=2",
    "train.checkpoint_every=2", "train.max_tokens=256", "train.valid_sentences=4", "train.probe_sentences=2")
    for a in ("--set", kv)]
check = Checks()


def run(args, timeout=60):
    try:
        return subprocess.run([STX] + args, capture_output=True, text=True, timeout=timeout, env=ENV)
    except subprocess.TimeoutExpired:
        return None


def expect_bad(name, args, must_mention, absent=(), must_not=(), timeout=60):
    """args exit 2 with one stderr line naming every string of must_mention and none of must_not,
    within `timeout` seconds, and every path of `absent` is still absent afterwards."""
    r = run(args, timeout)
    if r is None:
        check(name, False, f"no answer within {timeout} s (hangs)")
        return
    problems = bad_input_problems(r, must_mention)
    problems += [f"{m!r} in {r.stderr.strip()!r}" for m in must_not if m in r.stderr]
    problems += [f"{p} was written" for p in absent if os.path.lexists(p)]
    check(name, not problems, "; ".join(problems))
    if not problems:
        print(f"       {r.stderr.strip()[:300]}")


def write(path, text):
    with open(path, "w") as f:
        f.write(text)
    return path


def lm_corpus(path, train_text):
    """path/{train,valid}.txt: the given train text, a few valid lines."""
    os.makedirs(path, exist_ok=True)
    if train_text is not None:
        write(os.path.join(path, "train.txt"), train_text)
    write(os.path.join(path, "valid.txt"), "Call me Ishmael.\nSome years ago.\n")
    return path


with tempfile.TemporaryDirectory() as d:
    loop = os.path.join(d, "loop")
    os.symlink("loop", loop)
    long = os.path.join(d, "x" * 300)
    fifo = os.path.join(d, "fifo")
    os.mkfifo(fifo)
    adir = os.path.join(d, "adir")
    os.makedirs(adir)
    afile = write(os.path.join(d, "afile"), "text\n")
    LOOP, LONG = "symbolic link loop", "file name too long"

    # A run directory whose checkpoint_last (or config.yaml, metrics.jsonl) is a symbolic link loop.
    looprun = os.path.join(d, "looprun")
    os.makedirs(looprun)
    for f in ("checkpoint_last.safetensors", "config.yaml", "metrics.jsonl"):
        os.symlink(f, os.path.join(looprun, f))
    ck = os.path.join(looprun, "checkpoint_last.safetensors")

    # --out of train, --run of eval / generate / translate / doctor, plot's run directories.
    out = os.path.join(d, "run-out")
    expect_bad("train --out: symbolic link loop", ["train", "--out", loop] + TINY, [loop, LOOP])
    expect_bad("train --out: 300-character component", ["train", "--out", long] + TINY, [LONG], [long])
    expect_bad("train --out: a regular file", ["train", "--out", afile] + TINY, [afile, "not a directory"])
    expect_bad("train --resume: checkpoint_last is a symbolic link loop", ["train", "--out", looprun, "--resume"],
               [ck, LOOP])
    expect_bad("train (fresh): checkpoint_last is a symbolic link loop", ["train", "--out", looprun] + TINY, [ck, LOOP])
    for cmd, extra in (("eval", []), ("generate", ["--prompt", "Call me"]), ("translate", [])):
        expect_bad(f"{cmd} --run: symbolic link loop", [cmd, "--run", loop] + extra, [loop, LOOP])
        expect_bad(f"{cmd} --run: 300-character component", [cmd, "--run", long] + extra, [LONG])
        expect_bad(f"{cmd} --run: checkpoint_last is a symbolic link loop", [cmd, "--run", looprun] + extra, [ck, LOOP])
    expect_bad("eval --run: a FIFO", ["eval", "--run", fifo], [fifo, "FIFO", "not a directory"], timeout=20)
    expect_bad("doctor --run: symbolic link loop", ["doctor", "--run", loop], [loop, LOOP])
    expect_bad("doctor --run: 300-character component", ["doctor", "--run", long], [LONG])
    expect_bad("doctor --run: config.yaml is a symbolic link loop", ["doctor", "--run", looprun],
               [os.path.join(looprun, "config.yaml"), LOOP])
    figs = os.path.join(d, "figs")
    expect_bad("plot: run is a symbolic link loop", ["plot", loop, "--out", figs], [loop, LOOP], [figs])
    expect_bad("plot: run with a 300-character component", ["plot", long, "--out", figs], [LONG], [figs])
    expect_bad("plot: metrics.jsonl is a symbolic link loop", ["plot", looprun, "--out", figs],
               [os.path.join(looprun, "metrics.jsonl"), LOOP], [figs])
    expect_bad("sweep --out: symbolic link loop", ["sweep", "--config", ATLAS, "--depths", "1", "--steps", "2",
                                                   "--out", loop], [loop, LOOP])
    expect_bad("experiment --out: symbolic link loop", ["experiment", "atlas", "--config", ATLAS, "--out", loop],
               [loop, LOOP])

    # --config: a directory, a FIFO (stat before open: no hang), a device, a loop, too long, absent.
    model = os.path.join(d, "m.safetensors")
    init = ["init", "--seed", "1", "--out", model]
    expect_bad("--config: a directory", init + ["--config", adir], [adir, "is a directory", "not a regular file"], [model])
    expect_bad("--config: a FIFO (init)", init + ["--config", fifo], [fifo, "FIFO", "not a regular file"], [model],
               timeout=20)
    expect_bad("--config: a FIFO (train)", ["train", "--out", out, "--config", fifo], [fifo, "FIFO"], [out], timeout=20)
    expect_bad("--config: /dev/zero", init + ["--config", "/dev/zero"], ["/dev/zero", "character device"], [model],
               timeout=20)
    expect_bad("--config: symbolic link loop", init + ["--config", loop], [loop, LOOP], [model])
    expect_bad("--config: 300-character component", init + ["--config", long], [LONG], [model])
    expect_bad("--config: absent", init + ["--config", os.path.join(d, "nope.yaml")], ["nope.yaml", "not found"],
               [model])
    os.symlink("missing-target.yaml", os.path.join(d, "dangling.yaml"))
    expect_bad("--config: symbolic link to nothing", init + ["--config", os.path.join(d, "dangling.yaml")],
               ["missing-target.yaml", "does not exist"], [model])

    # Corpus splits that are not readable files: named as what they are, never "not found".
    def split_case(name, make, must, timeout=60):
        c = os.path.join(d, "corpus-" + name.replace(" ", "-").replace("/", ""))
        lm_corpus(c, None)
        make(os.path.join(c, "train.txt"))
        o = os.path.join(d, "out-" + os.path.basename(c))
        expect_bad(f"train split: {name}", ["train", "--out", o] + TINY + ["--set", f"data.corpus={c}"],
                   [os.path.join(c, "train.txt")] + must, [o], must_not=["not found"], timeout=timeout)

    split_case("a FIFO", os.mkfifo, ["FIFO", "not a regular file"], timeout=20)
    split_case("a directory", os.makedirs, ["is a directory"])
    split_case("a symbolic link loop", lambda p: os.symlink("train.txt", p), [LOOP])
    split_case("/dev/zero", lambda p: os.symlink("/dev/zero", p), ["character device"], timeout=20)
    if os.geteuid() != 0:
        def unreadable(p):
            write(p, "some text\n")
            os.chmod(p, 0)
        split_case("permission denied", unreadable, ["permission denied"])
    else:
        print("skip train split: permission denied (running as root, where chmod 000 does not deny reads)")
    o = os.path.join(d, "out-corpus-loop")
    expect_bad("data.corpus: a symbolic link loop", ["train", "--out", o] + TINY + ["--set", f"data.corpus={loop}"],
               ["data.corpus", loop, LOOP], [o], must_not=["not found"])
    for name, text in (("empty", ""), ("whitespace only", "  \n\t\n \r\n\n")):
        c = lm_corpus(os.path.join(d, "corpus-" + name.replace(" ", "-")), text)
        o = os.path.join(d, "out-" + name.replace(" ", "-"))
        expect_bad(f"train split: {name}", ["train", "--out", o] + TINY + ["--set", f"data.corpus={c}"],
                   ["split 'train'", os.path.join(c, "train.txt"), "empty"], [o])

    # Config files: repeated sections and keys, several documents, nothing set.
    def cfg_case(name, text, must):
        expect_bad(f"config: {name}", init + ["--config", write(os.path.join(d, "c.yaml"), text)], must, [model])

    cfg_case("key twice", "model:\n  d_model: 16\n  n_heads: 2\n  d_model: 32\n",
             ["model.d_model", "twice", "lines 2 and 4"])
    cfg_case("section twice", "model:\n  d_model: 16\ntrain:\n  lr: 1\nmodel:\n  n_heads: 2\n",
             ["section 'model'", "twice", "lines 1 and 5"])
    cfg_case("two documents", "model:\n  d_model: 16\n---\ntrain:\n  lr: 1\n", ["2 YAML documents", "---"])
    start = ["configs/demo.yaml", "configs/atlas.yaml", "builtin"]
    cfg_case("empty file", "", ["empty"] + start)
    cfg_case("comments only", "# nothing here\n# at all\n", ["empty"] + start)
    cfg_case("empty mapping", "{}\n", start)
    cfg_case("empty sections", "model:\ntrain:\n", ["sets no key"] + start)
    expect_bad("train without --config", ["train", "--out", out], ["--config", "builtin", "configs/demo.yaml"], [out])
    expect_bad("train --config builtin is the defaults (then validated)",
               ["train", "--out", out, "--config", "builtin", "--set", "train.max_steps=0"], ["train.max_steps"], [out])
    r = run(init + ["--config", "builtin", "--set", "model.d_model=16", "--set", "model.n_heads=2", "--set",
                    "model.d_ff=32", "--set", "model.vocab_size=50", "--set", "model.encoder_layers=1", "--set",
                    "model.decoder_layers=1"])
    check("init --config builtin: the built-in defaults", r is not None and r.returncode == 0 and os.path.exists(model),
          r and r.stderr)
    if os.path.exists(model):
        os.remove(model)

    # Long values are shown shortened.
    big = "x" * 100_000
    expect_bad("--set: a 100,000-character value", init + ["--config", DEMO, "--set", "model.scheme=" + big],
               ["model.scheme", "… (100000 characters)"], [model])
    expect_bad("--set: a 100,000-character key", init + ["--config", DEMO, "--set", "model." + big + "=1"],
               ["unknown config key", "(100006 characters)"], [model])
    huge = write(os.path.join(d, "huge.yaml"), "model:\n  scheme: " + "y" * 10_000_000 + "\n")
    expect_bad("config file: a 10,000,000-character value", init + ["--config", huge],
               ["model.scheme", "… (10000000 characters)"], [model])
    for name, args in (("--set", ["--set", "model.scheme=" + big]), ("file", ["--config", huge])):
        r = run(init + (["--config", DEMO] if name == "--set" else []) + args)
        check(f"the {name} message is short", r is not None and len(r.stderr) < 400, r and len(r.stderr))

    # warm-up longer than the run: a warning, and the run trains.
    small = lm_corpus(os.path.join(d, "small"), "Call me Ishmael. Some years ago, never mind how long.\n" * 20)
    wo = os.path.join(d, "warm")
    r = run(["train", "--out", wo, "--quiet"] + TINY + ["--set", f"data.corpus={small}", "--set",
                                                         "train.warmup_steps=50"], timeout=300)
    warn = [ln for ln in (r.stderr if r else "").splitlines() if ln.startswith("stx: warning:")]
    check("warmup_steps > max_steps: one warning line, and the run trains",
          r is not None and r.returncode == 0 and len(warn) == 1 and "train.warmup_steps 50 > train.max_steps 2" in warn[0],
          r and (r.returncode, r.stderr[-500:]))
    if warn:
        print(f"       {warn[0]}")

check.finish()
