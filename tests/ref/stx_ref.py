"""Independent float64 PyTorch reference of the stx forward pass (eval mode).

Written from docs/model.md (the contract) only, never from the C++ sources, so that
tests/ref/test_parity.py compares two independent readings of the contract.

Everything is a plain function of (weights, cfg, ...): `weights` maps parameter names (as in
docs/model.md) to tensors, `cfg` is the resolved configuration — either the whole
{"model":…, "train":…, "data":…} object stored in the safetensors metadata key "stx.config" or
just its "model" section. Weights are converted to float64 by `to_float64`.

Papers: Post-LN / Pre-LN sub-layers (Xiong et al. 2020), DeepNorm x ← LN(α·x + G(x)) and
its α/β table (Wang et al. 2022, DeepNet Figure 2(b)), σReparam Ŵ = γ·W/σ(W)
(Zhai et al. 2023), and the stabilizers of docs/model.md#stabilizers: ReZero, LayerScale,
Peri-LN, Mix-LN, LayerNorm Scaling, depth-scaled residuals, Dynamic Tanh, QK-LayerNorm and
soft-capping.

`self_check()` validates this reference against torch.nn.functional / torch.nn layers and the
worked α/β values of docs/reference.md#deepnorm-coefficients (test_parity.py runs it first).
Command line:
  python3 stx_ref.py --self-check
  python3 stx_ref.py MODEL.safetensors TOKENS.safetensors OUT.safetensors   (reference logits)
"""

import json
import math

import torch

MASKED_SCORE = -1e9  # masked attention scores are *replaced* by this value (docs/model.md)


# --------------------------------------------------------------------------- configuration

def model_cfg(cfg):
    """The "model" section, whether given the whole resolved config or the section itself."""
    return cfg["model"] if "model" in cfg else cfg


def config_from_metadata(metadata):
    """Parse the resolved configuration stored under metadata["stx.config"]."""
    return json.loads(metadata["stx.config"])


def to_float64(weights):
    return {k: (v.to(torch.float64) if v.is_floating_point() else v) for k, v in weights.items()}


def _req(w, name):
    if name not in w:
        raise KeyError(f"weight '{name}' is missing (docs/model.md names it for this config)")
    return w[name]


def deepnorm_alpha_beta(arch, n_enc, n_dec):
    """DeepNet's α/β (Figure 2(b)): {"encoder": (α, β), "decoder": (α, β)} for the sides
    the architecture has. n_enc = N encoder layers, n_dec = M decoder layers."""
    N, M = n_enc, n_dec
    if arch == "encoder":
        return {"encoder": ((2 * N) ** 0.25, (8 * N) ** -0.25)}
    if arch == "decoder":
        return {"decoder": ((2 * M) ** 0.25, (8 * M) ** -0.25)}
    if arch == "encoder-decoder":
        return {"encoder": (0.81 * (N ** 4 * M) ** (1 / 16), 0.87 * (N ** 4 * M) ** (-1 / 16)),
                "decoder": ((3 * M) ** 0.25, (12 * M) ** -0.25)}
    raise ValueError(f"unknown arch {arch!r}")


def residual_alpha(cfg, side):
    """α multiplying the skip branch of every sub-layer of one stack (1 unless deepnorm)."""
    m = model_cfg(cfg)
    if m["scheme"] != "deepnorm":
        return 1.0
    return deepnorm_alpha_beta(m["arch"], m["encoder_layers"], m["decoder_layers"])[side][0]


# --------------------------------------------------------------------------- building blocks

def linear_weight(w, prefix, cfg):
    """Effective weight of the linear `prefix`: W, or γ·W/(uᵀWv) with σReparam (eval: no
    power iteration, u and v are the stored buffers)."""
    W = _req(w, prefix + ".weight")
    if model_cfg(cfg)["sigma_reparam"]:
        u, v, gamma = _req(w, prefix + ".u"), _req(w, prefix + ".v"), _req(w, prefix + ".gamma")
        sigma = u @ W @ v
        W = gamma.reshape(()) * W / sigma
    return W


