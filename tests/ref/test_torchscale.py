"""Parity with the reference code itself, torchscale 0.3.0 (the pinned PyPI package):
- stx's weights, loaded under their own names into torchscale's modules, give stx's logits —
  Sub-LN / Magneto (`subln=True`) in the encoder, decoder and encoder-decoder, and Post-LN,
  Pre-LN and DeepNorm (`deepnorm=True`, torchscale's α) in the decoder and encoder-decoder;
- a torchscale model's own state dict, written as an stx weights file, gives torchscale's
  logits in `stx forward` (the same schemes and architectures);
- torchscale's γ-initialization of v_proj/out_proj/fc1/fc2 is the one stx applies.

Run: .venv/bin/python3 tests/ref/test_torchscale.py /path/to/stx
(scripts/setup.sh installs torchscale==0.3.0, fairscale==0.4.0 and timm==0.6.13 into .venv/,
requirements.txt.)

Logits: `stx init --set model.scheme=sub-ln …` → perturb biases and norm parameters (as
test_parity.py) → `stx forward` on random tokens (no padding: torchscale's decoder has no key
padding mask) → torchscale Encoder / Decoder / EncoderDecoder in float64 with every tensor
loaded by name (strict) → max|stx − torchscale| ≤ 1e-5 · max|torchscale|.
γ: torchscale multiplies those four weights by γ at construction; with one seed, a
`subln=True` and a `subln=False` model draw the same weights (the extra norms draw nothing), so
their ratio is γ exactly. stx likewise: `sub-ln` vs `pre` with one seed. Both must agree.
"""

import math
import os
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import safetensors_io as st  # noqa: E402
import stx_ref as ref  # noqa: E402
import test_parity as tp  # noqa: E402

try:
    import torchscale  # noqa: E402,F401
except ImportError as e:
    sys.exit(f"error: torchscale is not importable ({e}); run scripts/setup.sh (installs it into .venv/)")
from torchscale.architecture.config import DecoderConfig, EncoderConfig, EncoderDecoderConfig  # noqa: E402
from torchscale.architecture.decoder import Decoder  # noqa: E402
from torchscale.architecture.encoder import Encoder  # noqa: E402
from torchscale.architecture.encoder_decoder import EncoderDecoder  # noqa: E402

REL_TOL = 1e-5  # as test_parity.py: float32 (stx) against float64 (torchscale, see below)
GAMMA_TOL = 1e-6


class Sinusoidal(torch.nn.Module):
    """stx's sinusoidal positions (docs/model.md) as a torchscale embed_positions module."""

    def __init__(self, d, max_len):
        super().__init__()
        self.register_buffer("table", ref.sinusoidal_positions(max_len, d), persistent=False)

    def forward(self, tokens, **kwargs):
        return self.table[: tokens.shape[1]].unsqueeze(0).to(torch.get_default_dtype())


class Learned(torch.nn.Embedding):
    def forward(self, tokens, **kwargs):
        return super().forward(torch.arange(tokens.shape[1]).unsqueeze(0))


def positions(m):
    if m["positions"] == "sinusoidal":
        return Sinusoidal(m["d_model"], m["max_len"])
    if m["positions"] == "learned":
        return Learned(m["max_len"], m["d_model"])
    return None


def side_args(m, side):
    return {f"{side}_embed_dim": m["d_model"], f"{side}_attention_heads": m["n_heads"],
            f"{side}_ffn_embed_dim": m["d_ff"], f"{side}_layers": m[f"{side}_layers"]}


def common_args(m):
    return dict(vocab_size=m["vocab_size"], activation_fn=m["activation"], dropout=0.0,
                attention_dropout=0.0, activation_dropout=0.0, drop_path_rate=0.0,
                no_scale_embedding=not m["embed_scale"], layernorm_eps=m["norm_eps"], subln=True)


