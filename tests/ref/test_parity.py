"""Parity of `stx forward` with the independent float64 reference tests/ref/stx_ref.py, plus
the cheap-to-check parts of the initialization contract (docs/model.md).

Run: /usr/bin/python3 tests/ref/test_parity.py /path/to/stx [FILTER]   (exit 0 = all passed;
FILTER, optional, keeps only the cases whose name contains it)

Per case: `stx init` (config = configs/<arch>.yaml with --set overrides for every model key)
→ check the stored names/shapes/metadata and the init contract → perturb biases, norm
parameters and σReparam's γ/u/v (init leaves them at 0/1/SVD values, which would hide bugs in
how they are applied) and write the perturbed weights with our own safetensors writer →
`stx forward` on random tokens with padding → compare logits with stx_ref.forward.
"""

import itertools
import math
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_io as st  # noqa: E402
import stx_ref as ref  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))

# Logits tolerance: max|c − r| ≤ REL_TOL · max|r|. The C++ side computes in float32, the
# reference in float64; on these tiny models (≤ 12+6 layers, d ≤ 64) float32 accumulation
# error is ~1e-7…1e-6 relative (measured: ≤ 1.4e-6), so 1e-5 leaves margin yet catches
# semantic differences: a wrong α, mask, head split or σ moves logits by ≳ 1e-3 relative; a
# 10× ε at ε = 1e-5 only by ~4e-5, which is why two cases use norm_eps = 0.01.
REL_TOL = 1e-5
# σReparam init: γ and uᵀWv must equal the top singular value of the stored float32 W up to
# float32 SVD error.
SVD_REL_TOL = 1e-5
# Init statistics: the RMS s of n i.i.d. N(0, σ²) samples has standard error ≈ σ/√(2n)
# (var(s²) = 2σ⁴/n, delta method). Allow 5 standard errors (two-sided p ≈ 6e-7 per matrix).
N_SE = 5.0

BASE = dict(arch="encoder", vocab_size=50, d_model=16, n_heads=4, d_ff=32, encoder_layers=3,
            decoder_layers=2, scheme="post", sigma_reparam=False, gamma_init="sigma",
            norm="layernorm", norm_eps=1e-5, activation="relu", qk_init="xavier", bias=True,
            tie_embeddings=True, positions="sinusoidal", embed_scale=True, dropout=0.1,
            attention_dropout=0.1, max_len=64, pad_id=1,  # dropout ≠ 0: forward must be eval
            dyt_alpha=0.5, layerscale_init=0.0, mix_ln_ratio=0.25, residual_scale=1.0,
            qk_norm=False, attn_softcap=0.0, logit_softcap=0.0, ds_init_exponent=0.5)
# A different width per architecture, so head splits of 4, 3 and 2 heads are all exercised.
SIZES = {"encoder": dict(d_model=16, n_heads=4, d_ff=32),
         "decoder": dict(d_model=24, n_heads=3, d_ff=48),
         "encoder-decoder": dict(d_model=32, n_heads=2, d_ff=64)}
ARCHS = ("encoder", "decoder", "encoder-decoder")


class Case:
    def __init__(self, name, arch, seed, stats=False, all_pad_row=False, batch=3, **over):
        self.name, self.seed, self.stats, self.all_pad_row, self.batch = \
            name, seed, stats, all_pad_row, batch
        self.model = dict(BASE, **SIZES[arch])
        self.model["arch"] = arch
        self.model.update(over)