def linear(w, prefix, x, cfg, has_bias=None):
    """y = x W_effᵀ + b. has_bias defaults to model.bias (output projections pass False)."""
    y = x @ linear_weight(w, prefix, cfg).t()
    if has_bias is None:
        has_bias = model_cfg(cfg)["bias"]
    if has_bias:
        y = y + _req(w, prefix + ".bias")
    return y


def layer_norm(x, weight, bias, eps):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)  # biased variance
    return (x - mean) / torch.sqrt(var + eps) * weight + bias


def rms_norm(x, weight, eps):
    return x / torch.sqrt((x * x).mean(-1, keepdim=True) + eps) * weight


def norm(w, prefix, x, cfg):
    """The configured norm with parameters under `prefix` (identity for norm: none)."""
    m = model_cfg(cfg)
    kind, eps = m["norm"], float(m["norm_eps"])
    if kind == "layernorm":
        return layer_norm(x, _req(w, prefix + ".weight"), _req(w, prefix + ".bias"), eps)
    if kind == "rmsnorm":
        return rms_norm(x, _req(w, prefix + ".weight"), eps)
    if kind == "dyt":  # Dynamic Tanh: weight ⊙ tanh(alpha·x) + bias
        a = _req(w, prefix + ".alpha").reshape(())
        return torch.tanh(a * x) * _req(w, prefix + ".weight") + _req(w, prefix + ".bias")
    if kind == "none":
        return x
    raise ValueError(f"unknown norm {kind!r}")


def activation(x, kind):
    if kind == "relu":
        return torch.clamp(x, min=0)
    if kind == "gelu":  # exact GELU: x·Φ(x)
        return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))
    raise ValueError(f"unknown activation {kind!r}")


