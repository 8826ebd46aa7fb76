#!/usr/bin/env python3
"""Cross-check of stx's corpus BLEU (src/stx/eval/bleu.cpp, sacreBLEU semantics) against
nltk.translate.bleu_score.corpus_bleu.

A deterministic corpus (hundreds of sentence pairs: varied overlap and lengths, punctuation
attached or detached so that 13a tokenization matters, HTML entities, numbers, accents) is
written to files; the gtest BleuNltk.* (tests/test_bleu_nltk.cpp) computes stx's BLEU and the
13a tokens of every line and writes them as JSON. Here:
  1. the tokens are checked against an independent Python port of sacreBLEU's 13a tokenizer
     (and the port against a few hand-tokenized lines); non-ASCII spaces, where stx differs,
     are only reported;
  2. corpus A (every hypothesis ≥ 4 tokens, total hypothesis length < reference length so the
     brevity penalty is active, matches at every n-gram order): nltk's corpus_bleu with
     weights (0.25,)*4 and no smoothing must equal stx's score / 100;
  3. corpus B = A + edge cases (empty hypotheses, 1–3-token hypotheses, an empty pair, entities,
     <skipped>): nltk counts each sentence's n-gram denominator as max(1, count), sacreBLEU as
     count, so nltk's score differs; stx must equal BLEU rebuilt from nltk's per-sentence
     statistics with that one documented difference undone, and nltk's own score must equal the
     same rebuild without the correction (so the difference is exactly that rule).
Usage: python3 test_bleu_nltk.py build/stx   (the gtest binary is build/tests/stx_tests)
"""
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
from fractions import Fraction

from nltk.translate.bleu_score import brevity_penalty, corpus_bleu, modified_precision

FAILURES = []


def check(ok, msg):
    if not ok:
        FAILURES.append(msg)
        print("FAIL:", msg)


# --- sacreBLEU 13a (sacrebleu/tokenizers/tokenizer_13a.py + tokenizer_re.py), ported ---
_RE_13A = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def tok13a(line):
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
    line = " " + line + " "
    for pattern, repl in _RE_13A:
        line = pattern.sub(repl, line)
    return line.split()


HAND = {  # tokenized by hand from the mteval-v13a rules
    "Hello, world!": ["Hello", ",", "world", "!"],
    "It costs 3.5-4 dollars.": ["It", "costs", "3.5", "-", "4", "dollars", "."],
    "1,000 apples, (fresh)": ["1,000", "apples", ",", "(", "fresh", ")"],
    "&quot;hi&quot; &amp; bye": ['"', "hi", '"', "&", "bye"],
    "don't stop": ["don't", "stop"],
    "a/b <skipped> c;d": ["a", "/", "b", "c", ";", "d"],
}

# --- a deterministic corpus ---
WORDS = ("the of and to in he she they said unto lord god people land house king day son "
         "father mother children city water bread light word heart hand way earth heaven "
         "went came saw made gave took spake brought shall will may not all every great "
         "little new old good evil holy first last man woman Israel Moses David Jerusalem "
         "café niño señor über naïve").split()
SPECIAL = ["3.5", "1,000", "42", "2-3", "10-12", "it's", "don't", "e.g.", "U.S.", "50%", "$20",
           "#7", "x/y", "&amp;", "&quot;yes&quot;", "&lt;b&gt;", "(aside)", "[note]", "{a}",
           "well-known", "self-evident", "...", "--", "a+b", "x=y", "user@host", "~ok", "`q`"]
PUNCT_AFTER = [",", ".", "!", "?", ";", ":", ")", "'", '"']


def sentence(rng, n):
    ws = []
    for _ in range(n):
        w = rng.choice(SPECIAL) if rng.random() < 0.15 else rng.choice(WORDS)
        if rng.random() < 0.15:
            w += rng.choice(PUNCT_AFTER)
        ws.append(w)
    if ws and rng.random() < 0.7:
        ws[-1] += rng.choice([".", "!", "?"])
    return ws


def render(ws, rng, detach):
    """Joins words; with `detach`, sometimes writes punctuation apart ("end ." for "end.")."""
    out = []
    for w in ws:
        if detach and len(w) > 1 and w[-1] in ".,!?;:" and not w[-2].isdigit() and rng.random() < 0.5:
            out.append(w[:-1] + " " + w[-1])
        else:
            out.append(w)
    return " ".join(out)


