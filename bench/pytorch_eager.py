#!/usr/bin/env python3
"""The PyTorch peers of `stx bench`: the same decoder-only model and training step, written
in plain Python PyTorch the way a user would (nn.Linear per projection, eager ops, torch.optim.Adam,
F.cross_entropy), timed the same way — eager, or with --compile under torch.compile (inductor on
the CPU: the model's forward and backward, and the optimizer step, each compiled; the first
step's extra time is reported as compile time, apart from the steady-state steps).

  .venv/bin/python3 bench/pytorch_eager.py --config configs/bench-d64-l24.yaml \
      [--compile] [--device cuda] [--batch B --seq T --steps N --warmup W --threads N --json FILE]

Reads the same YAML as stx (model/train sections; stx's defaults for missing keys). Defaults as
stx bench: --seq = model.max_len, --batch = train.max_tokens / seq. Threads = physical cores unless
--threads; denormals flushed (torch.set_flush_denormal). Decoder-only models only.

Model (docs/model.md): x0 = E[tok]·√d + sinusoidal P, dropout; per layer a
self-attention and an FFN sub-layer, each
  post / post-init:  x = LN(x + drop(G(x)))
  deepnorm:          x = LN(α·x + drop(G(x))),  α = (2N)^(1/4), init gain β = (8N)^(-1/4)
                     on v_proj, out_proj, fc1, fc2 (DeepNet, decoder-only)
  pre:               x = x + drop(G(LN(x))), and a final LN
attention: heads split contiguously, softmax(q kᵀ/√d_h + causal mask)·v, out_proj; FFN
fc2(act(fc1(x))); logits h·Eᵀ (tied) or an output Linear; loss = Σ cross-entropy / tokens.

--device cuda is what a PyTorch user does on a GPU, as stx does there (docs/performance.md#gpu):
forward and loss under bf16 autocast, attention by F.scaled_dot_product_attention (is_causal),
Adam with fused=True; each phase ends with a device synchronize; peak memory is
torch.cuda.max_memory_allocated.
"""
import argparse
import json
import math
import os
import resource
import statistics
import sys
import tempfile
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import yaml

MODEL_DEFAULTS = dict(arch="encoder-decoder", vocab_size=8000, d_model=512, n_heads=8, d_ff=2048,
                      encoder_layers=6, decoder_layers=6, scheme="post", norm="layernorm", norm_eps=1e-5,
                      activation="relu", bias=True, tie_embeddings=True, positions="sinusoidal",
                      embed_scale=True, dropout=0.1, attention_dropout=0.0, max_len=1024, pad_id=0)
TRAIN_DEFAULTS = dict(optimizer="adam", lr=5e-4, betas=[0.9, 0.98], eps=1e-8, weight_decay=1e-4,
                      label_smoothing=0.1, max_tokens=4096, seed=1)


def mapped_blas():
    """OpenBLAS when bench/compare.sh preloaded it (its sgemm_ then serves torch's products), else
    the MKL linked inside libtorch_cpu.so. numpy's own OpenBLAS (libscipy_openblas64_, 64-bit
    integer symbols with a suffix) is mapped either way and serves none of torch's products."""
    with open("/proc/self/maps") as f:
        return "openblas" if any("libopenblas" in line for line in f) else "mkl"


def physical_cores():
    cores, phys = set(), "0"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("physical id"):
                    phys = line.split(":", 1)[1].strip()
                if line.startswith("core id"):
                    cores.add((phys, line.split(":", 1)[1].strip()))
    except OSError:
        pass
    return len(cores) or os.cpu_count() or 1


def load_config(path):
    with open(path) as f:
        doc = yaml.safe_load(f) or {}
    m = dict(MODEL_DEFAULTS, **(doc.get("model") or {}))
    t = dict(TRAIN_DEFAULTS, **(doc.get("train") or {}))
    if m["arch"] != "decoder":
        sys.exit(f"pytorch_eager.py: model.arch '{m['arch']}' is not supported (decoder only)")
    if m["scheme"] not in ("post", "post-init", "pre", "deepnorm"):
        sys.exit(f"pytorch_eager.py: model.scheme '{m['scheme']}' is not supported")
    if m.get("sigma_reparam"):
        sys.exit("pytorch_eager.py: model.sigma_reparam is not supported")
    return m, t