def sinusoidal_positions(T, d, dtype=torch.float64):
    """P[p, 2i] = sin(p / 10000^(2i/d)), P[p, 2i+1] = cos(p / 10000^(2i/d)) (interleaved)."""
    P = torch.zeros(T, d, dtype=dtype)
    p = torch.arange(T, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d, 2, dtype=torch.float64)[None, :]
    angle = p / torch.pow(10000.0, two_i / d)
    P[:, 0::2] = torch.sin(angle).to(dtype)
    P[:, 1::2] = torch.cos(angle[:, : d // 2]).to(dtype)
    return P


def embedding_matrix(w, cfg, side):
    """The token embedding used by `side` (tied encoder-decoder: the encoder's, for both)."""
    m = model_cfg(cfg)
    if m["arch"] == "encoder-decoder" and m["tie_embeddings"]:
        return _req(w, "encoder.embed_tokens.weight")
    return _req(w, f"{side}.embed_tokens.weight")


def embed(w, cfg, side, tokens):
    """x₀ = E[tok]·(√d if embed_scale) + P[pos], positions 0 … T−1."""
    m = model_cfg(cfg)
    d = m["d_model"]
    x = embedding_matrix(w, cfg, side)[tokens]
    if m["embed_scale"]:
        x = x * math.sqrt(d)
    T = tokens.shape[1]
    if m["positions"] == "sinusoidal":
        x = x + sinusoidal_positions(T, d, x.dtype)
    elif m["positions"] == "learned":
        x = x + _req(w, f"{side}.embed_positions.weight")[:T]
    elif m["positions"] != "none":
        raise ValueError(f"unknown positions {m['positions']!r}")
    return x


def padding_mask(tokens, cfg):
    """[B, T] bool, True where the token is padding (never, when model.pad_id < 0)."""
    pad = model_cfg(cfg)["pad_id"]
    if pad is None or pad < 0:
        return torch.zeros(tokens.shape, dtype=torch.bool)
    return tokens == pad


def attention(w, prefix, x_q, x_kv, key_pad, causal, cfg):
    """Multi-head attention written out. x_q [B, Tq, d], x_kv [B, Tk, d]; key_pad [B, Tk]
    bool (True = masked key); causal masks keys at positions after the query."""
    m = model_cfg(cfg)
    B, Tq, d = x_q.shape
    Tk = x_kv.shape[1]
    h = m["n_heads"]
    dh = d // h
    q = linear(w, prefix + ".q_proj", x_q, cfg)
    k = linear(w, prefix + ".k_proj", x_kv, cfg)
    v = linear(w, prefix + ".v_proj", x_kv, cfg)
    # contiguous head split: head j owns features j·dh … (j+1)·dh − 1
    q = q.reshape(B, Tq, h, dh).transpose(1, 2)  # [B, h, Tq, dh]
    k = k.reshape(B, Tk, h, dh).transpose(1, 2)
    v = v.reshape(B, Tk, h, dh).transpose(1, 2)
    if m.get("qk_norm", False):  # QK-LayerNorm over each head's d_h features
        eps = float(m["norm_eps"])
        q = layer_norm(q, _req(w, prefix + ".q_norm.weight"), _req(w, prefix + ".q_norm.bias"), eps)
        k = layer_norm(k, _req(w, prefix + ".k_norm.weight"), _req(w, prefix + ".k_norm.bias"), eps)
    scores = q @ k.transpose(-1, -2) / math.sqrt(dh)  # [B, h, Tq, Tk]
    cap = float(m.get("attn_softcap", 0.0))
    if cap > 0:
        scores = cap * torch.tanh(scores / cap)
    mask = key_pad[:, None, None, :].expand(B, 1, Tq, Tk)
    if causal:
        future = torch.arange(Tk)[None, :] > torch.arange(Tq)[:, None]  # key pos > query pos
        mask = mask | future[None, None]
    scores = torch.where(mask, torch.full_like(scores, MASKED_SCORE), scores)
    probs = torch.softmax(scores, dim=-1)
    ctx = (probs @ v).transpose(1, 2).reshape(B, Tq, d)  # concatenate heads
    if m["scheme"] == "sub-ln" and prefix.endswith(".self_attn"):  # Sub-LN: norm before out_proj
        ctx = norm(w, prefix + ".inner_attn_ln", ctx, cfg)
    return linear(w, prefix + ".out_proj", ctx, cfg)


def ffn(w, prefix, x, cfg):
    """fc2(act(fc1(x))); Sub-LN: fc2(N(act(fc1(x)))) with N = {prefix}.ffn_layernorm; NormFormer
    the same with the layer's ffn_layernorm (fairseq keeps it beside fc1/fc2)."""
    m = model_cfg(cfg)
    hdn = activation(linear(w, prefix + ".fc1", x, cfg), m["activation"])
    if m["scheme"] == "sub-ln":
        hdn = norm(w, prefix + ".ffn_layernorm", hdn, cfg)
    if m["scheme"] == "normformer":
        hdn = norm(w, prefix[: -len(".ffn")] + ".ffn_layernorm", hdn, cfg)
    return linear(w, prefix + ".fc2", hdn, cfg)


def normformer_attn_out(w, p, a, cfg):
    """NormFormer (fairseq): the self-attention output × c_attn split into h chunks, then attn_ln."""
    h = model_cfg(cfg)["n_heads"]
    B, T, d = a.shape
    a = (a.reshape(B, T, h, d // h) * _req(w, p + ".c_attn")[:, None]).reshape(B, T, d)
    return norm(w, p + ".attn_ln", a, cfg)


POST_STYLE = ("post", "post-init", "deepnorm", "t-fixup", "ds-init", "admin")
# Admin's ω per sub-layer (Transformer-Clinic's names)
ADMIN_NAMES = {("encoder", "self_attn"): "attention_ratio_change", ("decoder", "self_attn"): "self_ratio_change",
               ("decoder", "encoder_attn"): "encoder_ratio_change", ("encoder", "ffn"): "fc_ratio_change",
               ("decoder", "ffn"): "fc_ratio_change"}
# sub-layer -> (its norm, Peri-LN's output norm, ReZero's α, LayerScale's λ)
SUBLAYER_NAMES = {
    "self_attn": ("self_attn_layer_norm", "self_attn_out_layer_norm", "self_attn_resweight", "gamma_1"),
    "encoder_attn": ("encoder_attn_layer_norm", "encoder_attn_out_layer_norm", "encoder_attn_resweight",
                     "gamma_cross"),
    "ffn": ("final_layer_norm", "ffn_out_layer_norm", "ffn_resweight", "gamma_2"),
}


def post_style(cfg, i, L):
    """Layer i (0-based) of L joins its sub-layers Post-LN style: x ← N(α·x + G(x))."""
    m = model_cfg(cfg)
    if m["scheme"] == "mix-ln":
        return i < math.floor(float(m["mix_ln_ratio"]) * L)
    return m["scheme"] in POST_STYLE


def has_final_norm(cfg):
    s = model_cfg(cfg)["scheme"]
    return s not in POST_STYLE and s != "rezero"


def sublayer(w, cfg, p, which, x, G, i, L, alpha):
    """One residual sub-layer `which` of layer prefix p (index i of L), docs/model.md."""
    m = model_cfg(cfg)
    s = m["scheme"]
    n_name, out_name, rz_name, ls_name = SUBLAYER_NAMES[which]
    N = lambda y: norm(w, f"{p}.{n_name}", y, cfg)  # noqa: E731
    if post_style(cfg, i, L):
        if s == "admin":  # x ← N(ω ⊙ x + G(x))
            x_skip = _req(w, f"{p}.{ADMIN_NAMES[(p.split('.')[0], which)]}") * x
            return N(x_skip + G(x))
        return N((alpha if s == "deepnorm" else 1.0) * x + G(x))
    h = N(x)
    if s == "ln-scaling":
        h = h / math.sqrt(i + 1)
    b = G(h)
    if s == "peri-ln":
        b = norm(w, f"{p}.{out_name}", b, cfg)
    if s == "rezero":
        b = _req(w, f"{p}.{rz_name}").reshape(()) * b
    if s == "layerscale":
        b = _req(w, f"{p}.{ls_name}") * b
    if s == "depth-scaled":
        b = float(m["residual_scale"]) / math.sqrt(L) * b
    if s == "normformer" and which == "ffn":  # w_resid on the skip path
        return _req(w, f"{p}.w_resid") * x + b
    return x + b


def self_attn_branch(w, cfg, p, pad, causal):
    def G(y):
        a = attention(w, p + ".self_attn", y, y, pad, causal, cfg)
        return normformer_attn_out(w, p, a, cfg) if model_cfg(cfg)["scheme"] == "normformer" else a
    return G


# --------------------------------------------------------------------------- layers and stacks

def encoder_layer(w, cfg, i, x, src_pad, alpha=None):
    p = f"encoder.layers.{i}"
    L = model_cfg(cfg)["encoder_layers"]
    a = residual_alpha(cfg, "encoder") if alpha is None else alpha
    x = sublayer(w, cfg, p, "self_attn", x, self_attn_branch(w, cfg, p, src_pad, False), i, L, a)
    x = sublayer(w, cfg, p, "ffn", x, lambda y: ffn(w, p + ".ffn", y, cfg), i, L, a)
    return x


def decoder_layer(w, cfg, i, x, tgt_pad, enc_out=None, src_pad=None, alpha=None):
    p = f"decoder.layers.{i}"
    L = model_cfg(cfg)["decoder_layers"]
    a = residual_alpha(cfg, "decoder") if alpha is None else alpha
    x = sublayer(w, cfg, p, "self_attn", x, self_attn_branch(w, cfg, p, tgt_pad, True), i, L, a)
    if enc_out is not None:
        x = sublayer(w, cfg, p, "encoder_attn", x,
                     lambda y: attention(w, p + ".encoder_attn", y, enc_out, src_pad, False, cfg), i, L, a)
    x = sublayer(w, cfg, p, "ffn", x, lambda y: ffn(w, p + ".ffn", y, cfg), i, L, a)
    return x


def encoder(w, cfg, src):
    """Encoder stack output [B, Ts, d] (after the final norm for Pre-LN-style schemes)."""
    m = model_cfg(cfg)
    src_pad = padding_mask(src, cfg)
    x = embed(w, cfg, "encoder", src)
    for i in range(m["encoder_layers"]):
        x = encoder_layer(w, cfg, i, x, src_pad)
    if has_final_norm(cfg):
        x = norm(w, "encoder.layer_norm", x, cfg)
    return x


def decoder(w, cfg, tgt, enc_out=None, src=None):
    """Decoder stack output [B, Tt, d]; enc_out/src given for encoder-decoder models."""
    m = model_cfg(cfg)
    tgt_pad = padding_mask(tgt, cfg)
    src_pad = padding_mask(src, cfg) if src is not None else None
    x = embed(w, cfg, "decoder", tgt)
    for i in range(m["decoder_layers"]):
        x = decoder_layer(w, cfg, i, x, tgt_pad, enc_out, src_pad)
    if has_final_norm(cfg):
        x = norm(w, "decoder.layer_norm", x, cfg)
    return x


def output_logits(w, cfg, h):
    """h W_outᵀ: the tied embedding, or the untied output_projection (σReparam-able, no bias)."""
    m = model_cfg(cfg)
    side = "encoder" if m["arch"] == "encoder" else "decoder"
    if m["tie_embeddings"]:
        z = h @ embedding_matrix(w, cfg, side).t()
    else:
        z = linear(w, f"{side}.output_projection", h, cfg, has_bias=False)
    cap = float(m.get("logit_softcap", 0.0))
    return cap * torch.tanh(z / cap) if cap > 0 else z


def forward(weights, cfg, src=None, tgt=None):
    """Logits [B, T, V] in float64: encoder-only from `src`, decoder-only from `tgt`,
    encoder-decoder from both."""
    w = to_float64(weights)
    arch = model_cfg(cfg)["arch"]
    with torch.no_grad():
        if arch == "encoder":
            h = encoder(w, cfg, src.long())
        elif arch == "decoder":
            h = decoder(w, cfg, tgt.long())
        elif arch == "encoder-decoder":
            src = src.long()
            h = decoder(w, cfg, tgt.long(), encoder(w, cfg, src), src)
        else:
            raise ValueError(f"unknown arch {arch!r}")
        return output_logits(w, cfg, h)


# --------------------------------------------------------------------------- the name contract

def expected_shapes(cfg):
    """Every tensor docs/model.md says `stx init` stores for this config: name -> shape."""
    m = model_cfg(cfg)
    arch, d, dff, V = m["arch"], m["d_model"], m["d_ff"], m["vocab_size"]
    bias, sig, kind = m["bias"], m["sigma_reparam"], m["norm"]
    out = {}

    def lin(prefix, n_out, n_in, has_bias=bias):
        out[prefix + ".weight"] = [n_out, n_in]
        if has_bias:
            out[prefix + ".bias"] = [n_out]
        if sig:
            out[prefix + ".gamma"] = [1]
            out[prefix + ".u"] = [n_out]
            out[prefix + ".v"] = [n_in]

    scheme = m["scheme"]

    def nrm(prefix, n=d):
        if kind in ("layernorm", "rmsnorm", "dyt"):
            out[prefix + ".weight"] = [n]
        if kind in ("layernorm", "dyt"):
            out[prefix + ".bias"] = [n]
        if kind == "dyt":
            out[prefix + ".alpha"] = [1]

    def attn(prefix):
        for p in ("q_proj", "k_proj", "v_proj", "out_proj"):
            lin(f"{prefix}.{p}", d, d)
        if m.get("qk_norm", False):
            dh = d // m["n_heads"]
            for n in ("q_norm", "k_norm"):
                out[f"{prefix}.{n}.weight"], out[f"{prefix}.{n}.bias"] = [dh], [dh]

    def own(p, which):  # the sub-layer's scheme parameters
        n_name, out_name, rz_name, ls_name = SUBLAYER_NAMES[which]
        nrm(f"{p}.{n_name}")
        if scheme == "peri-ln":
            nrm(f"{p}.{out_name}")
        if scheme == "rezero":
            out[f"{p}.{rz_name}"] = [1]
        if scheme == "layerscale":
            out[f"{p}.{ls_name}"] = [d]
        if scheme == "admin":
            out[f"{p}.{ADMIN_NAMES[(p.split('.')[0], which)]}"] = [d]
        if scheme == "normformer" and which == "self_attn":
            nrm(f"{p}.attn_ln")
            out[f"{p}.c_attn"] = [m["n_heads"]]
        if scheme == "normformer" and which == "ffn":
            nrm(f"{p}.ffn_layernorm", dff)
            out[f"{p}.w_resid"] = [d]
        if scheme == "sub-ln" and which == "self_attn":
            nrm(f"{p}.self_attn.inner_attn_ln")
        if scheme == "sub-ln" and which == "ffn":
            nrm(f"{p}.ffn.ffn_layernorm", dff)

    sides = {"encoder": ["encoder"], "decoder": ["decoder"],
             "encoder-decoder": ["encoder", "decoder"]}[arch]
    for side in sides:
        if not (side == "decoder" and arch == "encoder-decoder" and m["tie_embeddings"]):
            out[f"{side}.embed_tokens.weight"] = [V, d]
        if m["positions"] == "learned":
            out[f"{side}.embed_positions.weight"] = [m["max_len"], d]
        for i in range(m[f"{side}_layers"]):
            p = f"{side}.layers.{i}"
            attn(p + ".self_attn")
            own(p, "self_attn")
            if side == "decoder" and arch == "encoder-decoder":
                attn(p + ".encoder_attn")
                own(p, "encoder_attn")
            lin(p + ".ffn.fc1", dff, d)
            lin(p + ".ffn.fc2", d, dff)
            own(p, "ffn")
        if has_final_norm(cfg):
            nrm(f"{side}.layer_norm")
    if not m["tie_embeddings"]:
        lin(("encoder" if arch == "encoder" else "decoder") + ".output_projection", V, d,
            has_bias=False)
    return out


def linear_names(cfg):
    """Prefixes of every linear layer (the ones σReparam and the init schemes act on)."""
    return sorted(n[: -len(".weight")] for n in expected_shapes(cfg)
                  if n.endswith(".weight") and (".layers." in n or "output_projection" in n)
                  and "layer_norm" not in n and "_norm." not in n and "layernorm" not in n
                  and "attn_ln" not in n)


# --------------------------------------------------------------------------- self-check

def _nn_layer_state(w, p, cross):
    """Our weights of layer `p` as a torch.nn.Transformer{Encoder,Decoder}Layer state dict."""
    def attn(dst, src):
        qkv = ("q_proj", "k_proj", "v_proj")
        return {dst + ".in_proj_weight": torch.cat([w[f"{src}.{q}.weight"] for q in qkv]),
                dst + ".in_proj_bias": torch.cat([w[f"{src}.{q}.bias"] for q in qkv]),
                dst + ".out_proj.weight": w[src + ".out_proj.weight"],
                dst + ".out_proj.bias": w[src + ".out_proj.bias"]}
    sd = attn("self_attn", p + ".self_attn")
    sd.update({"linear1.weight": w[p + ".ffn.fc1.weight"], "linear1.bias": w[p + ".ffn.fc1.bias"],
               "linear2.weight": w[p + ".ffn.fc2.weight"], "linear2.bias": w[p + ".ffn.fc2.bias"]})
    norms = ["self_attn_layer_norm"] + (["encoder_attn_layer_norm"] if cross else []) \
        + ["final_layer_norm"]
    for j, n in enumerate(norms):
        sd[f"norm{j + 1}.weight"], sd[f"norm{j + 1}.bias"] = w[f"{p}.{n}.weight"], w[f"{p}.{n}.bias"]
    if cross:
        sd.update(attn("multihead_attn", p + ".encoder_attn"))
    return sd


def self_check():
    """Compare the pieces written out here with torch's own. Returns [(name, error, tol)]."""
    import torch.nn as nn
    import torch.nn.functional as F
    g = torch.Generator().manual_seed(0)
    dt = torch.float64
    rnd = lambda *s: torch.randn(*s, generator=g, dtype=dt)  # noqa: E731
    res = []
    ab = deepnorm_alpha_beta("encoder", 6, 6)["encoder"]
    ed = deepnorm_alpha_beta("encoder-decoder", 6, 6)
    got = [ab[0], ab[1], *ed["encoder"], *ed["decoder"]]
    want = [1.861, 0.380, 1.418, 0.497, 2.060, 0.343]  # N = M = 6, docs/reference.md#deepnorm-coefficients
    res.append(("deepnorm alpha/beta table", max(abs(a - b) for a, b in zip(got, want)), 5e-4))
    x, wn, bn = rnd(3, 5, 16) * 3 + 1, rnd(16), rnd(16)
    res.append(("layer_norm", (layer_norm(x, wn, bn, 1e-5)
                               - F.layer_norm(x, (16,), wn, bn, 1e-5)).abs().max().item(), 1e-12))
    res.append(("rms_norm", (rms_norm(x, wn, 1e-6) - x * torch.rsqrt(
        x.pow(2).mean(-1, keepdim=True) + 1e-6) * wn).abs().max().item(), 1e-12))
    res.append(("gelu", (activation(x, "gelu") - F.gelu(x)).abs().max().item(), 1e-12))
    P = sinusoidal_positions(7, 10)
    want = torch.tensor([[(math.sin if j % 2 == 0 else math.cos)(p / 10000 ** ((j - j % 2) / 10))
                          for j in range(10)] for p in range(7)], dtype=dt)
    res.append(("sinusoidal positions", (P - want).abs().max().item(), 1e-12))
    # whole encoder-decoder stacks (post and pre, relu and gelu) against torch.nn layers
    d, h, V = 16, 4, 30
    for scheme, act in (("post", "relu"), ("pre", "gelu")):
        m = dict(arch="encoder-decoder", vocab_size=V, d_model=d, n_heads=h, d_ff=32,
                 encoder_layers=2, decoder_layers=2, scheme=scheme, sigma_reparam=False,
                 norm="layernorm", norm_eps=1e-5, activation=act, bias=True,
                 tie_embeddings=True, positions="sinusoidal", embed_scale=True, max_len=32,
                 pad_id=1)
        w = {k: rnd(*s) * 0.3 + (1.0 if k.endswith("norm.weight") else 0.0)
             for k, s in expected_shapes(m).items()}
        src, tgt = torch.randint(2, V, (3, 9), generator=g), torch.randint(2, V, (3, 6), generator=g)
        src[1, 6:], src[2, 8:], tgt[2, 4:] = 1, 1, 1
        kw = dict(d_model=d, nhead=h, dim_feedforward=32, dropout=0.0, activation=act,
                  batch_first=True, norm_first=(scheme == "pre"), dtype=dt)
        E = w["encoder.embed_tokens.weight"]
        with torch.no_grad():
            x = E[src] * math.sqrt(d) + sinusoidal_positions(9, d)
            for i in range(2):
                L = nn.TransformerEncoderLayer(**kw)
                L.load_state_dict(_nn_layer_state(w, f"encoder.layers.{i}", False))
                x = L.eval()(x, src_key_padding_mask=src == 1)
            if scheme == "pre":
                x = F.layer_norm(x, (d,), w["encoder.layer_norm.weight"], w["encoder.layer_norm.bias"])
            y = E[tgt] * math.sqrt(d) + sinusoidal_positions(6, d)
            causal = torch.triu(torch.ones(6, 6, dtype=torch.bool), 1)
            for i in range(2):
                L = nn.TransformerDecoderLayer(**kw)
                L.load_state_dict(_nn_layer_state(w, f"decoder.layers.{i}", True))
                y = L.eval()(y, x, tgt_mask=causal, tgt_key_padding_mask=tgt == 1,
                             memory_key_padding_mask=src == 1)
            if scheme == "pre":
                y = F.layer_norm(y, (d,), w["decoder.layer_norm.weight"], w["decoder.layer_norm.bias"])
            err = (forward(w, m, src, tgt) - y @ E.t()).abs().max().item()
        res.append((f"encoder-decoder {scheme}/{act} vs torch.nn layers", err, 1e-10))
    return res


if __name__ == "__main__":
    import sys
    if sys.argv[1:] == ["--self-check"]:
        bad = 0
        for name, err, tol in self_check():
            print(f"{'OK ' if err <= tol else 'BAD'} {name}: error {err:.2e} (tol {tol:g})")
            bad += err > tol
        sys.exit(1 if bad else 0)
    if len(sys.argv) != 4:
        sys.exit("usage: stx_ref.py --self-check | MODEL TOKENS OUT (all .safetensors)")
    import safetensors_io as st
    weights, meta = st.load(sys.argv[1])
    toks, _ = st.load(sys.argv[2])
    logits = forward(weights, config_from_metadata(meta), toks.get("src"), toks.get("tgt"))
    st.save(sys.argv[3], {"logits": logits})
