"""Checkpoints that detect corruption: every tensor and the metadata carry a CRC-32C, checked on
every load. Flipped bytes in the data and in the header, a wrong stored checksum, a truncated
and a zero-length checkpoint each exit 2 with one line naming the file (and the tensor) and
change nothing; checkpoint_prev is kept and named in the message, and --resume-prev continues
from it with the same losses as the uninterrupted run; a failed start leaves no directory.
Run: python3 tests/cli/test_checkpoint_integrity.py build/stx"""
import os
import shutil
import sys
import tempfile

from checks import Checks, bad_input_problems, config_args, cut_bible, metrics, run_stx, sha  # noqa: E402

STX = os.path.abspath(sys.argv[1])
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
check = Checks()


def run(args):
    return run_stx(STX, args)


def expect_bad(name, args, must_mention, untouched=()):
    before = {p: sha(p) for p in untouched}
    problems = bad_input_problems(run(args), must_mention, before)
    check(name, not problems, "; ".join(problems))


def corrupt_copy(src, dst, edit):
    """A copy of run src at dst whose checkpoint_last has gone through edit(bytes) -> bytes."""
    shutil.copytree(src, dst)
    ck = os.path.join(dst, "checkpoint_last.safetensors")
    with open(ck, "rb") as f:
        data = f.read()
    with open(ck, "wb") as f:
        f.write(edit(data))
    return ck


def flip(at, n=4):
    return lambda b: b[:at(b)] + bytes(x ^ 0x5A for x in b[at(b):at(b) + n]) + b[at(b) + n:]


def header_end(b):
    return 8 + int.from_bytes(b[:8], "little")


def train_losses(run_dir):
    return {m["step"]: repr(m["loss"]) for m in metrics(run_dir) if "loss" in m}


with tempfile.TemporaryDirectory() as d:
    corpus = cut_bible(os.path.join(d, "corpus"), {"train": 600, "valid": 20, "test": 20})
    tiny = config_args(os.path.join(ROOT, "configs", "demo.yaml"), {
        "data.corpus": corpus, "data.spm_vocab_size": 200, "model.d_model": 16, "model.d_ff": 32, "model.n_heads": 2,
        "model.encoder_layers": 1, "model.decoder_layers": 1, "train.max_tokens": 300, "train.max_steps": 20,
        "train.warmup_steps": 5, "train.log_every": 1, "train.eval_every": 10, "train.checkpoint_every": 5,
        "train.valid_bleu_sentences": 0, "train.probe_sentences": 2})
    a = os.path.join(d, "a")
    r = run(["train", "--out", a] + tiny)
    check("train exits 0", r.returncode == 0, r.stderr[-1500:])
    last, prev = (os.path.join(a, f"checkpoint_{w}.safetensors") for w in ("last", "prev"))
    check("checkpoint_prev is kept beside checkpoint_last", os.path.exists(last) and os.path.exists(prev))
    with open(last, "rb") as f:
        raw = f.read()
    check("checkpoints carry CRC-32C checksums", b"stx.crc32c" in raw and b"stx.metadata_crc32c" in raw)

    # Four bytes flipped in the middle of the data: resume and eval refuse, naming file and tensor.
    c1 = os.path.join(d, "c1")
    ck = corrupt_copy(a, c1, flip(lambda b: (header_end(b) + len(b)) // 2))
    keep = [ck, os.path.join(c1, "checkpoint_prev.safetensors"), os.path.join(c1, "metrics.jsonl")]
    expect_bad("flipped data bytes (resume)", ["train", "--out", c1, "--resume"],
               [ck, "tensor '", "CRC-32C", "checkpoint_prev.safetensors", "--resume-prev"], keep)
    expect_bad("flipped data bytes (eval)", ["eval", "--run", c1, "--checkpoint", "last"], [ck, "tensor '", "CRC-32C"])

    # --resume-prev: continues from the step before, with the losses of the uninterrupted run.
    r = run(["train", "--out", c1, "--resume-prev"])
    check("--resume-prev exits 0", r.returncode == 0, r.stderr[-1500:])
    check("--resume-prev keeps the corrupt file aside",
          os.path.exists(os.path.join(c1, "checkpoint_last.corrupt.safetensors")))
    check("--resume-prev gives the uninterrupted run's losses", train_losses(c1) == train_losses(a),
          (train_losses(c1), train_losses(a)))

    check("--resume-prev leaves no temporary file", not [f for f in os.listdir(c1) if ".tmp" in f], os.listdir(c1))

    # A run whose checkpoint_last is gone but checkpoint_prev is not: neither a fresh start nor
    # --resume may overwrite the state that is left.
    c7 = os.path.join(d, "c7")
    shutil.copytree(a, c7)
    os.remove(os.path.join(c7, "checkpoint_last.safetensors"))
    keep = [os.path.join(c7, "checkpoint_prev.safetensors"), os.path.join(c7, "metrics.jsonl")]
    expect_bad("fresh start beside a lone checkpoint_prev", ["train", "--out", c7] + tiny,
               ["checkpoint_prev.safetensors", "--resume-prev"], keep)
    expect_bad("--resume beside a lone checkpoint_prev", ["train", "--out", c7, "--resume"], ["--resume-prev"], keep)

    # A flipped byte in the header's metadata (a digit of the config JSON), a wrong checksum.
    c2 = os.path.join(d, "c2")
    ck = corrupt_copy(a, c2, lambda b: b.replace(b'd_model\\":16', b'd_model\\":17', 1))
    expect_bad("flipped header byte", ["train", "--out", c2, "--resume"], [ck, "metadata", "CRC-32C"],
               [ck, os.path.join(c2, "metrics.jsonl")])
    c3 = os.path.join(d, "c3")

    def wrong_crc(b):
        i = b.index(b"stx.crc32c") + 40
        j = b.index(b'\\"', b.index(b'[\\"', i) + 3) - 1  # last hex digit of a stored checksum
        return b[:j] + (b"0" if b[j:j + 1] != b"0" else b"1") + b[j + 1:]
    ck = corrupt_copy(a, c3, wrong_crc)
    expect_bad("wrong stored checksum", ["train", "--out", c3, "--resume"], [ck, "CRC-32C"], [ck])
    c4 = os.path.join(d, "c4")
    ck = corrupt_copy(a, c4, lambda b: b[: len(b) - 100])
    expect_bad("truncated checkpoint", ["train", "--out", c4, "--resume"], [ck, "truncated", "--resume-prev"], [ck])
    c5 = os.path.join(d, "c5")
    ck = corrupt_copy(a, c5, lambda b: b"")
    expect_bad("zero-length checkpoint", ["train", "--out", c5, "--resume"], [ck, "0 bytes", "--resume-prev"], [ck])
    expect_bad("--resume-prev without checkpoint_prev",
               ["train", "--out", os.path.join(d, "c6"), "--resume-prev"] + tiny, ["checkpoint_prev"])

    # A failed start removes the directory it created (and only that).
    fresh = os.path.join(d, "fresh", "run")
    expect_bad("missing corpus", ["train", "--out", fresh] + tiny + ["--set", "data.corpus=/nonexistent/dir"],
               ["/nonexistent/dir"])
    check("a failed start leaves no run directory", not os.path.exists(fresh), os.listdir(os.path.dirname(fresh))
          if os.path.exists(os.path.dirname(fresh)) else "")

check.finish()
