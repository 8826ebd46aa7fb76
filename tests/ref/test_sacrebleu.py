#!/usr/bin/env python3
"""stx's corpus BLEU against sacreBLEU itself (the pinned `sacrebleu` package of requirements.txt).

1. The generated corpora of test_bleu_nltk.py (A: partial matches at every order with the
   brevity penalty active; B: A plus empty, 1–3-token and entity-laden pairs, where sacreBLEU's
   "exp" smoothing and its n-gram denominators matter), scored by stx's BLEU code through the
   gtest BleuNltk.* and by sacrebleu.corpus_bleu(tokenize="13a"): the scores agree to 1e-9 and
   print the same digits, and so do the four precisions, BP and the lengths.
2. `stx eval` end to end: a tiny Spanish→English model trained a few steps, decoded greedily
   with --hyps, and the copy-the-source baseline; sacreBLEU on the written hypotheses and the
   split's reference lines gives the BLEU stx printed, to its two printed digits. (At 60 updates
   the model's greedy output is still mostly empty, so its score is 0 and that check covers the
   plumbing; the copy baseline's is not, 0.13, and the corpora of part 1 cover the scorer.)

Usage: python3 tests/ref/test_sacrebleu.py build/stx
"""
import json
import os
import random
import re
import sys
import tempfile

import sacrebleu

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
import test_bleu_nltk as nb  # noqa: E402  (the corpora and the gtest driver)
from checks import ROOT, Checks, config_args, cut_bible, run_stx  # noqa: E402

check = Checks()


def sacre(hyps, refs):
    return sacrebleu.corpus_bleu(hyps, [refs], tokenize="13a", smooth_method="exp")


def compare_scores(name, out, hyps, refs):
    s = sacre(hyps, refs)
    print(f"{name}: stx {out['score']:.10f}  sacreBLEU {s.score:.10f}  ({len(hyps)} pairs, "
          f"hyp/ref {s.sys_len}/{s.ref_len}, BP {s.bp:.6f})")
    check(f"{name}: BLEU equal to 1e-9", abs(out["score"] - s.score) < 1e-9, f"{out['score']!r} vs {s.score!r}")
    check(f"{name}: printed digits", f"{out['score']:.2f}" == f"{s.score:.2f}")
    check(f"{name}: counts", out["correct"] == s.counts and out["total"] == s.totals,
          f"stx {out['correct']}/{out['total']} sacreBLEU {s.counts}/{s.totals}")
    check(f"{name}: lengths", (out["hyp_len"], out["ref_len"]) == (s.sys_len, s.ref_len))
    check(f"{name}: brevity penalty", abs(out["brevity_penalty"] - s.bp) < 1e-12, f"{out['brevity_penalty']} vs {s.bp}")
    check(f"{name}: precisions", all(abs(a - b) < 1e-9 for a, b in zip(out["precisions"], s.precisions)),
          f"{out['precisions']} vs {s.precisions}")


def printed_bleu(text, pattern):
    m = re.search(pattern, text)
    return m.group(1) if m else None


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: test_sacrebleu.py path/to/build/stx")
    stx = sys.argv[1]
    gtest = os.path.join(os.path.dirname(os.path.abspath(stx)), "tests", "stx_tests")
    print(f"sacrebleu {sacrebleu.__version__}")

    # 1. The generated corpora.
    rng = random.Random(20240531)
    hyps_a, refs_a = nb.corpus_a(rng)
    hyps_b, refs_b = hyps_a + [h for h, _ in nb.EDGE], refs_a + [r for _, r in nb.EDGE]
    # C: a corpus with no 4-gram match at all, where sacreBLEU's "exp" smoothing decides the score.
    hyps_c = [" ".join(h.split()[:3]) for h in hyps_a[:40]]
    refs_c = refs_a[:40]
    with tempfile.TemporaryDirectory() as tmp:
        for name, h, r in (("corpus A", hyps_a, refs_a), ("corpus B", hyps_b, refs_b), ("corpus C", hyps_c, refs_c)):
            compare_scores(name, nb.run_stx(gtest, tmp, name[-1], h, r), h, r)

    # 2. `stx eval` end to end.
    with tempfile.TemporaryDirectory() as d:
        corpus = cut_bible(os.path.join(d, "corpus"), {"train": 1500, "valid": 40, "test": 60})
        run = os.path.join(d, "run")
        tiny = config_args(os.path.join(ROOT, "configs", "demo.yaml"), {
            "data.corpus": corpus, "data.spm_vocab_size": 300, "model.d_model": 32, "model.d_ff": 64,
            "model.n_heads": 2, "model.encoder_layers": 2, "model.decoder_layers": 2, "model.max_len": 256,
            "train.max_tokens": 600,
            "train.max_steps": 60, "train.warmup_steps": 10, "train.log_every": 20, "train.eval_every": 60,
            "train.checkpoint_every": 60, "train.valid_bleu_sentences": 0, "train.probe_sentences": 4})
        r = run_stx(stx, ["train", "--out", run] + tiny)
        if not check("tiny translation model trains", r.returncode == 0, r.stderr[-2000:]):
            check.finish()
        with open(os.path.join(corpus, "test.en"), encoding="utf-8") as f:
            refs = [line.rstrip("\n") for line in f]
        hyp_file = os.path.join(d, "test.hyp")
        r = run_stx(stx, ["eval", "--run", run, "--split", "test", "--beam", "1", "--hyps", hyp_file])
        got = printed_bleu(r.stdout, r"BLEU (\d+\.\d\d)")
        if not check("stx eval --hyps exits 0 and writes the hypotheses", r.returncode == 0 and os.path.exists(hyp_file),
                     r.stdout + r.stderr):
            check.finish()
        with open(hyp_file, encoding="utf-8") as f:
            hyps = [line.rstrip("\n") for line in f]
        s = sacre(hyps, refs[:len(hyps)])
        print(f"stx eval (greedy, {len(hyps)} sentences): stx prints {got}, sacreBLEU {s.score:.2f} ({s})")
        check("stx eval decodes every test sentence", len(hyps) == len(refs), f"{len(hyps)} of {len(refs)}")
        check("stx eval's BLEU = sacreBLEU's on its --hyps", got == f"{s.score:.2f}", r.stdout + r.stderr)
        r = run_stx(stx, ["eval", "--run", run, "--split", "test", "--baseline", "copy"])
        got = printed_bleu(r.stdout, r"copy-the-source BLEU (\d+\.\d\d)")
        with open(os.path.join(corpus, "test.es"), encoding="utf-8") as f:
            srcs = [line.rstrip("\n") for line in f]
        s = sacre(srcs, refs)
        print(f"copy-the-source baseline: stx prints {got}, sacreBLEU {s.score:.2f}")
        check("copy baseline BLEU = sacreBLEU's", got == f"{s.score:.2f}" and s.score > 0, r.stdout + r.stderr)
    check.finish()


if __name__ == "__main__":
    main()