def hypothesis(rng, ref_ws):
    rate = rng.choice([0.0, 0.05, 0.15, 0.3, 0.5, 0.8])
    ws = []
    for w in ref_ws:
        r = rng.random()
        if r < rate * 0.4:
            ws.append(rng.choice(WORDS))  # substitution
        elif r < rate * 0.7:
            continue  # deletion
        elif r < rate * 0.85:
            ws += [w, rng.choice(WORDS + SPECIAL)]  # insertion
        else:
            ws.append(w)
    if rate and rng.random() < 0.3 and len(ws) > 2:
        i = rng.randrange(len(ws) - 1)
        ws[i], ws[i + 1] = ws[i + 1], ws[i]  # local reordering
    if rng.random() < 0.25:
        ws = ws[: max(1, int(len(ws) * rng.uniform(0.5, 0.9)))]  # truncated: shorter than the reference
    return ws


def corpus_a(rng, n=420):
    hyps, refs = [], []
    while len(hyps) < n:
        ref_ws = sentence(rng, rng.randint(4, 30))
        h = render(hypothesis(rng, ref_ws), rng, detach=True)
        if len(tok13a(h)) < 4:  # corpus A keeps nltk's and sacreBLEU's denominators equal
            continue
        hyps.append(h)
        refs.append(render(ref_ws, rng, detach=False))
    return hyps, refs


EDGE = [  # (hypothesis, reference)
    ("", "the lord said unto Moses ."),
    ("", "and it was so."),
    ("", ""),
    ("the", "the king went up to Jerusalem."),
    ("the king", "the king went up to Jerusalem."),
    ("the king went", "the king went up to Jerusalem."),
    ("...", "Then he said: &quot;go&quot;."),
    ("&quot;go&quot; , he said .", 'Then he said: "go".'),
    ("<skipped> and the people came", "and all the people came to the city"),
    ("a great people, a great people, a great people, a great people", "a great people"),
    ("", "in the beginning God created the heaven and the earth."),
    ("and\u00a0it was so", "and\u00a0it was so."),  # non-ASCII spaces split like str.split()
    ("caf\u00e9\u2009ok", "caf\u00e9 ok"),
]


# --- running stx ---
def run_stx(gtest, workdir, name, hyps, refs):
    hp, rp, op = (os.path.join(workdir, f"{name}.{s}") for s in ("hyp", "ref", "json"))
    for path, lines in ((hp, hyps), (rp, refs)):
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write("".join(line + "\n" for line in lines))
    env = dict(os.environ, STX_BLEU_HYP=hp, STX_BLEU_REF=rp, STX_BLEU_OUT=op, OMP_NUM_THREADS="1")
    p = subprocess.run([gtest, "--gtest_filter=BleuNltk.*"], env=env, capture_output=True, text=True)
    if p.returncode != 0 or not os.path.exists(op):
        print(p.stdout[-3000:], p.stderr[-3000:])
        sys.exit(f"FAIL: {gtest} --gtest_filter=BleuNltk.* exited {p.returncode} without writing {op}")
    with open(op, encoding="utf-8") as f:
        return json.load(f)


def nltk_stats(hyp_toks, ref_toks):
    """Per-order nltk numerators/denominators, summed as corpus_bleu sums them."""
    num, den = [0] * 4, [0] * 4
    for h, r in zip(hyp_toks, ref_toks):
        for n in range(1, 5):
            p = modified_precision([r], h, n)
            num[n - 1] += p.numerator
            den[n - 1] += p.denominator
    return num, den


def bleu_from(num, den, hyp_len, ref_len):
    if min(num) == 0:
        return None
    bp = brevity_penalty(ref_len, hyp_len)
    return bp * math.exp(math.fsum(0.25 * math.log(Fraction(a, b)) for a, b in zip(num, den)))


