#!/usr/bin/env python3
"""stx's weight files against the `safetensors` package itself (pinned in requirements.txt).

1. Every kind of file stx writes — `stx init` weights (encoder-decoder, decoder with σReparam),
   a training run's checkpoint (weights, Adam moments, step counters) and `stx forward`'s logits
   and taps — opens with safetensors.safe_open: the same tensor names, shapes and dtypes as the
   header says, values bit-equal to the independent reader of safetensors_io.py, and the same
   __metadata__ (stx's checksum keys included, as plain strings).
2. A file the package writes is one stx reads: an init file loaded with safetensors.torch and
   saved again by safetensors.torch.save_file (its own layout, alignment and order; stx's
   metadata kept, its checksum keys dropped, as a foreign tool would) gives bit-identical logits
   in `stx forward`; the token-id input is written by safetensors.numpy.

Usage: python3 tests/ref/test_safetensors_pkg.py build/stx
"""
import os
import sys
import tempfile

import numpy as np
import safetensors
import safetensors.numpy
import safetensors.torch
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
import safetensors_io  # noqa: E402
from checks import ROOT, Checks, config_args, run_stx  # noqa: E402

check = Checks()
CHECKSUM_KEYS = ("stx.crc32c", "stx.metadata_crc32c")


def compare_file(name, path):
    header, meta, _, _ = safetensors_io.read_header(path)
    ours, _ = safetensors_io.load(path)
    with safetensors.safe_open(path, framework="pt") as f:
        keys = sorted(f.keys())
        check(f"{name}: names", keys == sorted(header), f"{len(keys)} vs {len(header)}")
        check(f"{name}: metadata", (f.metadata() or {}) == meta)
        bad = []
        for k in keys:
            t = f.get_tensor(k)
            want = ours[k]
            if list(t.shape) != header[k]["shape"] or t.dtype != want.dtype or not torch.equal(t, want):
                bad.append(k)
        check(f"{name}: {len(keys)} tensors, shapes, dtypes and values bit-equal", not bad, bad[:5])
    dtypes = sorted({h["dtype"] for h in header.values()})
    print(f"     {name}: {len(header)} tensors, dtypes {dtypes}, metadata keys {sorted(meta)[:6]}")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: test_safetensors_pkg.py path/to/build/stx")
    stx = sys.argv[1]
    print(f"safetensors {safetensors.__version__}, torch {torch.__version__}")
    with tempfile.TemporaryDirectory() as d:
        ed = os.path.join(d, "ed.safetensors")
        dec = os.path.join(d, "dec.safetensors")
        small = {"model.d_model": 32, "model.d_ff": 64, "model.n_heads": 2}
        r1 = run_stx(stx, ["init", "--out", ed, "--seed", "3"] +
                     config_args(os.path.join(ROOT, "configs", "encoder-decoder.yaml"),
                                 {**small, "model.encoder_layers": 2, "model.decoder_layers": 2}))
        r2 = run_stx(stx, ["init", "--out", dec, "--seed", "4"] +
                     config_args(os.path.join(ROOT, "configs", "decoder.yaml"),
                                 {**small, "model.decoder_layers": 3, "model.sigma_reparam": "true"}))
        if not check("stx init writes both files", r1.returncode == 0 and r2.returncode == 0, r1.stderr + r2.stderr):
            check.finish()
        run = os.path.join(d, "run")
        r = run_stx(stx, ["train", "--out", run] + config_args(os.path.join(ROOT, "configs", "atlas.yaml"), {
            "model.decoder_layers": 2, "train.max_steps": 4, "train.log_every": 2, "train.eval_every": 4,
            "train.checkpoint_every": 4, "train.max_tokens": 256}))
        if not check("a 4-step training run", r.returncode == 0, r.stderr[-2000:]):
            check.finish()

        ids = np.random.default_rng(0).integers(0, 200, size=(2, 9)).astype(np.int64)
        inp = os.path.join(d, "in.safetensors")
        safetensors.numpy.save_file({"tgt": ids}, inp)
        logits = os.path.join(d, "logits.safetensors")
        r = run_stx(stx, ["forward", "--model", dec, "--input", inp, "--out", logits, "--taps"])
        check("stx forward reads the package's input file", r.returncode == 0, r.stderr)

        for name, path in (("init (encoder-decoder)", ed), ("init (decoder, σReparam)", dec),
                           ("checkpoint", os.path.join(run, "checkpoint_last.safetensors")),
                           ("forward logits and taps", logits)):
            compare_file(name, path)

        # 2. Written by the package, read by stx.
        tensors = safetensors.torch.load_file(dec)
        with safetensors.safe_open(dec, framework="pt") as f:
            meta = {k: v for k, v in (f.metadata() or {}).items() if k not in CHECKSUM_KEYS}
        rewritten = os.path.join(d, "dec-by-package.safetensors")
        safetensors.torch.save_file(dict(reversed(list(tensors.items()))), rewritten, metadata=meta)
        plain = os.path.join(d, "logits-plain.safetensors")
        logits2 = os.path.join(d, "logits2.safetensors")
        r0 = run_stx(stx, ["forward", "--model", dec, "--input", inp, "--out", plain])
        r = run_stx(stx, ["forward", "--model", rewritten, "--input", inp, "--out", logits2])
        check("stx forward reads a model file the package wrote", r.returncode == 0 and r0.returncode == 0,
              r.stderr + r0.stderr)
        if r.returncode == 0 and r0.returncode == 0:
            a = safetensors.torch.load_file(plain)["logits"]
            b = safetensors.torch.load_file(logits2)["logits"]
            check("same logits, bit for bit", torch.equal(a, b), f"max |Δ| {(a - b).abs().max().item()}")
    check.finish()


if __name__ == "__main__":
    main()
