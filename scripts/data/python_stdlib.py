#!/usr/bin/python3
"""The Python 3.11 standard library as a byte-level LM corpus (docs/data.md §5).

Called by scripts/data/build-python-corpus.sh, which checks the pinned Debian version first.

The text is the library's own source, as Debian's libpython3.11-stdlib and libpython3.11-minimal
install it under /usr/lib/python3.11 (`dpkg -L` names the files; each is checked against the
package's md5sums, so a locally edited file stops the build). stx reads one segment per line and
cannot carry a newline inside a segment (src/stx/data/corpus.cpp splits on '\\n' only), so a
source line break inside a segment is written as one vertical-tab byte (U+000B, `\\v`): one byte
for one byte, so bits per byte on this corpus are bits per byte of the source, and
`tr '\\v' '\\n'` gives the source lines back. A segment is a run of consecutive
blank-line-separated blocks of one file, closed at the first blank line once it holds at least
MIN_SEGMENT bytes: the length distribution of Moby-Dick's paragraphs (docs/data.md §1). Splits
are by whole file, ranked by sha256 of the file's path relative to /usr/lib/python3.11.

  python_stdlib.py --out DIR --pinned VERSION [--stamp TEXT]        the installed packages
  python_stdlib.py --out DIR --root TREE --pinned LABEL [targets]   any tree of .py files (tests)
"""
import argparse
import collections
import hashlib
import math
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stxdata as sd  # noqa: E402

PACKAGES = ("libpython3.11-stdlib", "libpython3.11-minimal")
LIB = "/usr/lib/python3.11"
SEP = "\x0b"  # a source line break inside a segment
MIN_SEGMENT = 200  # bytes: close a segment at the first blank line from here on
HELDOUT_TARGET = 110_000  # bytes of text for test and for valid (5 % each)
HELDOUT_MAX_FILE = 40_000  # larger files are never held out (a held-out set of 2–3 files says little)
TRAIN_TARGET = 2_000_000  # bytes of text for train; files past it in hash order are not used
TEST_DIRS = {"test", "tests", "idle_test"}


def log(msg):
    print("[python-stdlib] " + msg, flush=True)


def die(msg):
    print("[python-stdlib] error: " + msg, file=sys.stderr, flush=True)
    sys.exit(1)


def excluded(rel, text):
    """Why the file at `rel` (relative to the library root) is not library code, or None."""
    parts = rel.split("/")
    if any(p in ("site-packages", "dist-packages") for p in parts[:-1]):
        return "site-packages"
    if any(p in TEST_DIRS for p in parts[:-1]):
        return "test code"
    if parts[0] == "pydoc_data":
        return "generated documentation text (pydoc_data)"
    if parts[-1].startswith("_sysconfigdata"):
        return "generated build configuration (_sysconfigdata*)"
    if parts[0] == "encodings" and ("decoding_table" in text or "decoding_map" in text):
        return "codec tables (encodings/ modules with a decoding_table or decoding_map)"
    return None


def normalize(rel, raw):
    """The file's lines: UTF-8 (strict), '\\n' line ends, form feeds removed, tabs expanded to
    8 columns (Python's own indentation rule), trailing whitespace removed."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        die(f"{rel} is not UTF-8 ({e})")
    if text.startswith("\ufeff"):
        text = text[1:]
    lines = []
    for n, line in enumerate(text.replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        line = line.replace("\f", "").expandtabs(8).rstrip()
        bad = [c for c in line if ord(c) < 0x20 or ord(c) == 0x7F]
        if bad:
            die(f"{rel} line {n} has the control character U+{ord(bad[0]):04X}")
        lines.append(line)
    return lines


def segments(lines, min_bytes=MIN_SEGMENT):
    """Consecutive blank-line-separated blocks joined, closed at the first blank line once the
    segment has min_bytes bytes (or at the end of the file). Blank lines inside a segment are
    kept (as consecutive separators); a segment neither starts nor ends with one."""
    out, seg, blank, size = [], [], 0, 0
    for line in lines:
        if not line:
            if seg and size >= min_bytes:
                out.append(SEP.join(seg))
                seg, blank, size = [], 0, 0
            elif seg:
                blank += 1
            continue
        if blank:
            seg.extend([""] * blank)
            size += blank
            blank = 0
        size += len(line.encode("utf-8")) + (1 if seg else 0)
        seg.append(line)
    if seg:
        out.append(SEP.join(seg))
    return out


def text_bytes(segs):
    return sum(len(s.encode("utf-8")) + 1 for s in segs)  # one '\n' per segment in the file


def dpkg_sources():
    """[(rel, path, package)] of the regular .py files of PACKAGES under LIB, checked against
    each package's md5sums, and the number of symbolic links skipped."""
    out, links = [], 0
    for pkg in PACKAGES:
        listed = subprocess.run(["dpkg", "-L", pkg], capture_output=True, text=True)
        if listed.returncode != 0:
            die(f"dpkg -L {pkg} failed: {listed.stderr.strip()}")
        md5path = subprocess.run(["dpkg-query", "--control-path", pkg, "md5sums"], capture_output=True,
                                 text=True).stdout.strip()
        sums = {}
        if md5path:
            with open(md5path, encoding="utf-8") as f:
                for row in f:
                    digest, name = row.rstrip("\n").split("  ", 1)
                    sums["/" + name] = digest
        for path in listed.stdout.split("\n"):
            if not (path.startswith(LIB + "/") and path.endswith(".py")):
                continue
            if os.path.islink(path) or not os.path.isfile(path):
                links += os.path.islink(path)  # sitecustomize.py: a link to the conffile in /etc
                continue
            if path not in sums:
                die(f"{path} has no md5sum in {pkg}'s control files")
            with open(path, "rb") as f:
                if hashlib.md5(f.read()).hexdigest() != sums[path]:
                    die(f"{path} differs from {pkg}'s copy (md5sums): reinstall {pkg}")
            out.append((path[len(LIB) + 1:], path, pkg))
    return sorted(out), links