def build_cases():
    cases, seed = [], 100

    def add(name, arch, **kw):
        nonlocal seed
        seed += 1
        cases.append(Case(f"{name} [{arch}]", arch, seed, **kw))

    # scheme × arch × norm (none only with post-family schemes)
    for scheme, arch, norm in itertools.product(("post", "pre", "deepnorm", "post-init"),
                                                ARCHS, ("layernorm", "rmsnorm", "none")):
        if norm == "none" and scheme not in ("post", "post-init"):
            continue
        add(f"{scheme}/{norm}", arch, scheme=scheme, norm=norm)
    # the stabilizers of docs/model.md#stabilizers × arch (mix_ln_ratio 0.5: both kinds of layer)
    for arch in ARCHS:
        add("admin", arch, scheme="admin")
        add("normformer", arch, scheme="normformer")
        add("normformer rmsnorm gelu", arch, scheme="normformer", norm="rmsnorm", activation="gelu")
        add("sub-ln", arch, scheme="sub-ln")
        add("rezero", arch, scheme="rezero", norm="none")
        add("layerscale (CaiT eps)", arch, scheme="layerscale")
        add("layerscale eps=0.3 rmsnorm", arch, scheme="layerscale", layerscale_init=0.3, norm="rmsnorm")
        add("peri-ln", arch, scheme="peri-ln")
        add("mix-ln p=0.5", arch, scheme="mix-ln", mix_ln_ratio=0.5)
        add("ln-scaling", arch, scheme="ln-scaling")
        add("depth-scaled a=1.5", arch, scheme="depth-scaled", residual_scale=1.5)
        add("dyt pre", arch, scheme="pre", norm="dyt", dyt_alpha=0.8)
        add("dyt peri-ln", arch, scheme="peri-ln", norm="dyt")
        add("qk_norm post", arch, qk_norm=True)
        add("qk_norm pre rmsnorm", arch, scheme="pre", qk_norm=True, norm="rmsnorm")
        add("softcap attn 0.3 logits 2", arch, attn_softcap=0.3, logit_softcap=2.0)
        add("t-fixup", arch, scheme="t-fixup", norm="none")
        add("ds-init", arch, scheme="ds-init")
    add("mix-ln p=0.25 (default) 8L-4L", "encoder-decoder", scheme="mix-ln", encoder_layers=8,
        decoder_layers=4)
    add("combined: mix-ln qk_norm softcap sigma untied", "encoder-decoder",
        scheme="mix-ln", mix_ln_ratio=0.5, qk_norm=True, attn_softcap=1.0, logit_softcap=3.0,
        sigma_reparam=True, tie_embeddings=False)
    add("combined: admin rmsnorm sigma untied qk_norm", "encoder-decoder", scheme="admin", norm="rmsnorm",
        sigma_reparam=True, tie_embeddings=False, qk_norm=True)
    add("combined: sub-ln dyt learned 6L-3L", "encoder-decoder", scheme="sub-ln", norm="dyt",
        positions="learned", encoder_layers=6, decoder_layers=3)
    add("combined: layerscale dyt qk_norm learned gelu", "decoder", scheme="layerscale",
        norm="dyt", qk_norm=True, positions="learned", activation="gelu", layerscale_init=0.2)
    # variants
    add("sigma_reparam gamma=sigma untied", "encoder", sigma_reparam=True, tie_embeddings=False)
    add("sigma_reparam gamma=sigma pre", "decoder", sigma_reparam=True, scheme="pre")
    add("sigma_reparam gamma=sigma deepnorm untied", "encoder-decoder", sigma_reparam=True,
        scheme="deepnorm", tie_embeddings=False)
    add("sigma_reparam gamma=sigma norm=none", "encoder-decoder", sigma_reparam=True, norm="none")
    add("sigma_reparam gamma=one", "encoder", sigma_reparam=True, gamma_init="one")
    add("sigma_reparam gamma=one untied", "decoder", sigma_reparam=True, gamma_init="one",
        tie_embeddings=False)
    add("sigma_reparam gamma=one rmsnorm", "encoder-decoder", sigma_reparam=True,
        gamma_init="one", norm="rmsnorm")
    for arch in ARCHS:
        add("tie_embeddings=false", arch, tie_embeddings=False)
        add("positions=learned", arch, positions="learned")
        add("positions=none", arch, positions="none")
        add("activation=gelu", arch, activation="gelu")
        add("bias=false", arch, bias=False)
        add("embed_scale=false", arch, embed_scale=False)
        add("qk_init=zero", arch, qk_init="zero")
    add("tie_embeddings=false pre", "encoder-decoder", tie_embeddings=False, scheme="pre")
    add("pad_id=-1 (no padding mask)", "encoder-decoder", pad_id=-1)
    add("pad_id=0", "decoder", pad_id=0)
    add("all-pad rows (uniform attention)", "encoder-decoder", all_pad_row=True)
    add("all-pad rows (uniform attention)", "decoder", all_pad_row=True)
    add("all-pad rows (uniform attention)", "encoder", all_pad_row=True)
    add("rmsnorm norm_eps=0.01", "encoder-decoder", norm="rmsnorm", norm_eps=0.01)
    add("layernorm norm_eps=0.01 pre", "decoder", scheme="pre", norm_eps=0.01)
    add("combined: deepnorm rmsnorm sigma learned gelu no-bias untied no-scale", "encoder-decoder",
        scheme="deepnorm", norm="rmsnorm", sigma_reparam=True, positions="learned",
        activation="gelu", bias=False, tie_embeddings=False, embed_scale=False)
    # acceptance case: a deep DeepNorm encoder-decoder
    add("acceptance deepnorm 12L-6L", "encoder-decoder", scheme="deepnorm", encoder_layers=12,
        decoder_layers=6, d_model=32, n_heads=4, d_ff=64)
    # init statistics (moderate matrices so the std estimates are tight)
    wide = dict(d_model=64, n_heads=4, d_ff=256, vocab_size=256, stats=True)
    for arch in ARCHS:
        add("init stats deepnorm (gain beta)", arch, scheme="deepnorm", **wide)
    add("init stats post-init (1/(N-l+1))", "encoder-decoder", scheme="post-init", **wide)
    add("init stats post xavier untied", "encoder-decoder", scheme="post",
        tie_embeddings=False, positions="learned", **wide)
    for arch in ARCHS:
        add("init stats t-fixup", arch, scheme="t-fixup", norm="none", **wide)
        add("init stats t-fixup untied", arch, scheme="t-fixup", norm="none", tie_embeddings=False, **wide)
        add("init stats ds-init (paper: l^-1/2)", arch, scheme="ds-init", **wide)
        add("init stats sub-ln (Magneto gamma)", arch, scheme="sub-ln", **wide)
    add("init stats ds-init (code: l^-1/4) 8L-4L", "encoder-decoder", scheme="ds-init", ds_init_exponent=0.25,
        encoder_layers=8, decoder_layers=4, **wide)
    add("init stats deepnorm 12L-6L", "encoder-decoder", scheme="deepnorm", encoder_layers=12,
        decoder_layers=6, **wide)
    return cases


