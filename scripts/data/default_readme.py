#!/usr/bin/python3
"""Writes data/default/README.md and SHA256SUMS (called by build-default.sh)."""
import argparse
import gzip
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stxdata as sd  # noqa: E402


def conf_field(path, key):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.startswith(key + "="):
                return line.split("=", 1)[1].strip()
    return "?"


def gz_lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return f.read().splitlines()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", required=True)
    ap.add_argument("--bible-stats", required=True)
    ap.add_argument("--moby-stats", required=True)
    ap.add_argument("--debs", nargs="+", required=True)
    ap.add_argument("--sword-conf", nargs=2, required=True)
    ap.add_argument("--npm", required=True)
    ap.add_argument("--mod2imp", default="mod2imp")
    a = ap.parse_args()
    with open(a.bible_stats) as f:
        bs = json.load(f)
    with open(a.moby_stats) as f:
        ms = json.load(f)["sources"]["moby-dick"]
    with open(a.npm) as f:
        npm = json.load(f)
    debs = []
    for d in a.debs:
        out = subprocess.run(["dpkg-deb", "-f", d, "Package", "Version"], capture_output=True,
                             text=True, check=True).stdout.split("\n")
        debs.append((out[0].split(": ", 1)[1], out[1].split(": ", 1)[1], sd.sha256_file(d)))
    es_conf, en_conf = a.sword_conf

    rows, sums, total = [], [], 0
    for sub in ("bible-es-en", "moby-dick"):
        for name in sorted(os.listdir(os.path.join(a.dir, sub))):
            rel = sub + "/" + name
            path = os.path.join(a.dir, rel)
            h = sd.sha256_file(path)
            n = len(gz_lines(path))
            size = os.path.getsize(path)
            total += size
            rows.append("| `%s` | %d | %d | `%s` |" % (rel, n, size, h))
            sums.append("%s  %s" % (h, rel))
    with open(os.path.join(a.dir, "SHA256SUMS"), "w") as f:
        f.write("\n".join(sums) + "\n")

    es_test = gz_lines(os.path.join(a.dir, "bible-es-en", "test.es.gz"))
    en_test = gz_lines(os.path.join(a.dir, "bible-es-en", "test.en.gz"))
    samples = "\n".join("| %s | %s |" % (es_test[i], en_test[i]) for i in (0, 100, 400))
    flt = bs["filters"]
    text = f"""# data/default: embedded public-domain corpora

Small corpora committed to the repository so that `make demo` (and the tests) can
train with no download at all. Everything here is in the public domain. The large
German-English and English corpora are built at setup time by `scripts/fetch-data.sh`
instead (see `docs/data.md`).

Format: gzip (zlib-readable) UTF-8 text, `\\n` line ends, one segment per line. In
`bible-es-en/` the `.es` and `.en` files of a split are line-aligned (line *i* of one
is the translation of line *i* of the other). In `moby-dick/` one line is one paragraph.

## Files ({total} bytes compressed in all)

| file | lines | bytes | sha256 |
|---|---|---|---|
{chr(10).join(rows)}

`SHA256SUMS` holds the same checksums (`cd data/default && sha256sum -c SHA256SUMS`).

## bible-es-en: Spanish-English Bible verse pairs

- Spanish: *Reina-Valera 1909* (SWORD module `spaRV1909eb` {conf_field(es_conf, "Version")},
  Debian `sword-text-sparv`), public domain.
- English: *World English Bible* (SWORD module `engWEB2015eb` {conf_field(en_conf, "Version")},
  Debian `sword-text-web`), public domain. Footnotes and section headings are removed and
  some verses dropped: as the WEB's authors ask of changed copies, call this derived text
  "derived from the World English Bible", not "the World English Bible".
- Exported with `mod2imp` ({a.mod2imp}); joined by verse reference (book chapter:verse, KJV
  numbering for RV1909, NRSVA for the WEB; only references present in both are used).
- Markup: OSIS tags stripped; `<note>` (footnotes) and non-canonical `<title>` removed,
  canonical psalm titles kept (RV1909 has them in verse 1 too); RV1909's all-capitals
  first word of a chapter ("EN el principio") is set in normal case.
- Chapters numbered differently in the two texts are dropped whole: a verse empty on one
  side at the start/end of a chapter, verse-length correlation r < 0.3, or a 1-2 verse
  shift correlating clearly better (r < 0.7). Dropped: {bs["chapters_dropped_misnumbered"]}
  of {bs["chapters"]} chapters, {bs["verses_dropped_misnumbered"]} of {bs["verses_common"]} verses:
  {", ".join(bs["dropped_chapters"])}.
- Pair filters (same as the German-English corpus, but 300 characters at most):
  {flt["input"]} pairs in, empty {flt["empty"]}, longer than 300 characters {flt["too_long"]},
  length ratio outside 0.4-2.5 {flt["length_ratio"]}, untranslated {flt["untranslated"]},
  duplicates {flt["duplicate"]}; {flt["kept"]} kept.
- Split by chapter (no verse of a held-out chapter is in train): chapters ranked by
  sha256 of their reference; test, then valid take whole chapters until each has 800
  verses. train {bs["splits"]["train"]}, valid {bs["splits"]["valid"]}, test {bs["splits"]["test"]} pairs,
  in canonical order (shuffle when training).
  - valid chapters: {", ".join(bs["heldout_chapters"]["valid"])}
  - test chapters: {", ".join(bs["heldout_chapters"]["test"])}

| es (test) | en (test) |
|---|---|
{samples}

## moby-dick: English paragraphs

Herman Melville, *Moby-Dick* (1851), public domain; from npm `{npm["name"]}` {npm["version"]}
(data PDDL-1.0 / CC0-1.0), `package/data/chapter_N.txt` only (`data.txt` repeats the book).
One paragraph per line ({ms["documents"]} chapters). Split by chapter, ranked by hash:
test chapters {", ".join(ms["test_documents"])}; valid chapters {", ".join(ms["valid_documents"])};
paragraphs train {ms["train"]}, valid {ms["valid"]}, test {ms["test"]}.

## Rebuilding

```
sudo apt-get install libsword-utils     # mod2imp (build-default.sh does it when run as root)
scripts/data/build-default.sh           # writes data/default/ and this README
```

Packages used for this build:

| package | version | sha256 of the .deb |
|---|---|---|
{chr(10).join("| %s | %s | `%s` |" % d for d in debs)}
| npm {npm["name"]} | {npm["version"]} | |
"""
    with open(os.path.join(a.dir, "README.md"), "w", encoding="utf-8") as f:
        f.write(text)


if __name__ == "__main__":
    main()