def tree_sources(root):
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(d, name)
            if name.endswith(".py") and os.path.isfile(path) and not os.path.islink(path):
                out.append((os.path.relpath(path, root).replace(os.sep, "/"), path, "tree"))
    return sorted(out), 0


def split_files(docs, heldout_target, heldout_max_file, train_target):
    """docs: [(rel, segs, bytes)]. Ranked by sha256 of rel: test, then valid take files of at most
    heldout_max_file bytes until each has heldout_target bytes, train the next files until it
    has train_target; the rest is unused. Returns {split: [doc, …]} in rank order."""
    ranked = sorted(docs, key=lambda d: hashlib.sha256(d[0].encode("utf-8")).hexdigest())
    out = {"test": [], "valid": [], "train": [], "unused": []}
    size = collections.Counter()
    for doc in ranked:
        for split, target in (("test", heldout_target), ("valid", heldout_target), ("train", train_target)):
            if size[split] >= target or (split != "train" and doc[2] > heldout_max_file):
                continue
            out[split].append(doc)
            size[split] += doc[2]
            break
        else:
            out["unused"].append(doc)
    return out


def unigram_entropy_bits(segs):
    """Bits per byte of the byte unigram distribution of a split, as stx computes it
    (`unigram_entropy_bits`: src/stx/data/unigram.h, src/stx/atlas/atlas_summary.cpp): every
    byte of every line, plus one end-of-sequence token per line."""
    count = collections.Counter()
    for s in segs:
        count.update(s.encode("utf-8"))
    count["eos"] = len(segs)
    n = sum(count.values())
    return -sum(k / n * math.log2(k / n) for k in count.values())


