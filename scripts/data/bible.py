#!/usr/bin/python3
"""Spanish-English Bible verse pairs from two SWORD modules exported with mod2imp.

usage: bible.py --es RV1909.imp --en WEB.imp --out OUTDIR --stats STATS.json [--gzip]

Joins verses by reference (book chapter:verse), strips the OSIS markup
(footnotes and non-canonical headings dropped, canonical psalm titles kept),
drops whole chapters whose verse lengths correlate poorly between the two
texts (a sign of different verse numbering), then applies the same pair
filters as the German-English corpus. Splits by chapter: chapters ranked by a
hash of their reference go to test, then valid, until each holds N_HELDOUT
verses. Writes OUTDIR/{train,valid,test}.{es,en}[.gz] in canonical order.
"""
import argparse
import math
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stxdata as sd  # noqa: E402

# A chapter is dropped as misnumbered when a verse is empty on one side only, when
# the verse lengths (chars) correlate below MIN_CHAPTER_CORR, or when shifting one
# side by 1-2 verses correlates clearly better than the given numbering (below SHIFT_CHECK_CORR).
MIN_CHAPTER_CORR = 0.3
SHIFT_CHECK_CORR = 0.7
MIN_CHAPTER_VERSES = 4      # shorter chapters: no correlation, kept if the ratio test passes
N_HELDOUT = 800             # verses per held-out split (whole chapters, so a bit more)
MAX_CHARS = 300             # longer verses are dropped (both sides), to keep training fast

_REF = re.compile(r"^\$\$\$(.+) (\d+):(\d+)$")
_NOTE = re.compile(r"<note\b[^>]*>.*?</note>", re.S)
_TITLE = re.compile(r"<title\b([^>]*)>(.*?)</title>", re.S)
_TAG = re.compile(r"<[^>]*>")
_CAPS = re.compile(r"^([¡¿\"“(]*)(\w )?([A-ZÁÉÍÓÚÑÜ])([A-ZÁÉÍÓÚÑÜ]+)\b")
_CAPS_ANY = re.compile(r"(?<![\w])([¡¿\"“(]*)()([A-ZÁÉÍÓÚÑÜ])([A-ZÁÉÍÓÚÑÜ]+)\b")


def fix_chapter_caps(s, psalm_title=False):
    """RV1909 sets the first word of a chapter in capitals: "EN el principio",
    "Y RESPONDIÓ Jehová", "Salmo de David. ESCUCHA, oh Jehová". Only that word
    is changed; emphatic capitals later in a verse ("YO SOY") stay."""
    def repl(m):
        word = m.group(3) + m.group(4).lower()
        if m.group(2):     # after a one-letter word ("Y RESPONDIÓ"): lower case
            word = word.lower()
        return m.group(1) + (m.group(2) or "") + word
    out, n = _CAPS.subn(repl, s, count=1)
    if n == 0 and psalm_title:
        out = _CAPS_ANY.sub(repl, s, count=1)
    return out


def read_imp(path):
    """{(book, chapter, verse): raw OSIS text} for verse > 0."""
    verses, ref, buf = {}, None, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("$$$"):
                if ref:
                    verses[ref] = "\n".join(buf)
                m = _REF.match(line)
                ref = (m.group(1), int(m.group(2)), int(m.group(3))) if m else None
                if ref and ref[2] == 0:
                    ref = None
                buf = []
            elif ref:
                buf.append(line)
    if ref:
        verses[ref] = "\n".join(buf)
    return verses


def osis_text(raw, fix_caps=False, psalm_title=False):
    s = raw.split("<chapter eID=")[0]   # WEB appends its glossary after Revelation 22:21
    s = _NOTE.sub(" ", s)
    s = _TITLE.sub(lambda m: (" " + m.group(2) + " ") if 'canonical="true"' in m.group(1) else " ", s)
    s = _TAG.sub("", s)      # inline markup (<w>, <q>, <l/>, <transChange>) is removed, text kept
    s = sd.normalize(s, unescape=True).replace("¶", "").strip()
    s = re.sub(r"\s+([,.;:!?])", r"\1", s)
    s = re.sub(r"\s+", " ", s).strip()
    if fix_caps:
        s = fix_chapter_caps(s, psalm_title)
    return s


def pearson(xs, ys):
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    if sxx == 0 or syy == 0:
        return 1.0
    return sxy / math.sqrt(sxx * syy)