def build_torchscale(m, subln=True, scheme=None):
    """The torchscale model of stx config m. scheme (stx's name) picks torchscale's flags:
    sub-ln → subln; pre → normalize_before; post → neither; deepnorm → deepnorm (which turns
    normalize_before off and sets α from the layer counts, as stx)."""
    V, d = m["vocab_size"], m["d_model"]
    args = common_args(m)
    scheme = scheme or ("sub-ln" if subln else "pre")
    args["subln"] = scheme == "sub-ln"
    if scheme in ("pre", "post"):
        args["decoder_normalize_before"] = args["encoder_normalize_before"] = scheme == "pre"
    if scheme == "deepnorm":
        args["deepnorm"] = True
    tied = m["tie_embeddings"]
    if m["arch"] == "decoder":
        cfg = DecoderConfig(**side_args(m, "decoder"), share_decoder_input_output_embed=tied, **args)
        return Decoder(cfg, torch.nn.Embedding(V, d), positions(m))
    if m["arch"] == "encoder":
        cfg = EncoderConfig(**side_args(m, "encoder"), share_encoder_input_output_embed=tied, **args)
        # torchscale 0.3.0's tied encoder head asserts a config field EncoderConfig does not define
        cfg.encoder_embedding_type = "language"
        return Encoder(cfg, torch.nn.Embedding(V, d), positions(m))
    cfg = EncoderDecoderConfig(**side_args(m, "encoder"), **side_args(m, "decoder"),
                               share_all_embeddings=tied, share_decoder_input_output_embed=tied, **args)
    emb = torch.nn.Embedding(V, d)
    return EncoderDecoder(cfg, emb, positions(m), emb if tied else torch.nn.Embedding(V, d), positions(m))


def stx_name(m, key):
    """The stx tensor (docs/model.md) behind torchscale's state-dict key."""
    arch, tied = m["arch"], m["tie_embeddings"]
    name = key if arch == "encoder-decoder" else f"{arch}.{key}"
    side = name.split(".")[0]
    if tied and name.endswith("output_projection.weight"):
        name = f"{side}.embed_tokens.weight"
    if tied and arch == "encoder-decoder" and name == "decoder.embed_tokens.weight":
        name = "encoder.embed_tokens.weight"
    return name


def load_into(model, m, w):
    state = {k: w[stx_name(m, k)].double() for k in model.state_dict()}
    used = {stx_name(m, k) for k in model.state_dict()}
    unused = sorted(set(w) - used)
    if unused:
        raise tp.CaseFailure(f"stx tensors torchscale has no place for: {unused[:6]}")
    model.load_state_dict(state, strict=True)


def draw_tokens(m, rng, B=3):
    V, pad = m["vocab_size"], m["pad_id"]

    def draw(T):
        x = rng.integers(0, V - 1, size=(B, T))
        x[x >= pad] += 1  # never the pad token
        return x.astype(np.int64)
    toks = {}
    if m["arch"] != "decoder":
        toks["src"] = draw(7)
    if m["arch"] != "encoder":
        toks["tgt"] = draw(5)
    return toks


def stx_logits(stx, tmp, model_path, toks):
    """`stx forward` of the model file on the token ids: its logits in float64."""
    tok_path, out_path = os.path.join(tmp, "t.safetensors"), os.path.join(tmp, "o.safetensors")
    st.save(tok_path, toks)
    tp.run([stx, "forward", "--model", model_path, "--input", tok_path, "--out", out_path], "stx forward")
    return st.load(out_path)[0]["logits"].double()


def run_torchscale(ts, arch, toks):
    ts.eval()
    with torch.no_grad():
        if arch == "decoder":
            return ts(torch.from_numpy(toks["tgt"]))[0]
        if arch == "encoder":
            return ts(torch.from_numpy(toks["src"]))["encoder_out"]
        return ts(torch.from_numpy(toks["src"]), torch.from_numpy(toks["tgt"]))[0]


def compare(c, r):
    if list(c.shape) != list(r.shape):
        raise tp.CaseFailure(f"logits {list(c.shape)} vs torchscale {list(r.shape)}")
    err, scale = (c - r).abs().max().item(), r.abs().max().item()
    msg = f"max|stx − torchscale| {err:.2e} (scale {scale:.3g}, rel {err / scale:.1e})"
    if not err <= REL_TOL * scale:
        raise tp.CaseFailure(msg + f" > {REL_TOL:g}·scale")
    return msg