def readme(a, versions, counts, excl, splits, files, ent):
    total_gz = sum(f["gz_bytes"] for f in files.values())
    rows = "\n".join(
        f"| `{name}` | {f['lines']:,} | {f['text_bytes']:,} | {f['gz_bytes']:,} | `{f['sha256']}` "
        f"| `{f['text_sha256']}` |" for name, f in files.items())
    pk = "\n".join(f"- `{p}` {v}" for p, v in versions)
    ex = "\n".join(f"| {why} | {n:,} | {b:,} |" for why, (n, b) in sorted(excl.items()))
    sp = "\n".join(
        f"| {s} | {len(splits[s]):,} | {sum(len(d[1]) for d in splits[s]):,} | {sum(d[2] for d in splits[s]):,} |"
        for s in ("train", "valid", "test", "unused"))
    return f"""# data/cache/python-stdlib: the Python 3.11 standard library as an LM corpus

Built by `scripts/data/build-python-corpus.sh` (called by `scripts/setup.sh`); not committed.
Program source, a corpus of a different kind than Moby-Dick for the byte-level atlas
(`configs/atlas-python.yaml`, `data.corpus: python-stdlib`). See docs/data.md §5.

Source: the `.py` files that these Debian 12 packages install under `/usr/lib/python3.11`
(`dpkg -L`, each checked against the package's md5sums), pinned version {a.pinned}:

{pk}

License: PSF License Version 2 (Python Software Foundation License), see
`/usr/share/doc/libpython3.11-stdlib/copyright` and `/usr/lib/python3.11/LICENSE.txt`.

Format: gzip -9 (mtime 0, no file name) of UTF-8 text, `\\n` line ends, one segment per line.
A segment is consecutive blank-line-separated blocks of one file, closed at the first blank
line once it holds at least {MIN_SEGMENT} bytes; a line break inside a segment is one byte
U+000B (`\\v`: `tr '\\v' '\\n'` shows the source). Form feeds removed, tabs expanded to 8
columns, trailing whitespace removed; nothing else changed.

## Files ({total_gz:,} bytes compressed)

| file | lines | text bytes | gzip bytes | sha256 (gzip) | sha256 (text) |
|---|---|---|---|---|---|
{rows}

`SHA256SUMS` holds the checksums of the gzip files and `files.tsv` (`sha256sum -c SHA256SUMS`).
The text's sha256 depends only on the package version and the builder; the gzip bytes also
on zlib (Debian 12's zlib1g).

## Selection and splits

{counts['listed']:,} `.py` files listed by the packages ({counts['listed_bytes']:,} bytes),
{counts['links']} symbolic link(s) skipped.

| excluded | files | bytes |
|---|---|---|
{ex}

Files ranked by sha256 of their path relative to `/usr/lib/python3.11`: test and then valid
take files of at most {a.heldout_max_file:,} bytes until each has {a.heldout_target:,} bytes of
text, train the next files of any size until it has {a.train_target:,}; the remaining files
are not used (all {sum(d[2] for s in splits.values() for d in s):,} bytes would be many times
Moby-Dick's train text). `files.tsv` lists every used file with its split.

| split | files | segments | text bytes |
|---|---|---|---|
{sp}

Unigram entropy of train (bytes and one end-of-sequence per line, as
stx's `unigram_entropy_bits`): {ent:.3f} bits/byte.
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pinned", required=True, help="the version the build is pinned to (README)")
    ap.add_argument("--root", help="build from this tree of .py files instead of the installed packages")
    ap.add_argument("--stamp", default="", help="written to OUT/.stamp (the caller's up-to-date key)")
    ap.add_argument("--heldout-target", type=int, default=HELDOUT_TARGET)
    ap.add_argument("--heldout-max-file", type=int, default=HELDOUT_MAX_FILE)
    ap.add_argument("--train-target", type=int, default=TRAIN_TARGET)
    a = ap.parse_args()

    if a.root:
        (sources, links), versions = tree_sources(a.root), [("tree " + a.root, a.pinned)]
    else:
        versions = [(p, subprocess.run(["dpkg-query", "-W", "-f=${Version}", p], capture_output=True,
                                       text=True).stdout.strip()) for p in PACKAGES]
        sources, links = dpkg_sources()
    log(f"reading {len(sources)} files")
    counts = collections.Counter()
    excl = collections.defaultdict(lambda: [0, 0])
    docs = []
    for rel, path, _ in sources:
        with open(path, "rb") as f:
            raw = f.read()
        counts["listed"] += 1
        counts["listed_bytes"] += len(raw)
        why = excluded(rel, raw.decode("utf-8", "replace"))
        if why is None:
            segs = segments(normalize(rel, raw))
            if not segs:
                why = "empty (no line with text)"
        if why:
            excl[why][0] += 1
            excl[why][1] += len(raw)
            continue
        docs.append((rel, segs, text_bytes(segs)))
    counts["links"] = links
    if not docs:
        die("no library file left after the exclusions")
    splits = split_files(docs, a.heldout_target, a.heldout_max_file, a.train_target)
    for s in ("train", "valid", "test"):
        if not splits[s]:
            die(f"split {s} is empty")
        log(f"{s}: {len(splits[s])} files, {sum(len(d[1]) for d in splits[s])} segments, "
            f"{sum(d[2] for d in splits[s])} bytes")
    log(f"unused: {len(splits['unused'])} files, {sum(d[2] for d in splits['unused'])} bytes")

    files = {}
    with sd.AtomicDir(a.out) as tmp:
        for s in ("train", "valid", "test"):
            segs = [seg for d in splits[s] for seg in d[1]]
            name = s + ".txt.gz"
            sd.write_lines(os.path.join(tmp, name), segs)
            text = "".join(seg + "\n" for seg in segs).encode("utf-8")
            files[name] = {"lines": len(segs), "text_bytes": len(text), "text_sha256": hashlib.sha256(text).hexdigest(),
                           "gz_bytes": os.path.getsize(os.path.join(tmp, name)),
                           "sha256": sd.sha256_file(os.path.join(tmp, name))}
            if s == "train":
                ent = unigram_entropy_bits(segs)
        with open(os.path.join(tmp, "files.tsv"), "w", encoding="utf-8") as f:
            f.write("split\tfile\tsegments\tbytes\n")
            for s in ("train", "valid", "test"):
                for rel, segs, size in splits[s]:
                    f.write(f"{s}\t{rel}\t{len(segs)}\t{size}\n")
        with open(os.path.join(tmp, "SHA256SUMS"), "w", encoding="utf-8") as f:
            for name in sorted(list(files) + ["files.tsv"]):
                f.write(f"{sd.sha256_file(os.path.join(tmp, name))}  {name}\n")
        with open(os.path.join(tmp, "README.md"), "w", encoding="utf-8") as f:
            f.write(readme(a, versions, counts, {k: tuple(v) for k, v in excl.items()}, splits, files, ent))
        with open(os.path.join(tmp, ".stamp"), "w", encoding="utf-8") as f:
            f.write(a.stamp + "\n")
    log(f"train unigram entropy {ent:.3f} bits/byte")
    log("wrote " + ", ".join(f"{n} ({f['lines']} lines, {f['text_bytes']} bytes)" for n, f in files.items()) +
        f" to {a.out}")


if __name__ == "__main__":
    main()