def sinusoidal(T, d):
    p = torch.arange(T, dtype=torch.float64).unsqueeze(1)
    angle = p / torch.pow(10000.0, torch.arange(0, d, 2, dtype=torch.float64) / d)
    P = torch.zeros(T, d, dtype=torch.float64)
    P[:, 0::2] = torch.sin(angle)
    P[:, 1::2] = torch.cos(angle)[:, : d // 2]
    return P.float()


def make_norm(m):
    return nn.LayerNorm(m["d_model"], eps=m["norm_eps"])


class SelfAttention(nn.Module):
    def __init__(self, m):
        super().__init__()
        d, self.h = m["d_model"], m["n_heads"]
        self.dh = d // self.h
        self.q_proj = nn.Linear(d, d, bias=m["bias"])
        self.k_proj = nn.Linear(d, d, bias=m["bias"])
        self.v_proj = nn.Linear(d, d, bias=m["bias"])
        self.out_proj = nn.Linear(d, d, bias=m["bias"])
        self.attn_drop = nn.Dropout(m["attention_dropout"])
        self.p_drop = m["attention_dropout"]

    def forward(self, x, mask):
        B, T, d = x.shape
        q = self.q_proj(x).view(B, T, self.h, self.dh).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.h, self.dh).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.h, self.dh).transpose(1, 2)
        if x.is_cuda:  # the fused kernel (flash / memory-efficient), as a GPU user writes it
            out = F.scaled_dot_product_attention(q, k, v, dropout_p=self.p_drop if self.training else 0.0,
                                                 is_causal=True)
            return self.out_proj(out.transpose(1, 2).reshape(B, T, d))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(self.dh)
        scores = scores.masked_fill(mask[:T, :T], float("-inf"))
        probs = self.attn_drop(torch.softmax(scores, dim=-1))
        out = (probs @ v).transpose(1, 2).reshape(B, T, d)
        return self.out_proj(out)