def from_torchscale_case(stx, arch, scheme, seed):
    """The other way: a torchscale model's own state dict (its own initialization), written as
    an stx weights file under stx's names (the config from `stx init` of the same model, the
    checksum keys dropped), runs in `stx forward` and gives torchscale's logits."""
    case = tp.Case("", arch, seed, scheme=scheme)
    m = case.model
    torch.set_default_dtype(torch.float64)
    try:
        torch.manual_seed(seed)
        ts = build_torchscale(m, scheme=scheme)
    finally:
        torch.set_default_dtype(torch.float32)
    toks = draw_tokens(m, np.random.default_rng(seed))
    with tempfile.TemporaryDirectory(prefix="stx_torchscale_") as tmp:
        path = os.path.join(tmp, "m.safetensors")
        tp.stx_init(stx, case, tmp, path)
        w, meta = st.load(path)
        theirs = {}
        for k, t in ts.state_dict().items():
            theirs[stx_name(m, k)] = t.float().contiguous()
        if sorted(theirs) != sorted(w):
            raise tp.CaseFailure(f"names differ: only stx {sorted(set(w) - set(theirs))[:4]}, "
                                 f"only torchscale {sorted(set(theirs) - set(w))[:4]}")
        meta = {k: v for k, v in meta.items() if k not in ("stx.crc32c", "stx.metadata_crc32c")}
        st.save(path, theirs, meta)
        c = stx_logits(stx, tmp, path, toks)
    # torchscale's float64 model on the float32-rounded weights stx ran
    torch.set_default_dtype(torch.float64)
    try:
        ts.load_state_dict({k: v.float().double() for k, v in ts.state_dict().items()})
        r = run_torchscale(ts, arch, toks)
    finally:
        torch.set_default_dtype(torch.float32)
    return compare(c, r)


def logits_case(stx, name, arch, seed, scheme="sub-ln", **over):
    case = tp.Case(name, arch, seed, scheme=scheme, **over)
    m = case.model
    with tempfile.TemporaryDirectory(prefix="stx_torchscale_") as tmp:
        path = os.path.join(tmp, "m.safetensors")
        tp.stx_init(stx, case, tmp, path)
        w, meta = st.load(path)
        cfg = ref.config_from_metadata(meta)
        wp = tp.perturb(w, cfg, torch.Generator().manual_seed(seed))
        st.save(path, wp, meta)
        toks = draw_tokens(m, np.random.default_rng(seed))
        c = stx_logits(stx, tmp, path, toks)
    torch.set_default_dtype(torch.float64)
    try:
        ts = build_torchscale(m, scheme=scheme)
        load_into(ts, m, wp)
        r = run_torchscale(ts, arch, toks)
    finally:
        torch.set_default_dtype(torch.float32)
    return compare(c, r)


def ratios(a, b, names):
    """a/b for every tensor in names: one number each, or None when a ≠ γ·b elementwise."""
    out = {}
    for k in names:
        x, y = a[k].double().flatten(), b[k].double().flatten()
        nz = y.abs() > 1e-12
        r = x[nz] / y[nz]
        out[k] = r.mean().item() if nz.any() and (r.max() - r.min()).item() < 1e-6 * r.abs().mean().item() else None
    return out