def misnumbered(es_lens, en_lens):
    """Why a chapter's verse numbering looks different in the two texts, or None.
    es_lens/en_lens: the character lengths of the verses (0 for an empty verse)."""
    one_sided = [i for i, (a, b) in enumerate(zip(es_lens, en_lens)) if (a == 0) != (b == 0)]
    if one_sided and (one_sided[0] == 0 or one_sided[-1] == len(es_lens) - 1):
        # at the start or end of a chapter: verses moved to the next/previous chapter
        # (a one-sided verse in the middle, e.g. Acts 8:37, is just an omitted verse)
        return "verse %d empty on one side" % (one_sided[-1] + 1)
    pairs = [(a, b) for a, b in zip(es_lens, en_lens) if a and b]
    if len(pairs) < MIN_CHAPTER_VERSES:
        return None
    xs, ys = [a for a, _ in pairs], [b for _, b in pairs]
    r = pearson(xs, ys)
    if r < MIN_CHAPTER_CORR:
        return "r=%.2f" % r
    if r < SHIFT_CHECK_CORR:
        for k in (1, 2):
            if len(xs) - k >= MIN_CHAPTER_VERSES:
                rs = max(pearson(xs[k:], ys[:-k]), pearson(xs[:-k], ys[k:]))
                if rs > r + 0.05:
                    return "r=%.2f, shifted by %d r=%.2f" % (r, k, rs)
    return None


def build(es_path, en_path, out, stats_path, use_gzip=False):
    es, en = read_imp(es_path), read_imp(en_path)
    chapters = {}
    order = []
    for ref in en:           # en order is canonical; keep refs present in both
        if ref in es:
            ch = ref[:2]
            if ch not in chapters:
                chapters[ch] = []
                order.append(ch)
            chapters[ch].append(ref)
    st = {"verses_es": len(es), "verses_en": len(en), "verses_common": sum(map(len, chapters.values())),
          "chapters": len(order), "chapters_dropped_misnumbered": 0,
          "verses_dropped_misnumbered": 0, "dropped_chapters": []}
    filt = sd.PairFilter(max_chars=MAX_CHARS)
    kept = {}
    for ch in order:
        pairs = [(ref, osis_text(es[ref], fix_caps=True, psalm_title=(ref[0] == "Psalms" and ref[2] == 1)),
                  osis_text(en[ref])) for ref in chapters[ch]]
        why = misnumbered([len(p[1]) for p in pairs], [len(p[2]) for p in pairs])
        pairs = [p for p in pairs if p[1] and p[2]]
        if why:
            st["chapters_dropped_misnumbered"] += 1
            st["verses_dropped_misnumbered"] += len(pairs)
            st["dropped_chapters"].append("%s %d (%s)" % (ch[0], ch[1], why))
            continue
        good = [p for p in pairs if filt(p[1], p[2])]
        if good:
            kept[ch] = good
    st["filters"] = filt.counts
    ranked = sorted(kept, key=lambda ch: sd.hkey(ch[0], str(ch[1]), salt="bible-split"))
    split_of = {}
    for split in ("test", "valid"):
        n = 0
        while n < N_HELDOUT and ranked:
            ch = ranked.pop(0)
            split_of[ch] = split
            n += len(kept[ch])
    out_pairs = {"train": [], "valid": [], "test": []}
    for ch in order:
        if ch in kept:
            out_pairs[split_of.get(ch, "train")].extend(kept[ch])
    st["splits"] = {k: len(v) for k, v in out_pairs.items()}
    st["heldout_chapters"] = {s: sorted("%s %d" % ch for ch, v in split_of.items() if v == s)
                              for s in ("valid", "test")}
    ext = ".gz" if use_gzip else ""
    with sd.AtomicDir(out) as tmp:
        for split, pairs in out_pairs.items():
            for lang, idx in (("es", 1), ("en", 2)):
                sd.write_lines(os.path.join(tmp, "%s.%s%s" % (split, lang, ext)), [p[idx] for p in pairs])
            sd.progress("bible: %-5s %6d verse pairs" % (split, len(pairs)))
    sd.write_json(stats_path, st)
    return st


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--es", required=True)
    ap.add_argument("--en", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--stats", required=True)
    ap.add_argument("--gzip", action="store_true")
    a = ap.parse_args()
    build(a.es, a.en, a.out, a.stats, a.gzip)


if __name__ == "__main__":
    main()