class FFN(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.fc1 = nn.Linear(m["d_model"], m["d_ff"], bias=m["bias"])
        self.fc2 = nn.Linear(m["d_ff"], m["d_model"], bias=m["bias"])
        self.act = nn.ReLU() if m["activation"] == "relu" else nn.GELU()

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Layer(nn.Module):
    def __init__(self, m, alpha):
        super().__init__()
        self.pre, self.alpha = m["scheme"] == "pre", alpha
        self.self_attn = SelfAttention(m)
        self.self_attn_layer_norm = make_norm(m)
        self.ffn = FFN(m)
        self.final_layer_norm = make_norm(m)
        self.drop = nn.Dropout(m["dropout"])

    def sublayer(self, x, norm, g):
        if self.pre:
            return x + self.drop(g(norm(x)))
        return norm(self.alpha * x + self.drop(g(x)))

    def forward(self, x, mask):
        x = self.sublayer(x, self.self_attn_layer_norm, lambda h: self.self_attn(h, mask))
        return self.sublayer(x, self.final_layer_norm, self.ffn)


class DecoderLM(nn.Module):
    def __init__(self, m):
        super().__init__()
        d, n = m["d_model"], m["decoder_layers"]
        deep = m["scheme"] == "deepnorm"
        alpha, beta = ((2 * n) ** 0.25, (8 * n) ** -0.25) if deep else (1.0, 1.0)
        self.scale = math.sqrt(d) if m["embed_scale"] else 1.0
        self.embed_tokens = nn.Embedding(m["vocab_size"], d)
        self.positions = m["positions"]
        if self.positions == "learned":
            self.embed_positions = nn.Embedding(m["max_len"], d)
        self.register_buffer("sinusoid", sinusoidal(m["max_len"], d), persistent=False)
        self.register_buffer("causal", torch.ones(m["max_len"], m["max_len"], dtype=torch.bool).triu(1),
                             persistent=False)
        self.drop = nn.Dropout(m["dropout"])
        self.layers = nn.ModuleList(Layer(m, alpha) for _ in range(n))
        self.layer_norm = make_norm(m) if m["scheme"] == "pre" else None
        self.output_projection = None if m["tie_embeddings"] else nn.Linear(d, m["vocab_size"], bias=False)
        # Standard init: Xavier normal, zero biases, N(0, 1/d) embeddings; DeepNorm β gains;
        # post-init: layer l's linears divided by N−l+1 (DeepNet §3).
        nn.init.normal_(self.embed_tokens.weight, 0.0, d ** -0.5)
        for l, layer in enumerate(self.layers):
            for name, mod in layer.named_modules():
                if isinstance(mod, nn.Linear):
                    gain = beta if name.split(".")[-1] in ("v_proj", "out_proj", "fc1", "fc2") else 1.0
                    nn.init.xavier_normal_(mod.weight, gain=gain)
                    if m["scheme"] == "post-init":
                        mod.weight.data /= n - l
                    if mod.bias is not None:
                        nn.init.zeros_(mod.bias)

    def forward(self, tokens):
        T = tokens.size(1)
        x = self.embed_tokens(tokens) * self.scale
        if self.positions == "sinusoidal":
            x = x + self.sinusoid[:T]
        elif self.positions == "learned":
            x = x + self.embed_positions.weight[:T]
        x = self.drop(x)
        for layer in self.layers:
            x = layer(x, self.causal)
        if self.layer_norm is not None:
            x = self.layer_norm(x)
        if self.output_projection is not None:
            return self.output_projection(x)
        return x @ self.embed_tokens.weight.t()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", required=True)
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--seq", type=int, default=0)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--json", default="")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--compile", action="store_true", help="torch.compile (inductor) the model and the optimizer step")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                    help="cuda: bf16 autocast, SDPA attention, fused Adam (the module docstring)")
    a = ap.parse_args()
    m, t = load_config(a.config)
    seq = a.seq or m["max_len"]
    batch = a.batch or max(1, t["max_tokens"] // seq)
    if seq > m["max_len"] or batch < 1 or a.steps < 1 or a.warmup < 0:
        ap.error("need 1 ≤ seq ≤ model.max_len, batch ≥ 1, steps ≥ 1, warmup ≥ 0")

    torch.set_num_threads(a.threads or physical_cores())
    torch.set_flush_denormal(True)
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    cuda = a.device == "cuda"
    if cuda and not torch.cuda.is_available():
        ap.error("--device cuda, but this torch sees no CUDA device (allowed here: cpu)")
    dev = torch.device(a.device)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    torch.manual_seed(t["seed"])
    model = DecoderLM(m).to(dev)
    model.train()
    opt = torch.optim.Adam(model.parameters(), lr=t["lr"], betas=tuple(t["betas"]), eps=t["eps"],
                           weight_decay=t["weight_decay"], **({"fused": True} if cuda else {}))
    n_params = sum(p.numel() for p in model.parameters())
    peer = "pytorch-compile" if a.compile else "pytorch-eager"
    forward = torch.compile(model) if a.compile else model
    opt_step = torch.compile(opt.step) if a.compile else opt.step
    V = m["vocab_size"]
    seqs = torch.randint(1, V, (batch, seq + 1)).to(dev)  # avoid the padding id 0, as stx bench
    inp, target = seqs[:, :-1], seqs[:, 1:]
    tokens = batch * seq

    times, fwd, bwd, ost, cpu, first = [], 0.0, 0.0, 0.0, 0.0, None
    last = time.perf_counter()
    for i in range(a.warmup + a.steps):
        sync()
        t0, c0 = time.perf_counter(), time.process_time()
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda):
            logits = forward(inp)
            loss = F.cross_entropy(logits.reshape(-1, V), target.reshape(-1), reduction="sum",
                                   label_smoothing=t["label_smoothing"]) / tokens
        sync()
        t1 = time.perf_counter()
        loss.backward()
        sync()
        t2 = time.perf_counter()
        opt_step()
        sync()
        t3, c3 = time.perf_counter(), time.process_time()
        if i == 0:
            first = t3 - t0
        if i >= a.warmup:
            times.append(t3 - t0)
            cpu += c3 - c0
            fwd, bwd, ost = fwd + t1 - t0, bwd + t2 - t1, ost + t3 - t2
        if not a.quiet and t3 - last >= 2.0:
            print(f"{peer}: step {i + 1}/{a.warmup + a.steps}  {1e3 * (t3 - t0):.0f} ms", file=sys.stderr)
            last = t3
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    mean = sum(times) / len(times)
    n = len(times)
    r = dict(config=os.path.splitext(os.path.basename(a.config))[0], scheme=m["scheme"],
             layers=m["decoder_layers"], d_model=m["d_model"], threads=torch.get_num_threads(),
             batch=batch, seq=seq, tokens_per_step=tokens, parameters=n_params, warmup=a.warmup,
             steps=a.steps, ms_per_step_median=1e3 * statistics.median(times), ms_per_step_mean=1e3 * mean,
             ms_per_step_min=1e3 * min(times), cpu_ms_per_step=1e3 * cpu / n, ms_forward=1e3 * fwd / n, ms_backward=1e3 * bwd / n,
             ms_optimizer=1e3 * ost / n, tokens_per_s=tokens / mean, rss_before_mb=rss_before * 1.048576,
             peak_rss_mb=peak * 1.048576, final_loss=loss.item(), torch=torch.__version__, peer=peer, blas=mapped_blas(),
             compile_s=max(0.0, first - mean) if a.compile else 0.0, device=a.device,
             gpu_peak_mb=torch.cuda.max_memory_allocated() / 2**20 if cuda else 0.0)
    print(f"config: {r['config']} ({m['scheme']}, {r['layers']} layers, d_model {r['d_model']}) [{peer}]")
    print(f"shape: {batch} x {seq} = {tokens} tokens/step")
    print(f"parameters: {n_params}")
    print(f"threads: {r['threads']}  torch {torch.__version__}")
    print(f"steps: {a.steps} timed after {a.warmup} warm-up")
    print(f"ms/step: median {r['ms_per_step_median']:.2f}  mean {r['ms_per_step_mean']:.2f}  "
          f"min {r['ms_per_step_min']:.2f}")
    print(f"CPU ms/step: {r['cpu_ms_per_step']:.2f} (all threads)")
    print(f"phases ms: forward+loss {r['ms_forward']:.2f}  backward {r['ms_backward']:.2f}  "
          f"optimizer {r['ms_optimizer']:.2f}")
    print(f"tokens/s: {r['tokens_per_s']:.1f}")
    print(f"RSS MB: {r['rss_before_mb']:.0f} before the model, {r['peak_rss_mb']:.0f} peak")
    if cuda:
        print(f"GPU MB: {r['gpu_peak_mb']:.0f} peak allocated ({torch.cuda.get_device_name()})")
    print(f"final loss: {r['final_loss']:.4f}")
    if a.compile:
        print(f"compile s: {r['compile_s']:.1f} (first step {first:.1f} s minus a steady step)")
    if a.json:  # atomically: a temporary file in the same folder, then rename
        d = os.path.dirname(os.path.abspath(a.json))
        fd, tmp = tempfile.mkstemp(dir=d, prefix=".pytorch_eager.")
        with os.fdopen(fd, "w") as f:
            json.dump(r, f, indent=2)
        os.chmod(tmp, 0o644)
        os.replace(tmp, a.json)


if __name__ == "__main__":
    main()