def gamma_case(stx, arch, seed, N, M):
    """γ per side, measured in torchscale and in stx; they must agree and be constant."""
    m = dict(tp.BASE, **tp.SIZES[arch], arch=arch, encoder_layers=N, decoder_layers=M, pad_id=1)
    torch.manual_seed(seed)
    sub = build_torchscale(m, subln=True).state_dict()
    torch.manual_seed(seed)
    plain = build_torchscale(m, subln=False).state_dict()
    four = ("fc1", "fc2", "v_proj", "out_proj")
    # torchscale's own rule (what this test holds stx to): every such name outside encoder_attn
    scaled = [k for k in sub if k.endswith(".weight") and any(f".{f}." in k for f in four)
              and "encoder_attn" not in k]
    ts = ratios(sub, plain, scaled)
    with tempfile.TemporaryDirectory(prefix="stx_torchscale_") as tmp:
        got = {}
        for scheme in ("sub-ln", "pre"):
            case = tp.Case(f"gamma {arch}", arch, seed, scheme=scheme, encoder_layers=N, decoder_layers=M)
            path = os.path.join(tmp, f"{scheme}.safetensors")
            tp.stx_init(stx, case, tmp, path)
            got[scheme] = st.load(path)[0]
    stx_names = [stx_name(m, k) for k in scaled]
    sx = ratios(got["sub-ln"], got["pre"], stx_names)
    errs, seen = [], {}
    for k, sk in zip(scaled, stx_names):
        g_ts, g_stx = ts[k], sx[sk]
        if g_ts is None or g_stx is None:
            errs.append(f"{k}: not a constant multiple (torchscale {g_ts}, stx {g_stx})")
        elif abs(g_ts - g_stx) > GAMMA_TOL * g_ts:
            errs.append(f"{k}: γ torchscale {g_ts:.7f} ≠ stx {g_stx:.7f}")
        else:
            seen.setdefault(sk.split(".")[0], g_stx)
    others = [k for k in got["sub-ln"] if k in got["pre"] and ".layers." in k and k.endswith(".weight")
              and k not in stx_names and not torch.equal(got["sub-ln"][k], got["pre"][k])]
    if others:
        errs.append(f"stx scales other weights too: {others[:4]}")
    if errs:
        raise tp.CaseFailure("; ".join(errs[:4]))
    return ", ".join(f"{s} γ = {g:.6f}" for s, g in seen.items()) + f" ({len(scaled)} matrices)"


def main():
    if len(sys.argv) != 2:
        print("usage: test_torchscale.py /path/to/stx", file=sys.stderr)
        return 2
    stx = os.path.abspath(sys.argv[1])
    torch.set_num_threads(1)
    jobs = []
    for i, arch in enumerate(tp.ARCHS):
        jobs.append((f"logits sub-ln [{arch}]", lambda a=arch, i=i: logits_case(stx, "", a, 500 + i)))
        jobs.append((f"logits sub-ln gelu untied learned [{arch}]",
                     lambda a=arch, i=i: logits_case(stx, "", a, 510 + i, activation="gelu", tie_embeddings=False,
                                                     positions="learned")))
        jobs.append((f"logits sub-ln no embed scale eps 1e-2 [{arch}]",
                     lambda a=arch, i=i: logits_case(stx, "", a, 520 + i, embed_scale=False, norm_eps=0.01)))
    # Post-LN, Pre-LN and DeepNorm (torchscale's deepnorm=True: its α) in the encoder-decoder
    # and the decoder, both ways: stx's weights in torchscale, torchscale's weights in stx.
    for j, scheme in enumerate(("post", "pre", "deepnorm")):
        for i, arch in enumerate(("decoder", "encoder-decoder")):
            jobs.append((f"logits {scheme} [{arch}]",
                         lambda a=arch, sc=scheme, k=10 * j + i: logits_case(stx, "", a, 540 + k, scheme=sc)))
            jobs.append((f"torchscale's state dict in stx, {scheme} [{arch}]",
                         lambda a=arch, sc=scheme, k=10 * j + i: from_torchscale_case(stx, a, sc, 570 + k)))
    jobs.append(("gamma encoder N=5", lambda: gamma_case(stx, "encoder", 31, 5, 2)))
    jobs.append(("gamma decoder M=7", lambda: gamma_case(stx, "decoder", 32, 3, 7)))
    jobs.append(("gamma encoder-decoder N=6 M=4", lambda: gamma_case(stx, "encoder-decoder", 33, 6, 4)))
    passed = failed = 0
    for name, fn in jobs:
        try:
            msg, ok = fn(), True
        except tp.CaseFailure as e:
            msg, ok = str(e), False
        except Exception as e:  # a bug or a torchscale API change: report, keep going
            msg, ok = f"{type(e).__name__}: {e}", False
        print(f"{'PASS' if ok else 'FAIL'}  {name}: {msg}", flush=True)
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