# --------------------------------------------------------------------------- running stx

def fmt(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        s = repr(v)  # YAML 1.1 readers want a '.' in a float with an exponent: 1.0e-05
        return s.replace("e", ".0e") if "e" in s and "." not in s else s
    return str(v)


def run(cmd, what):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired:
        raise CaseFailure(f"{what} timed out: {' '.join(cmd)}")
    if p.returncode != 0:
        tail = (p.stderr.strip() or p.stdout.strip()).splitlines()[-3:]
        raise CaseFailure(f"{what} exited {p.returncode}: {' | '.join(tail)}\n    cmd: "
                          f"{' '.join(cmd)}")
    return p


class CaseFailure(Exception):
    pass


def base_config(arch, tmp):
    path = os.path.join(ROOT, "configs", f"{arch}.yaml")
    if os.path.exists(path):
        return path
    # Fallback while configs/ is not there yet: a model-only YAML (every key is --set anyway).
    path = os.path.join(tmp, "base.yaml")
    with open(path, "w") as f:
        f.write("model:\n" + "".join(f"  {k}: {fmt(v)}\n" for k, v in BASE.items()
                                     if k != "arch") + f"  arch: {arch}\n")
    return path


def stx_init(stx, case, tmp, out, seed=None):
    cmd = [stx, "init", "--config", base_config(case.model["arch"], tmp)]
    for k, v in case.model.items():
        cmd += ["--set", f"model.{k}={fmt(v)}"]
    cmd += ["--seed", str(case.seed if seed is None else seed), "--out", out]
    run(cmd, "stx init")


# --------------------------------------------------------------------------- checks

def check_file(weights, meta, case):
    """Metadata, resolved config and the exact name/shape/dtype set."""
    errs = []
    if meta.get("stx.format") != "stx-model/1":
        errs.append(f"metadata stx.format = {meta.get('stx.format')!r}, want 'stx-model/1'")
    if "stx.config" not in meta:
        raise CaseFailure("metadata has no stx.config")
    cfg = ref.config_from_metadata(meta)
    for sec in ("model", "train", "data"):
        if sec not in cfg:
            errs.append(f"stx.config has no '{sec}' section")
    m = cfg.get("model", {})
    for k, v in case.model.items():
        got = m.get(k)
        same = (isinstance(got, (int, float)) and not isinstance(got, bool)
                and not isinstance(v, bool) and isinstance(v, (int, float))
                and math.isclose(got, v, rel_tol=1e-12)) or got == v
        if not same:
            errs.append(f"resolved config model.{k} = {got!r}, but --set gave {v!r}")
    if errs:
        raise CaseFailure("; ".join(errs))
    want = ref.expected_shapes(cfg)
    missing = sorted(set(want) - set(weights))
    extra = sorted(set(weights) - set(want))
    if missing or extra:
        raise CaseFailure(f"names differ from docs/model.md: missing {missing[:6]}"
                          f"{'…' if len(missing) > 6 else ''}, unexpected {extra[:6]}"
                          f"{'…' if len(extra) > 6 else ''}")
    for k, shp in want.items():
        t = weights[k]
        if list(t.shape) != shp or t.dtype != torch.float32:
            errs.append(f"{k}: {t.dtype} {list(t.shape)}, want float32 {shp}")
        elif not torch.isfinite(t).all():
            errs.append(f"{k}: non-finite values")
    if errs:
        raise CaseFailure("; ".join(errs[:6]))
    return cfg


def check_init_exact(w, cfg):
    """Deterministic parts of the init contract: biases 0, norm weights 1, qk_init zero,
    σReparam γ/u/v."""
    m = ref.model_cfg(cfg)
    errs = []
    for k, t in w.items():
        if k.endswith(".bias") and t.abs().max().item() != 0:
            errs.append(f"{k} not zero")
        if is_norm_weight(k) and not torch.all(t == 1):
            errs.append(f"{k} not one")
        if k.rsplit(".", 1)[-1] in ("c_attn", "w_resid") and not torch.all(t == 1):
            errs.append(f"{k} not one (NormFormer's scales start at 1)")
        if k.endswith("_ratio_change") and not (torch.all(t == t[0]) and 0 < t[0].item() < 1e6):
            errs.append(f"{k} is not a positive constant vector (Admin's ω)")
        if k.endswith(".alpha") and not torch.all(t == np.float32(m["dyt_alpha"])):
            errs.append(f"{k} = {t.flatten()[0].item():.7g}, want dyt_alpha {m['dyt_alpha']}")
        if k.endswith("_resweight") and not torch.all(t == 0):
            errs.append(f"{k} not zero (ReZero initializes α to 0)")
        if k.rsplit(".", 1)[-1] in ("gamma_1", "gamma_2", "gamma_cross"):
            side = k.split(".")[0]
            L = m[f"{side}_layers"]
            eps = m["layerscale_init"] or (0.1 if L <= 18 else 1e-5 if L <= 24 else 1e-6)  # CaiT
            if not torch.all(t == np.float32(eps)):
                errs.append(f"{k} not {eps:g} (LayerScale ε)")
    for p in ref.linear_names(cfg):
        W = w[p + ".weight"].double()
        if m["qk_init"] == "zero" and (p.endswith("q_proj") or p.endswith("k_proj")):
            if W.abs().max().item() != 0:
                errs.append(f"{p}.weight not zero with qk_init=zero")
            continue
        if m["sigma_reparam"]:
            s = torch.linalg.svdvals(W)[0].item()
            u, v, g = w[p + ".u"].double(), w[p + ".v"].double(), w[p + ".gamma"].item()
            want_g = s if m["gamma_init"] == "sigma" else 1.0
            if abs(g - want_g) > SVD_REL_TOL * max(want_g, 1e-30):
                errs.append(f"{p}.gamma = {g:.7g}, want {want_g:.7g} (gamma_init "
                            f"{m['gamma_init']}; top singular value {s:.7g})")
            uwv = (u @ W @ v).item()
            if abs(u.norm().item() - 1) > 1e-5 or abs(v.norm().item() - 1) > 1e-5 \
                    or abs(uwv - s) > SVD_REL_TOL * s:
                errs.append(f"{p}: u, v are not the top singular pair (|u| {u.norm():.6f}, "
                            f"|v| {v.norm():.6f}, uᵀWv {uwv:.7g} vs σ {s:.7g})")
    if errs:
        raise CaseFailure("init contract: " + "; ".join(errs[:6])
                          + (f" (+{len(errs) - 6} more)" if len(errs) > 6 else ""))


def expected_std(cfg, prefix, shape):
    """Init std of a linear weight by docs/model.md: Xavier normal with gain (β for deepnorm's
    fc1/fc2/v_proj/out_proj), divided by N − l + 1 for post-init."""
    m = ref.model_cfg(cfg)
    fan_out, fan_in = shape
    std = math.sqrt(2.0 / (fan_in + fan_out))
    if ".layers." not in prefix:
        return std  # untied output projection: plain Xavier
    side, rest = prefix.split(".layers.")
    layer = int(rest.split(".")[0])
    leaf = prefix.rsplit(".", 1)[1]
    if m["scheme"] == "deepnorm" and leaf in ("fc1", "fc2", "v_proj", "out_proj"):
        std *= ref.deepnorm_alpha_beta(m["arch"], m["encoder_layers"],
                                       m["decoder_layers"])[side][1]
    if m["scheme"] == "post-init":
        std /= m[f"{side}_layers"] - (layer + 1) + 1
    if m["scheme"] == "t-fixup" and leaf in ("fc1", "fc2", "v_proj", "out_proj"):
        n = m[f"{side}_layers"]
        std *= 0.67 * n ** -0.25 if side == "encoder" else (9 * n) ** -0.25
    if m["scheme"] == "ds-init":  # U(−b, b), b = √(6/(fan_in+fan_out))·l^(−e): std b/√3
        std *= (layer + 1) ** -float(m["ds_init_exponent"])
    if m["scheme"] == "sub-ln" and leaf in ("fc1", "fc2", "v_proj", "out_proj") and ".encoder_attn." not in prefix:
        # Magneto's γ (torchscale; it skips cross-attention)
        N, M = m["encoder_layers"], m["decoder_layers"]
        if m["arch"] == "encoder-decoder":
            std *= math.sqrt(math.log(3 * M) * math.log(2 * N) / 3) if side == "encoder" else \
                math.sqrt(math.log(3 * M))
        else:
            std *= math.sqrt(math.log(2 * m[f"{side}_layers"]))
    return std


def embedding_std(cfg, name):
    """N(0, 1/d); T-Fixup scales by (9N)^(−1/4) (encoder) / (9M)^(−1/4) (decoder, and a tied
    encoder-decoder matrix)."""
    m = ref.model_cfg(cfg)
    std = 1 / math.sqrt(m["d_model"])
    if m["scheme"] == "t-fixup" and name.endswith("embed_tokens.weight"):
        side = name.split(".")[0]
        if m["arch"] == "encoder-decoder" and m["tie_embeddings"]:
            side = "decoder"
        std *= (9 * m[f"{side}_layers"]) ** -0.25
    return std


def check_init_stats(w, cfg):
    m = ref.model_cfg(cfg)
    errs, worst = [], 0.0
    items = [(p, expected_std(cfg, p, list(w[p + ".weight"].shape))) for p in ref.linear_names(cfg)
             if not (m["qk_init"] == "zero" and p.rsplit(".", 1)[1] in ("q_proj", "k_proj"))]
    d = m["d_model"]
    for k in w:
        if k.endswith("embed_tokens.weight") or k.endswith("embed_positions.weight"):
            items.append((k[: -len(".weight")], embedding_std(cfg, k)))
    for p, sigma in items:
        W = w[p + ".weight"].double()
        n = W.numel()
        rms = W.pow(2).mean().sqrt().item()
        se = sigma / math.sqrt(2 * n)
        z = (rms - sigma) / se
        worst = max(worst, abs(z))
        if abs(z) > N_SE:
            errs.append(f"{p}.weight std {rms:.5f}, want {sigma:.5f} ± {N_SE:g}·{se:.5f} "
                        f"({z:+.1f} se)")
    if errs:
        raise CaseFailure("init statistics: " + "; ".join(errs[:6])
                          + (f" (+{len(errs) - 6} more)" if len(errs) > 6 else ""))
    return worst, len(items)


def is_norm_weight(k):
    return k.endswith(".weight") and ("layer_norm" in k or "_norm." in k or "layernorm" in k or "attn_ln" in k)


def check_admin_profile(w, cfg):
    """Admin's ω (stx/model/admin.h): the first sub-layer of each stack has ω = 1 exactly, and ω
    grows (ω² adds the branch variances of the earlier sub-layers)."""
    m = ref.model_cfg(cfg)
    errs = []
    for side in ("encoder", "decoder"):
        names = [k for k in w if k.startswith(side + ".") and k.endswith("_ratio_change")]
        if not names:
            continue
        first = [k for k in names if k.startswith(f"{side}.layers.0.") and
                 ("attention_ratio" in k or "self_ratio" in k)]
        if len(first) != 1 or w[first[0]][0].item() != 1.0:
            errs.append(f"{side}: the first sub-layer's ω is not 1")
        last = w[f"{side}.layers.{m[side + '_layers'] - 1}.fc_ratio_change"][0].item()
        if not last > 1.0:
            errs.append(f"{side}: the last sub-layer's ω = {last:.4g}, want > 1")
    if errs:
        raise CaseFailure("Admin profile: " + "; ".join(errs))


def perturb(w, cfg, gen):
    """Move the parameters init sets to trivial values (biases 0, norm weights 1, γ = σ, u/v
    the exact singular pair) so the forward comparison exercises how they are applied."""
    out = dict(w)
    for k, t in w.items():
        r = torch.randn(t.shape, generator=gen, dtype=torch.float64)
        if k.endswith(".bias"):
            out[k] = (t.double() + 0.2 * r).float()
        elif is_norm_weight(k):
            out[k] = (t.double() + 0.2 * r).float()
        elif k.endswith(".alpha") or k.rsplit(".", 1)[-1] in ("gamma_1", "gamma_2", "gamma_cross", "c_attn",
                                                                 "w_resid") or k.endswith("_ratio_change"):
            out[k] = (t.double() + 0.2 * r).float()
        elif k.endswith("_resweight"):
            out[k] = (0.5 * r).float()
        elif k.endswith(".gamma"):
            out[k] = (t.double() * torch.exp(0.2 * r)).float()
        elif k.endswith(".u") or k.endswith(".v"):
            x = t.double() + 0.3 * r / r.norm()
            out[k] = (x / x.norm()).float()
    return out


def make_tokens(case, rng):
    m = case.model
    V, pad = m["vocab_size"], m["pad_id"]
    Ts, Tt = 6 + case.seed % 4, 3 + case.seed % 3  # lengths differ between src and tgt

    def draw(T, pads):
        x = rng.integers(0, V - (1 if pad >= 0 else 0), size=(case.batch, T))
        if pad >= 0:
            x[x >= pad] += 1  # never pad_id inside the sequence
            for row, n in enumerate(pads):
                if n:
                    x[row, T - n:] = pad
        return x.astype(np.int64)

    full = case.all_pad_row
    src = draw(Ts, [0, 2, Ts if full else 3])
    tgt = draw(Tt, [0, 2, Tt if full else 1])
    arch = m["arch"]
    toks = {}
    if arch in ("encoder", "encoder-decoder"):
        toks["src"] = src
    if arch in ("decoder", "encoder-decoder"):
        toks["tgt"] = tgt
    return toks


def run_case(stx, case):
    with tempfile.TemporaryDirectory(prefix="stx_parity_") as tmp:
        init_path = os.path.join(tmp, "m.safetensors")
        stx_init(stx, case, tmp, init_path)
        w, meta = st.load(init_path)
        cfg = check_file(w, meta, case)
        check_init_exact(w, cfg)
        if ref.model_cfg(cfg)["scheme"] == "admin":
            check_admin_profile(w, cfg)
        notes = []
        if case.stats:
            worst, n = check_init_stats(w, cfg)
            notes.append(f"init std of {n} matrices within {worst:.1f} se")
        gen = torch.Generator().manual_seed(case.seed)
        model_path = os.path.join(tmp, "m_perturbed.safetensors")
        wp = perturb(w, cfg, gen)
        st.save(model_path, wp, meta)
        toks = make_tokens(case, np.random.default_rng(case.seed))
        tok_path = os.path.join(tmp, "tokens.safetensors")
        st.save(tok_path, toks)
        out_path = os.path.join(tmp, "out.safetensors")
        run([stx, "forward", "--model", model_path, "--input", tok_path, "--out", out_path],
            "stx forward")
        outs, _ = st.load(out_path)
        if "logits" not in outs:
            raise CaseFailure(f"forward output has no 'logits' (has {sorted(outs)})")
        c = outs["logits"]
        src = torch.from_numpy(toks["src"]) if "src" in toks else None
        tgt = torch.from_numpy(toks["tgt"]) if "tgt" in toks else None
        r = ref.forward(wp, cfg, src, tgt)
        if c.dtype != torch.float32 or list(c.shape) != list(r.shape):
            raise CaseFailure(f"logits {c.dtype} {list(c.shape)}, want float32 {list(r.shape)}")
        if not torch.isfinite(c).all():
            raise CaseFailure("logits contain NaN/Inf")
        err = (c.double() - r).abs().max().item()
        scale = r.abs().max().item()
        msg = f"max|c-r| {err:.2e} (scale {scale:.3g}, rel {err / scale:.1e})"
        if not err <= REL_TOL * scale:
            where = np.unravel_index(int((c.double() - r).abs().argmax()), tuple(r.shape))
            raise CaseFailure(f"logits differ: {msg} > {REL_TOL:g}·scale, worst at "
                              f"[batch, pos, vocab] = {list(map(int, where))}")
        return "; ".join([msg] + notes)


def run_determinism(stx, tmp_case):
    """Same seed and config → bit-identical weights; another seed → different weights."""
    with tempfile.TemporaryDirectory(prefix="stx_parity_") as tmp:
        paths = [os.path.join(tmp, f"{i}.safetensors") for i in range(3)]
        for p, s in zip(paths, (7, 7, 8)):
            stx_init(stx, tmp_case, tmp, p, seed=s)
        (a, _), (b, _), (c, _) = (st.load(p) for p in paths)
        same = a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
        if not same:
            raise CaseFailure("two `stx init --seed 7` runs gave different weights")
        if all(torch.equal(a[k], c[k]) for k in a):
            raise CaseFailure("`--seed 7` and `--seed 8` gave identical weights")
        return "seed 7 twice identical, seed 8 different"


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: test_parity.py /path/to/stx [NAME_FILTER]", file=sys.stderr)
        return 2
    stx = os.path.abspath(sys.argv[1])
    if not (os.path.isfile(stx) and os.access(stx, os.X_OK)):
        print(f"error: stx binary not found or not executable: {stx}", file=sys.stderr)
        return 2
    torch.set_num_threads(1)
    cases = build_cases()
    det = Case("determinism (same seed → same weights)", "encoder-decoder", 0,
               sigma_reparam=True, tie_embeddings=False)
    jobs = [(c.name, lambda c=c: run_case(stx, c)) for c in cases]
    jobs.append((det.name, lambda: run_determinism(stx, det)))
    if len(sys.argv) == 3:
        jobs = [j for j in jobs if sys.argv[2] in j[0]]

    def attempt(job):
        name, fn = job
        try:
            return name, True, fn()
        except CaseFailure as e:
            return name, False, str(e)
        except Exception as e:  # a bug or an unreadable file: report, keep going
            return name, False, f"{type(e).__name__}: {e}"

    passed = failed = 0
    # First the reference itself, against torch.nn.functional / torch.nn layers.
    bad = [f"{n} error {e:.2e} > {t:g}" for n, e, t in ref.self_check() if not e <= t]
    print(f"{'FAIL' if bad else 'PASS'}  reference self-check (stx_ref vs torch.nn, α/β table): "
          f"{'; '.join(bad) or 'ok'}", flush=True)
    passed, failed = int(not bad), int(bool(bad))
    with ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1))) as pool:
        for name, ok, msg in pool.map(attempt, jobs):
            print(f"{'PASS' if ok else 'FAIL'}  {name}: {msg}", flush=True)
            passed += ok
            failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
