"""The Python standard library corpus (docs/data.md §5, scripts/data/build-python-corpus.sh): the
builder's rules on a small tree written here (exclusions, normalization, segments, splits), two
builds of the installed, pinned packages byte-identical with disjoint splits, the up-to-date
check, the same pin in scripts/setup.sh, and stx training on it by name through
configs/atlas-python.yaml. The parts that need the pinned Debian version print SKIP with the
reason on a machine with another. Run: python3 tests/cli/test_python_corpus.py build/stx"""
import filecmp
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
from checks import ROOT, Checks, run_stx  # noqa: E402

STX = os.path.abspath(sys.argv[1])
DATA = os.path.join(ROOT, "scripts", "data")
BUILD = os.path.join(DATA, "build-python-corpus.sh")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
check = Checks()


def lines(path):
    with gzip.open(path, "rb") as f:
        return f.read().decode("utf-8").split("\n")[:-1]


def files_tsv(d):
    """{split: [source file, …]} of d/files.tsv."""
    out = {}
    with open(os.path.join(d, "files.tsv"), encoding="utf-8") as f:
        next(f)
        for row in f:
            split, rel = row.split("\t")[:2]
            out.setdefault(split, []).append(rel)
    return out


def same_tree(a, b):
    """Every file of a and b (dot files included) present in both, byte for byte."""
    names = sorted(os.listdir(a))
    return names == sorted(os.listdir(b)) and all(filecmp.cmp(os.path.join(a, n), os.path.join(b, n), shallow=False)
                                                  for n in names)


def disjoint(splits):
    seen = [rel for s in ("train", "valid", "test") for rel in splits.get(s, [])]
    return len(seen) == len(set(seen))


def tree_part(tmp):
    """The builder on a tree of known files (no dpkg): what is excluded, the exact segments."""
    src = os.path.join(tmp, "tree")
    files = {
        # blocks of 30, 40 and 250 bytes: the first two joined (under 200 bytes), the third closes it
        "pkg/mod.py": "import os\t# a tab\nx = 1   \n\n\n\fdef f():\n    return 'f' * 30\n\n" +
                      "\n".join("y%02d = %s" % (i, "1" * 20) for i in range(10)) + "\n\nz = 2\n",
        "pkg/__init__.py": "\n\n",
        "other.py": "\"\"\"Docstring.\"\"\"\n\nA = 'é'\n",
        "pkg/tests/test_mod.py": "assert True\n",
        "test/regrtest.py": "main()\n",
        "pydoc_data/topics.py": "topics = {}\n",
        "encodings/cp000.py": "decoding_table = ('\\x00')\n",
        "encodings/utf_0.py": "import codecs\n",
        "_sysconfigdata__linux.py": "build_time_vars = {}\n",
    }
    for rel, text in files.items():
        os.makedirs(os.path.dirname(os.path.join(src, rel)), exist_ok=True)
        with open(os.path.join(src, rel), "w", encoding="utf-8") as f:
            f.write(text)
    outs = []
    for n in (1, 2):
        out = os.path.join(tmp, f"tree-out{n}")
        r = subprocess.run([PY, os.path.join(DATA, "python_stdlib.py"), "--out", out, "--root", src, "--pinned", "t",
                            "--heldout-target", "1", "--heldout-max-file", "30", "--train-target", "100000"],
                           capture_output=True, text=True, timeout=60)
        if not check(f"tree build {n} exits 0", r.returncode == 0, r.stdout + r.stderr):
            return
        outs.append(out)
    check("tree: two builds byte-identical", same_tree(*outs), str(os.listdir(outs[0])))
    splits = files_tsv(outs[0])
    used = sorted(rel for s in splits.values() for rel in s)
    check("tree: tests, pydoc_data, codec tables, _sysconfigdata and empty files excluded",
          used == ["encodings/utf_0.py", "other.py", "pkg/mod.py"], str(used))
    check("tree: splits disjoint, a file over --heldout-max-file bytes in train",
          disjoint(splits) and "pkg/mod.py" in splits.get("train", []) and splits.get("test"), str(splits))
    text = [l for s in ("train", "valid", "test") for l in lines(os.path.join(outs[0], s + ".txt.gz"))]
    block3 = "\v".join("y%02d = %s" % (i, "1" * 20) for i in range(10))
    want = ["import os\t# a tab".expandtabs(8) + "\vx = 1\v\v\vdef f():\v    return 'f' * 30\v\v" + block3, "z = 2"]
    check("tree: segments = blank-line blocks joined up to 200 bytes, \\v for a line break, tabs "
          "expanded, form feeds and trailing spaces removed", all(w in text for w in want), repr(text))
    with open(os.path.join(outs[0], "README.md"), encoding="utf-8") as f:
        readme = f.read()
    check("tree: README names the unigram entropy", re.search(r"\d\.\d{3} bits/byte", readme) is not None)


def pinned_versions():
    with open(BUILD, encoding="utf-8") as f:
        pin = re.search(r"^PINNED=(\S+)$", f.read(), re.M).group(1)
    with open(os.path.join(ROOT, "scripts", "setup.sh"), encoding="utf-8") as f:
        setup = re.search(r"^PINNED=\((.*)\)$", f.read(), re.M).group(1).split()
    return pin, setup