def compare_tokens(out, hyps, refs, name):
    bad = 0
    for kind, lines, toks in (("hyp", hyps, out["hyp_tokens"]), ("ref", refs, out["ref_tokens"])):
        check(len(lines) == len(toks), f"{name}: {len(toks)} {kind} token lines for {len(lines)} lines")
        for i, (line, t) in enumerate(zip(lines, toks)):
            if tok13a(line) != t and bad < 5:
                bad += 1
                check(False, f"{name} {kind} line {i} {line!r}: stx 13a {t} != python 13a {tok13a(line)}")


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: test_bleu_nltk.py path/to/build/stx")
    gtest = os.path.join(os.path.dirname(os.path.abspath(sys.argv[1])), "tests", "stx_tests")
    for line, want in HAND.items():
        check(tok13a(line) == want, f"python 13a port: {line!r} -> {tok13a(line)}, expected {want}")

    rng = random.Random(20240531)
    hyps_a, refs_a = corpus_a(rng)
    hyps_b, refs_b = hyps_a + [h for h, _ in EDGE], refs_a + [r for _, r in EDGE]
    with tempfile.TemporaryDirectory() as tmp:
        out_a = run_stx(gtest, tmp, "a", hyps_a, refs_a)
        out_b = run_stx(gtest, tmp, "b", hyps_b, refs_b)
    compare_tokens(out_a, hyps_a, refs_a, "corpus A")
    compare_tokens(out_b, hyps_b, refs_b, "corpus B")
    if FAILURES:
        sys.exit(f"{len(FAILURES)} tokenization check(s) failed")

    # Corpus A: direct comparison with nltk.
    H, R = out_a["hyp_tokens"], out_a["ref_tokens"]
    num, den = nltk_stats(H, R)
    hl, rl = sum(map(len, H)), sum(map(len, R))
    nltk_a = corpus_bleu([[r] for r in R], H, weights=(0.25,) * 4)
    print(f"corpus A: {len(H)} pairs, hyp/ref tokens {hl}/{rl}, matches {num} of {den}")
    print(f"corpus A: stx BLEU {out_a['score']:.10f}  100*nltk {100 * nltk_a:.10f}  BP {out_a['brevity_penalty']:.6f}")
    check(min(num) > 0 and all(0 < a < b for a, b in zip(num, den)), f"corpus A needs partial matches at every order: {num}/{den}")
    check(hl < rl and out_a["brevity_penalty"] < 1, "corpus A should exercise the brevity penalty")
    check(out_a["correct"] == num and out_a["total"] == den, f"corpus A counts: stx {out_a['correct']}/{out_a['total']} nltk {num}/{den}")
    check(out_a["hyp_len"] == hl and out_a["ref_len"] == rl, "corpus A lengths")
    check(abs(out_a["brevity_penalty"] - brevity_penalty(rl, hl)) < 1e-12, "corpus A brevity penalty")
    check(abs(out_a["score"] - 100 * nltk_a) < 1e-6 * 100, f"corpus A: stx {out_a['score']!r} vs 100*nltk {100 * nltk_a!r}")
    for n in range(4):
        check(abs(out_a["precisions"][n] - 100 * num[n] / den[n]) < 1e-9, f"corpus A precision {n + 1}")

    # Corpus B: edge cases; nltk's max(1, ·) denominators undone for hypotheses shorter than n.
    H, R = out_b["hyp_tokens"], out_b["ref_tokens"]
    num, den = nltk_stats(H, R)
    short = [sum(1 for h in H if len(h) < n) for n in range(1, 5)]
    den_sacre = [d - s for d, s in zip(den, short)]
    hl, rl = sum(map(len, H)), sum(map(len, R))
    want = bleu_from(num, den_sacre, hl, rl)
    nltk_b = corpus_bleu([[r] for r in R], H, weights=(0.25,) * 4)
    print(f"corpus B: {len(H)} pairs ({len(EDGE)} edge cases), hypotheses shorter than n: {short}")
    print(f"corpus B: stx BLEU {out_b['score']:.10f}  rebuilt {100 * want:.10f}  100*nltk (max(1,.) denominators) {100 * nltk_b:.10f}")
    check(out_b["correct"] == num and out_b["total"] == den_sacre,
          f"corpus B counts: stx {out_b['correct']}/{out_b['total']} vs nltk {num}/{den} minus {short}")
    check(out_b["hyp_len"] == hl and out_b["ref_len"] == rl, "corpus B lengths")
    check(abs(out_b["score"] - 100 * want) < 1e-6 * 100, f"corpus B: stx {out_b['score']!r} vs rebuilt {100 * want!r}")
    check(abs(nltk_b - bleu_from(num, den, hl, rl)) < 1e-12, "nltk's corpus_bleu is not the uncorrected rebuild")

    if FAILURES:
        sys.exit(f"{len(FAILURES)} check(s) failed")
    print("OK")


if __name__ == "__main__":
    main()
