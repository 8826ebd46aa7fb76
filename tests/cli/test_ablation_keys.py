"""The keys of the atlas's ablations (docs/atlas.md, questions 4 and 5), end to end.
train.dtype: float64 trains parameters, optimizer state and activations in double: it runs,
differs from float32 only by rounding, keeps float64 across a checkpoint, resumes exactly.
train.weight_decay_mode: independent decays by the schedule's factor only (its update is checked
bit for bit against torch.optim.AdamW in tests/ref/test_optimizer_parity.py): it trains, differs
from coupled decay, and is refused for Adam and SGD. Bad values exit 2 with one line.
Run: python3 tests/cli/test_ablation_keys.py build/stx"""
import json
import os
import shutil
import struct
import sys
import tempfile

from checks import Checks, bad_input_problems, cut_moby, run_stx

STX = os.path.abspath(sys.argv[1])
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ENV = dict(os.environ, OMP_NUM_THREADS="1", STX_THREADS="1")
check = Checks()


def losses(run_dir):
    out = {}
    for line in open(os.path.join(run_dir, "metrics.jsonl")):
        j = json.loads(line)
        if "loss" in j and "event" not in j:
            out[j["step"]] = j["loss"]
    return out


def dtypes(path):
    """{name: dtype} from a safetensors header."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        h = json.loads(f.read(n))
    return {k: v["dtype"] for k, v in h.items() if k != "__metadata__"}


with tempfile.TemporaryDirectory() as d:
    corpus = cut_moby(os.path.join(d, "lm"), {"train": 300, "valid": 20})
    base = ["train", "--config", os.path.join(ROOT, "configs", "atlas.yaml"), "--set", f"data.corpus={corpus}",
            "--set", "model.decoder_layers=2", "--set", "train.max_steps=20", "--set", "train.warmup_steps=5",
            "--set", "train.log_every=5", "--set", "train.eval_every=20", "--set", "train.checkpoint_every=10",
            "--set", "train.valid_sentences=10", "--set", "train.probe_sentences=2", "--quiet"]
    r32 = run_stx(STX, base + ["--out", os.path.join(d, "f32")], env=ENV)
    r64 = run_stx(STX, base + ["--out", os.path.join(d, "f64"), "--set", "train.dtype=float64"], env=ENV)
    check("float32 and float64 runs finish", r32.returncode == 0 and r64.returncode == 0, (r32.stderr + r64.stderr)[-800:])
    a, b = losses(os.path.join(d, "f32")), losses(os.path.join(d, "f64"))
    check("float64 differs from float32 by rounding only: same first loss to 1e-5, close at step 20",
          sorted(a) == sorted(b) and abs(a[5] - b[5]) < 1e-5 and abs(a[20] - b[20]) < 0.05 and a != b, (a, b))
    ck = os.path.join(d, "f64", "checkpoint_last.safetensors")
    t = dtypes(ck) if os.path.exists(ck) else {}
    model = {k: v for k, v in t.items() if k.startswith("model.")}
    optim = {k: v for k, v in t.items() if k.startswith("optim.exp_avg")}
    check("a float64 run's checkpoint keeps its parameters and Adam moments in F64",
          model and optim and set(model.values()) == {"F64"} and set(optim.values()) == {"F64"}, sorted(set(t.values())))
    t32 = dtypes(os.path.join(d, "f32", "checkpoint_last.safetensors"))
    check("a float32 run's checkpoint stays F32", {v for k, v in t32.items() if k.startswith("model.")} == {"F32"})
    # Exact resume in float64: a copy of the finished run resumed from its step-10 checkpoint
    # (--resume-prev) redoes steps 11-20 and must log the same losses.
    again = os.path.join(d, "again")
    shutil.copytree(os.path.join(d, "f64"), again)
    r2 = run_stx(STX, ["train", "--out", again, "--resume-prev", "--quiet"], env=ENV)
    c = losses(again) if r2.returncode == 0 else {}
    check("float64: resumed from step 10, steps 15 and 20 equal the straight run's bit for bit",
          r2.returncode == 0 and c.get(20) == b.get(20) and c.get(15) == b.get(15), (r2.stderr[-500:], c, b))
    bad = run_stx(STX, base + ["--out", os.path.join(d, "bad"), "--set", "train.dtype=float16"], env=ENV)
    problems = bad_input_problems(bad, ["train.dtype", "float32", "float64"])
    check("train.dtype=float16: exit 2, one line naming the key and the allowed values", not problems, problems)
    check("... and no run directory written", not os.path.exists(os.path.join(d, "bad", "metrics.jsonl")))
    ri = run_stx(STX, base + ["--out", os.path.join(d, "ind"), "--set", "train.weight_decay_mode=independent"],
                 env=ENV)
    li = losses(os.path.join(d, "ind")) if ri.returncode == 0 else {}
    check("independent weight decay trains and differs from coupled decay after the first update",
          ri.returncode == 0 and li.get(5) is not None and li[20] != a[20], (ri.stderr[-300:], li, a))
    for opt in ("adam", "sgd"):
        bad = run_stx(STX, base + ["--out", os.path.join(d, "bad"), "--set", f"train.optimizer={opt}",
                                   "--set", "train.weight_decay_mode=independent"], env=ENV)
        problems = bad_input_problems(bad, ["train.weight_decay_mode", "adamw"])
        check(f"weight_decay_mode independent with {opt}: exit 2, one line naming adamw", not problems, problems)
    bad = run_stx(STX, base + ["--out", os.path.join(d, "bad"), "--set", "train.weight_decay_mode=decoupled"], env=ENV)
    problems = bad_input_problems(bad, ["train.weight_decay_mode", "coupled", "independent"])
    check("weight_decay_mode=decoupled: exit 2, one line naming the allowed values", not problems, problems)
check.finish()