def other_version_part(tmp):
    """A pin that is not installed: exit 2, one line naming both versions, nothing written."""
    copy = os.path.join(tmp, "scripts", "data")
    shutil.copytree(DATA, copy)
    with open(BUILD, encoding="utf-8") as f:
        script = re.sub(r"^PINNED=\S+$", "PINNED=0.0-not-this", f.read(), flags=re.M)
    with open(os.path.join(copy, "build-python-corpus.sh"), "w", encoding="utf-8") as f:
        f.write(script)
    out = os.path.join(tmp, "other")
    r = subprocess.run(["bash", os.path.join(copy, "build-python-corpus.sh"), "--out", out], capture_output=True,
                       text=True, timeout=60)
    check("another installed version: exit 2, one line naming the pin and what is installed, nothing written",
          r.returncode == 2 and "pinned to 0.0-not-this, installed:" in r.stderr and
          len(r.stderr.strip().splitlines()) == 1 and not os.path.exists(out), r.stderr)


def real_part(tmp):
    """Two builds of the installed packages: identical, disjoint, up to date after."""
    pin, _ = pinned_versions()
    have = subprocess.run(["dpkg-query", "-W", "-f=${Version}", "libpython3.11-stdlib"], capture_output=True,
                          text=True).stdout.strip()
    if have != pin:
        print(f"SKIP: the real build: libpython3.11-stdlib is {have or 'not installed'}, pinned {pin}")
        return
    outs = []
    for n in (1, 2):
        out = os.path.join(tmp, f"real{n}")
        r = subprocess.run(["bash", BUILD, "--out", out], capture_output=True, text=True, timeout=120)
        if not check(f"build {n} of the installed packages exits 0", r.returncode == 0, r.stdout + r.stderr):
            return
        outs.append(out)
    check("two builds byte-identical", same_tree(*outs), str(os.listdir(outs[0])))
    splits = files_tsv(outs[0])
    check("splits disjoint by source file", disjoint(splits), "")
    ok = subprocess.run(["sha256sum", "--quiet", "-c", "SHA256SUMS"], cwd=outs[0], capture_output=True)
    check("SHA256SUMS verifies", ok.returncode == 0, ok.stdout)
    size = {s: os.path.getsize(os.path.join(outs[0], s + ".txt.gz")) for s in ("train", "valid", "test")}
    segs = {s: lines(os.path.join(outs[0], s + ".txt.gz")) for s in ("train", "valid", "test")}
    text = {s: sum(len(l.encode()) + 1 for l in v) for s, v in segs.items()}
    share = {s: text[s] / sum(text.values()) for s in text}
    check("sizes: train 1.5-3 MB of text, valid and test 4-7 % each",
          1.5e6 <= text["train"] <= 3e6 and all(0.04 <= share[s] <= 0.07 for s in ("valid", "test")), str(text))
    bad = [l[:60] for v in segs.values() for l in v if not l.strip() or l.startswith("\v") or l.endswith("\v")]
    check("every line a segment: not blank, no separator at either end", not bad, repr(bad[:3]))
    r = subprocess.run(["bash", BUILD, "--out", outs[0]], capture_output=True, text=True)
    check("a second run says up to date", r.returncode == 0 and "up to date" in r.stdout, r.stdout + r.stderr)
    with open(os.path.join(outs[0], "test.txt.gz"), "ab") as f:
        f.write(b"x")
    r = subprocess.run(["bash", BUILD, "--out", outs[0]], capture_output=True, text=True)
    check("a damaged file is rebuilt", r.returncode == 0 and "wrote" in r.stdout and
          os.path.getsize(os.path.join(outs[0], "test.txt.gz")) == size["test"], r.stdout + r.stderr)


def train_part():
    """configs/atlas-python.yaml names the corpus that scripts/setup.sh built."""
    if not os.path.isdir(os.path.join(ROOT, "data", "cache", "python-stdlib")):
        print("SKIP: stx on data.corpus python-stdlib: data/cache/python-stdlib not built (scripts/setup.sh)")
        return
    with tempfile.TemporaryDirectory() as run:
        r = run_stx(STX, ["train", "--config", os.path.join(ROOT, "configs", "atlas-python.yaml"), "--set",
                          "train.max_steps=2", "--set", "train.warmup_steps=1", "--set", "train.eval_every=2",
                          "--set", "train.log_every=1", "--set", "train.valid_sentences=8", "--out", run],
                    timeout=300)
        check("stx train --config configs/atlas-python.yaml runs", r.returncode == 0 and
              re.search(r"data: \d+ train examples", r.stderr) is not None, r.stdout[-500:] + r.stderr[-1500:])


def main():
    pin, setup = pinned_versions()
    check("scripts/setup.sh pins both packages at the builder's version",
          sorted(setup) == [f"libpython3.11-minimal={pin}", f"libpython3.11-stdlib={pin}"], f"{setup} vs {pin}")
    with tempfile.TemporaryDirectory() as tmp:
        tree_part(tmp)
        other_version_part(tmp)
        real_part(tmp)
    train_part()
    check.finish()


if __name__ == "__main__":
    main()
