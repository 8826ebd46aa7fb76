"""Bad input to the stx CLI: every case exits 2 with one line on stderr naming the problem,
writes no output file, and never crashes. Run: python3 tests/cli/test_bad_input.py build/stx"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "ref"))
import safetensors_io as st  # noqa: E402
import checks  # noqa: E402
import torch  # noqa: E402

STX = os.path.abspath(sys.argv[1])
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TINY = ["--set", "model.d_model=16", "--set", "model.n_heads=2", "--set", "model.d_ff=32",
        "--set", "model.vocab_size=50", "--set", "model.encoder_layers=2", "--set", "model.decoder_layers=2"]
passed, failed = 0, 0


def run(args):
    return subprocess.run([STX] + args, capture_output=True, text=True, timeout=300)


def expect_bad(name, args, out, must_mention):
    """args must exit 2, print one stderr line containing every string in must_mention, and
    leave `out` absent."""
    global passed, failed
    r = run(args)
    problems = checks.bad_input_problems(r, must_mention)
    if out and os.path.exists(out):
        problems.append(f"output file {out} was written")
    leftovers = [f for f in os.listdir(os.path.dirname(out))] if out else []
    if any(".tmp." in f for f in leftovers):
        problems.append(f"temporary file left behind: {leftovers}")
    if problems:
        failed += 1
        print(f"FAIL {name}: " + "; ".join(problems))
    else:
        passed += 1
        print(f"ok   {name}: {r.stderr.strip()}")


def write(path, text, mode="w"):
    with open(path, mode) as f:
        f.write(text)
    return path


with tempfile.TemporaryDirectory() as d:
    out = os.path.join(d, "out.safetensors")
    base = os.path.join(ROOT, "configs", "encoder-decoder.yaml")
    init = ["init", "--seed", "1", "--out", out]

    # Configs.
    expect_bad("malformed YAML", init + ["--config", write(f"{d}/bad.yaml", "model:\n  d_model: [1, 2\n")], out, ["not valid YAML"])
    expect_bad("unknown key", init + ["--config", write(f"{d}/unk.yaml", "model:\n  d_modle: 64\n")], out, ["model.d_modle", "d_model"])
    expect_bad("unknown section", init + ["--config", write(f"{d}/sec.yaml", "optim:\n  lr: 1\n")], out, ["optim", "model, train, data"])
    expect_bad("wrong type", init + ["--config", base, "--set", "model.d_model=big"], out, ["model.d_model", "big"])
    expect_bad("wrong type in file", init + ["--config", write(f"{d}/ty.yaml", "model:\n  bias: sometimes\n")], out, ["model.bias", "true | false"])
    expect_bad("deepnorm without norm", init + ["--config", base, "--set", "model.scheme=deepnorm", "--set", "model.norm=none"], out, ["model.norm", "deepnorm"])
    expect_bad("sigma_reparam with zero qk", init + ["--config", base, "--set", "model.sigma_reparam=true", "--set", "model.qk_init=zero"], out, ["model.qk_init", "sigma_reparam"])
    expect_bad("zero size", init + ["--config", base, "--set", "model.d_ff=0"], out, ["model.d_ff", "positive"])
    expect_bad("negative size", init + ["--config", base, "--set", "model.encoder_layers=-3"], out, ["model.encoder_layers"])
    expect_bad("heads do not divide d_model", init + ["--config", base, "--set", "model.n_heads=7"], out, ["model.n_heads", "divide"])
    expect_bad("bad enum", init + ["--config", base, "--set", "model.scheme=adminx"], out, ["model.scheme", "post | pre | deepnorm | post-init"])
    expect_bad("--set without =", init + ["--config", base, "--set", "model.scheme"], out, ["section.key=value"])
    expect_bad("missing config file", init + ["--config", f"{d}/nope.yaml"], out, ["nope.yaml"])
    expect_bad("missing --out", ["init", "--config", base], None, ["--out"])
    expect_bad("unknown option", ["init", "--config", base, "--out", out, "--sed", "3"], out, ["--sed"])
    expect_bad("unknown subcommand", ["trian"], None, ["trian"])

    # A good model to corrupt, and good tokens.
    model = os.path.join(d, "m.safetensors")
    r = run(["init", "--config", base] + TINY + ["--seed", "1", "--out", model])
    assert r.returncode == 0, r.stderr
    toks = os.path.join(d, "tok.safetensors")
    st.save(toks, {"src": torch.randint(1, 50, (2, 5)), "tgt": torch.randint(1, 50, (2, 4))})
    fwd = lambda m, i: ["forward", "--model", m, "--input", i, "--out", out]  # noqa: E731

    raw = open(model, "rb").read()
    expect_bad("missing model file", fwd(f"{d}/none.safetensors", toks), out, ["none.safetensors"])
    expect_bad("truncated model", fwd(write(f"{d}/trunc.safetensors", raw[: len(raw) // 2], "wb"), toks), out, ["trunc.safetensors"])
    expect_bad("tiny file", fwd(write(f"{d}/tiny.safetensors", raw[:5], "wb"), toks), out, ["tiny.safetensors"])
    hdr = bytearray(raw)
    hdr[8:12] = b"#!@$"
    expect_bad("corrupted header", fwd(write(f"{d}/hdr.safetensors", bytes(hdr), "wb"), toks), out, ["hdr.safetensors"])
    huge = bytearray(raw)
    huge[0:8] = (10**15).to_bytes(8, "little")
    expect_bad("header length past the end", fwd(write(f"{d}/len.safetensors", bytes(huge), "wb"), toks), out, ["len.safetensors"])
    # A valid safetensors file without stx metadata, and one whose weights miss a tensor.
    w, meta = st.load(model)
    st.save(f"{d}/nometa.safetensors", w)
    expect_bad("no stx.config metadata", fwd(f"{d}/nometa.safetensors", toks), out, ["stx.config"])
    w2 = dict(w)
    missing = sorted(w2)[3]
    del w2[missing]
    st.save(f"{d}/missing.safetensors", w2, metadata=meta)
    expect_bad("missing tensor", fwd(f"{d}/missing.safetensors", toks), out, [missing])
    w3 = dict(w)
    w3["decoder.layers.0.ffn.fc1.weight"] = torch.zeros(3, 3)
    st.save(f"{d}/shape.safetensors", w3, metadata=meta)
    expect_bad("wrong shape", fwd(f"{d}/shape.safetensors", toks), out, ["decoder.layers.0.ffn.fc1.weight", "shape"])

    # Bad token inputs.
    st.save(f"{d}/range.safetensors", {"src": torch.tensor([[1, 2, 50]]), "tgt": torch.tensor([[1, 2]])})
    expect_bad("token id out of range", fwd(model, f"{d}/range.safetensors"), out, ["50", "[0, 50)"])
    st.save(f"{d}/neg.safetensors", {"src": torch.tensor([[1, -1]]), "tgt": torch.tensor([[1, 2]])})
    expect_bad("negative token id", fwd(model, f"{d}/neg.safetensors"), out, ["-1"])
    st.save(f"{d}/float.safetensors", {"src": torch.ones(1, 3), "tgt": torch.tensor([[1, 2]])})
    expect_bad("float tokens", fwd(model, f"{d}/float.safetensors"), out, ["int64"])
    st.save(f"{d}/nosrc.safetensors", {"tgt": torch.tensor([[1, 2]])})
    expect_bad("missing src", fwd(model, f"{d}/nosrc.safetensors"), out, ["src"])
    st.save(f"{d}/batch.safetensors", {"src": torch.tensor([[1, 2]]), "tgt": torch.tensor([[1, 2], [3, 4]])})
    expect_bad("batch mismatch", fwd(model, f"{d}/batch.safetensors"), out, ["batch"])
    st.save(f"{d}/long.safetensors", {"src": torch.ones(1, 300, dtype=torch.int64), "tgt": torch.tensor([[1, 2]])})
    expect_bad("longer than max_len", fwd(model, f"{d}/long.safetensors"), out, ["max_len"])

    # An existing output file is not overwritten by a failing command.
    write(out, "keep me")
    r = run(fwd(model, f"{d}/range.safetensors"))
    if r.returncode == 2 and open(out).read() == "keep me":
        passed += 1
        print("ok   existing output kept on failure")
    else:
        failed += 1
        print("FAIL existing output kept on failure")

print(f"{passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
