"""Every stabilizer of docs/model.md#stabilizers through `stx train`: a translation model and a
language model per scheme row, each with every diagnostic in metrics.jsonl (per-layer gradient
norms, ΔF, norm inputs, attention entropy, the largest attention logit, ‖W_K W_Qᵀ‖₂, log Z),
and the combinations stx refuses (exit 2, one line naming the reason).
Run: python3 tests/cli/test_stabilizers.py build/stx"""
import gzip
import json
import math
import os
import sys
import tempfile

from checks import Checks, bad_input_problems, cut_bible, metrics, run_stx  # noqa: E402

STX = os.path.abspath(sys.argv[1])
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ENV = dict(os.environ, OMP_NUM_THREADS="1")
check = Checks()

# (name, --set assignments): the residual schemes, the norms and the modifiers.
ROWS = [
    ("rezero", ["model.scheme=rezero", "model.norm=none"]),
    ("layerscale", ["model.scheme=layerscale"]),
    ("peri-ln", ["model.scheme=peri-ln"]),
    ("mix-ln", ["model.scheme=mix-ln", "model.mix_ln_ratio=0.5"]),
    ("ln-scaling", ["model.scheme=ln-scaling"]),
    ("depth-scaled", ["model.scheme=depth-scaled", "model.residual_scale=2"]),
    ("t-fixup", ["model.scheme=t-fixup", "model.norm=none"]),
    ("ds-init", ["model.scheme=ds-init"]),
    ("admin", ["model.scheme=admin"]),
    ("normformer", ["model.scheme=normformer"]),
    ("sub-ln", ["model.scheme=sub-ln"]),
    ("pre-dyt", ["model.scheme=pre", "model.norm=dyt"]),
    ("post-qknorm", ["model.scheme=post", "model.qk_norm=true"]),
    ("pre-softcap", ["model.scheme=pre", "model.attn_softcap=50", "model.logit_softcap=30"]),
    ("post-zloss", ["model.scheme=post", "train.z_loss=1e-4"]),
]
DIAGNOSTICS = ["grad_norm_layer", "grad_norm_sublayer", "delta_f", "ln_input_norm", "attn_entropy",
               "attn_max_logit", "attn_sigma_kq", "log_z"]


def sets(items):
    return [a for s in items for a in ("--set", s)]


def lines(path, n):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [next(f) for _ in range(n)]


def train(out, base, extra):
    r = run_stx(STX, ["train", "--out", out, "--quiet"] + base + sets(extra), env=ENV)
    ms = metrics(out) if r.returncode == 0 else []
    return r, [m for m in ms if "loss" in m]


with tempfile.TemporaryDirectory() as d:
    mt = cut_bible(os.path.join(d, "mt"), {"train": 300, "valid": 20, "test": 20})
    lmc = os.path.join(d, "lm")
    os.makedirs(lmc)
    for split, n in (("train", 300), ("valid", 20)):
        with open(os.path.join(lmc, f"{split}.txt"), "w", encoding="utf-8") as f:
            f.write("".join(lines(os.path.join(ROOT, "data", "default", "moby-dick", f"{split}.txt.gz"), n)))
    small = ["model.d_model=32", "model.d_ff=64", "model.n_heads=2", "data.spm_vocab_size=200", "train.max_steps=10",
             "train.log_every=5", "train.eval_every=10", "train.checkpoint_every=10", "train.warmup_steps=5",
             "train.max_tokens=600", "train.probe_sentences=4"]
    bases = {
        "encoder-decoder": ["--config", os.path.join(ROOT, "configs", "demo.yaml")] +
        sets(small + [f"data.corpus={mt}", "model.encoder_layers=2", "model.decoder_layers=2",
                      "train.valid_bleu_sentences=0"]),
        "decoder": ["--config", os.path.join(ROOT, "configs", "lm-pre.yaml")] +
        sets(small + [f"data.corpus={lmc}", "model.decoder_layers=3"]),
    }
    for name, extra in ROWS:
        for arch, base in bases.items():
            r, tl = train(os.path.join(d, f"{name}-{arch}"), base, extra)
            ok = r.returncode == 0 and len(tl) == 2
            check(f"{name} [{arch}] trains", ok, r.stderr[-800:])
            if not ok:
                continue
            last = tl[-1]
            check(f"{name} [{arch}] loss finite and falling",
                  all(math.isfinite(m["loss"]) for m in tl) and tl[-1]["loss"] < tl[0]["loss"], [m["loss"] for m in tl])
            missing = [k for k in DIAGNOSTICS if k not in last]
            if name == "post-qknorm":  # the entropy bound needs logits x W_q W_kᵀ yᵀ; QK-LayerNorm has none
                check(f"{name} [{arch}] reports no entropy bound", "attn_entropy_bound" not in last, last.keys())
            check(f"{name} [{arch}] logs every diagnostic", not missing, missing)
            if "attn_max_logit" in last and name == "pre-softcap":
                top = max(v for mods in last["attn_max_logit"].values() for vs in mods.values() for v in vs)
                check(f"{name} [{arch}] attention logits under the cap", top <= 50, top)
            if name == "admin":  # the profiling pass on the first training batch is recorded
                prof = os.path.join(d, f"{name}-{arch}", "admin_profile.json")
                recs = json.load(open(prof))["sublayers"] if os.path.exists(prof) else []
                n_sub = {"encoder-decoder": 2 * 2 + 2 * 3, "decoder": 3 * 2}[arch]
                check(f"{name} [{arch}] admin_profile.json: one ω per sub-layer, ω_1 = 1, growing",
                      len(recs) == n_sub and recs[0]["omega"] == 1.0 and recs[-1]["omega"] > 1.0,
                      [(r["name"], round(r["omega"], 3)) for r in recs])
            if "log_z" in last:
                check(f"{name} [{arch}] log Z mean ≤ max", last["log_z"]["mean"] <= last["log_z"]["max"], last["log_z"])

    # Combinations the papers do not define: exit 2, one line with the reason, no file written.
    out = os.path.join(d, "refused.safetensors")
    for what, extra, mention in (
            ("rezero with a norm", ["model.scheme=rezero"], ["ReZero", "model.norm"]),
            ("t-fixup with a norm", ["model.scheme=t-fixup"], ["T-Fixup", "model.norm"]),
            ("peri-ln without a norm", ["model.scheme=peri-ln", "model.norm=none"], ["needs a norm"]),
            ("deepnorm with Dynamic Tanh", ["model.scheme=deepnorm", "model.norm=dyt"], ["Dynamic Tanh"]),
            ("admin without a norm", ["model.scheme=admin", "model.norm=none"], ["needs a norm"]),
            ("admin with Dynamic Tanh", ["model.scheme=admin", "model.norm=dyt"], ["Dynamic Tanh"]),
            ("mix-ln ratio out of range", ["model.scheme=mix-ln", "model.mix_ln_ratio=2"], ["model.mix_ln_ratio"]),
            ("negative z-loss", ["train.z_loss=-1"], ["train.z_loss"])):
        r = run_stx(STX, ["init", "--config", os.path.join(ROOT, "configs", "demo.yaml"), "--seed", "1", "--out", out]
                    + sets(extra), env=ENV)
        problems = bad_input_problems(r, mention)
        if os.path.exists(out):
            problems.append("wrote the output")
        check(f"refused: {what}", not problems, "; ".join(problems))

check.finish()
