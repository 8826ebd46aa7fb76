#!/usr/bin/python3
"""Builds the German-English corpus from unpacked Debian packages.

usage: deen.py --pkgs PKGDIR --out OUTDIR --stats STATS.json [--dump DIR]

PKGDIR/<package>/ is the unpacked tree of each Debian package (usr/share/...);
`deen.py --list-packages` prints the packages it reads and the paths it needs.
Writes OUTDIR/{train,valid,test-ding,test-libreoffice}.{de,en} atomically and
a JSON file with the counts of every extraction step and filter.
"""
import argparse
import glob
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stxdata as sd  # noqa: E402

N_TEST_DING = 1500
N_TEST_LO = 1000
N_VALID = 1000
# a misaligned order-aligned page shows up as many bad length ratios
MAX_BAD_RATIO_FRACTION = 0.3


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


# --------------------------------------------------------------------------
# Ding (trans-de-en): example sentences from the dictionary slots

DING_FILE = "usr/share/trans/de-en"
_ANNOT = re.compile(r"\{[^{}]*\}|\[[^\[\]]*\]|<[^<>]*>")
_TRAIL_PAREN = re.compile(r"([.!?][\"'”’“»«]*)\s*\([^()]*\)\s*$")
_SENT_END = re.compile(r"[.!?][\"'”’“»«]*$")
_PLACEHOLDER = re.compile(r"\b(etw|jdn|jdm|jds|jd|sth|sb|sb's|so)\.(?!\w)")
_ALT = re.compile(r"\s*;\s*")


def _ding_clean(slot):
    s = sd.normalize(_ANNOT.sub(" ", slot), unescape=True)
    return re.sub(r"\s+([.,;:!?])", r"\1", s)     # "rich [coll.]." -> "rich ."  -> "rich."


def _is_sentence(s):
    return len(s.split()) >= 3 and s[:1].isupper() and bool(_SENT_END.search(s))


def ding_sentence_pair(de_slot, en_slot, st):
    """(de, en) from one pair of Ding slots, or None (reason counted in st)."""
    de, en = _ding_clean(de_slot), _ding_clean(en_slot)
    # alternatives separated by ';': keep the first on each side
    de, en = _ALT.split(de)[0], _ALT.split(en)[0]
    # explanatory remark after the sentence: "Nichts zu danken! (Antwort ...)"
    de, en = _TRAIL_PAREN.sub(r"\1", de).strip(), _TRAIL_PAREN.sub(r"\1", en).strip()
    if not (_is_sentence(de) and _is_sentence(en)):
        st["not_sentence"] += 1
        return None
    both = de + " " + en
    if "…" in both or "..." in both:
        st["ellipsis"] += 1
        return None
    if "/" in both:
        st["slash_alternatives"] += 1
        return None
    if _PLACEHOLDER.search(both):
        st["placeholder"] += 1
        return None
    if "(" in both or ")" in both:
        st["parenthesized_optional"] += 1
        return None
    st["sentences"] += 1
    return de, en


def ding_pairs(roots, st):
    st.update(lines=0, slot_count_mismatch=0, slots=0, not_sentence=0, ellipsis=0,
              slash_alternatives=0, placeholder=0, parenthesized_optional=0, sentences=0)
    with open(os.path.join(roots["trans-de-en"], DING_FILE), encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or " :: " not in line:
                continue
            st["lines"] += 1
            de, en = line.rstrip("\n").split(" :: ", 1)
            ds, es = de.split(" | "), en.split(" | ")
            if len(ds) != len(es):
                st["slot_count_mismatch"] += 1
                continue
            for d, e in zip(ds, es):
                st["slots"] += 1
                p = ding_sentence_pair(d, e, st)
                if p:
                    yield p


# --------------------------------------------------------------------------
# LibreOffice help: <p id="par_id…">/<hN id="hd_id…"> with the same id in both

LO_DIR = "usr/share/libreoffice/help"


def align_by_id(en_items, de_items):
    """Pairs items with equal (id, occurrence) keys; returns ([(de, en)], unmatched)."""
    def keyed(items):
        seen, out = {}, {}
        for eid, text in items:
            k = seen.get(eid, 0)
            seen[eid] = k + 1
            out[(eid, k)] = text
        return out
    de = keyed(de_items)
    pairs, unmatched = [], 0
    for k, text in keyed(en_items).items():
        if k in de:
            pairs.append((de[k], text))
        else:
            unmatched += 1
    return pairs, unmatched


def libreoffice_pairs(roots, st):
    st.update(files=0, files_missing_de=0, paragraphs_en=0, matched=0, unmatched=0)
    en_root = os.path.join(roots["libreoffice-help-en-us"], LO_DIR, "en-US")
    de_root = os.path.join(roots["libreoffice-help-de"], LO_DIR, "de")
    for path in sorted(glob.glob(os.path.join(en_root, "text", "**", "*.html"), recursive=True)):
        rel = os.path.relpath(path, en_root)
        dpath = os.path.join(de_root, rel)
        if not os.path.exists(dpath):
            st["files_missing_de"] += 1
            continue
        st["files"] += 1
        en_items = sd.id_texts(read(path))
        pairs, unmatched = align_by_id(en_items, sd.id_texts(read(dpath)))
        st["paragraphs_en"] += len(en_items)
        st["matched"] += len(pairs)
        st["unmatched"] += unmatched
        yield from pairs


# --------------------------------------------------------------------------
# order-aligned documentation: same page in both languages, same block count

def align_by_order(en_blocks, de_blocks):
    """[(de, en)] when the two pages have the same block structure, else None."""
    if len(en_blocks) != len(de_blocks) or not en_blocks:
        return None
    pairs = list(zip(de_blocks, en_blocks))
    bad = sum(1 for d, e in pairs if sd.has_letter(d) and sd.has_letter(e) and
              not (sd.RATIO_MIN <= len(d) / len(e) <= sd.RATIO_MAX))
    if bad > MAX_BAD_RATIO_FRACTION * len(pairs):
        return None
    return pairs


def ordered_doc_pairs(file_pairs, st):
    st.update(files=0, files_aligned=0, files_misaligned=0, blocks=0, incomplete_link_text=0)
    for en_path, de_path in file_pairs:
        if not os.path.exists(de_path):
            continue
        st["files"] += 1
        pairs = align_by_order(sd.block_texts(read(en_path)), sd.block_texts(read(de_path)))
        if pairs is None:
            st["files_misaligned"] += 1
            continue
        st["files_aligned"] += 1
        st["blocks"] += len(pairs)
        for de, en in pairs:
            if sd.INCOMPLETE in de or sd.INCOMPLETE in en:
                st["incomplete_link_text"] += 1
            else:
                yield de, en


def gimp_pairs(roots, st):
    en = os.path.join(roots["gimp-help-en"], "usr/share/gimp/2.0/help/en")
    de = os.path.join(roots["gimp-help-de"], "usr/share/gimp/2.0/help/de")
    files = sorted(glob.glob(os.path.join(en, "*.html")))
    return ordered_doc_pairs(((p, os.path.join(de, os.path.basename(p))) for p in files), st)


def debian_reference_pairs(roots, st):
    en = os.path.join(roots["debian-reference-en"], "usr/share/debian-reference")
    de = os.path.join(roots["debian-reference-de"], "usr/share/debian-reference")
    files = sorted(glob.glob(os.path.join(en, "*.en.html")))
    return ordered_doc_pairs(((p, os.path.join(de, os.path.basename(p)[:-len(".en.html")] + ".de.html"))
                              for p in files), st)


def debian_handbook_pairs(roots, st):
    base = os.path.join(roots["debian-handbook"], "usr/share/doc/debian-handbook/html")
    files = sorted(glob.glob(os.path.join(base, "en-US", "*.html")))
    return ordered_doc_pairs(((p, os.path.join(base, "de-DE", os.path.basename(p))) for p in files), st)


def gnome_help_pairs(roots, st):
    base = os.path.join(roots["gnome-user-docs"], "usr/share/help")
    files = sorted(glob.glob(os.path.join(base, "C", "*", "*.page")))
    return ordered_doc_pairs(((p, os.path.join(base, "de", os.path.relpath(p, os.path.join(base, "C"))))
                              for p in files), st)


# name -> (Debian packages, extractor); the order is the order of the report
SOURCES = [
    ("ding", ["trans-de-en"], ding_pairs),
    ("libreoffice", ["libreoffice-help-en-us", "libreoffice-help-de"], libreoffice_pairs),
    ("gimp", ["gimp-help-en", "gimp-help-de"], gimp_pairs),
    ("debian-reference", ["debian-reference-en", "debian-reference-de"], debian_reference_pairs),
    ("debian-handbook", ["debian-handbook"], debian_handbook_pairs),
    ("gnome-help", ["gnome-user-docs"], gnome_help_pairs),
]
PACKAGES = [p for _, pkgs, _ in SOURCES for p in pkgs]
# what fetch-data.sh unpacks of each package (unpack.py patterns; `*` matches `/` too)
UNPACK = {
    "trans-de-en": ["usr/share/trans/de-en"],
    "libreoffice-help-en-us": ["usr/share/libreoffice/help/en-US/text/*.html"],
    "libreoffice-help-de": ["usr/share/libreoffice/help/de/text/*.html"],
    "gimp-help-en": ["usr/share/gimp/2.0/help/en/*.html"],
    "gimp-help-de": ["usr/share/gimp/2.0/help/de/*.html"],
    "debian-reference-en": ["usr/share/debian-reference/*.en.html"],
    "debian-reference-de": ["usr/share/debian-reference/*.de.html"],
    "debian-handbook": ["usr/share/doc/debian-handbook/html/en-US/*.html",
                        "usr/share/doc/debian-handbook/html/de-DE/*.html"],
    "gnome-user-docs": ["usr/share/help/C/*.page", "usr/share/help/de/*.page"],
}


def side_key(s):
    return " ".join(sd.tokens(s))


def build(pkgdir, out, stats_path, sources=None, dump=None):
    stats = {"filters": {}, "extract": {}, "splits": {}, "max_chars": sd.MAX_CHARS}
    seen = set()
    by_source = {}
    for name, pkgs, fn in SOURCES:
        if sources and name not in sources:
            continue
        roots = {p: os.path.join(pkgdir, p) for p in pkgs}
        missing = [p for p, r in roots.items() if not os.path.isdir(r)]
        if missing:
            sd.progress("deen: %s skipped, package(s) not unpacked: %s" % (name, " ".join(missing)))
            continue
        st = {}
        filt = sd.PairFilter()
        filt.seen = seen          # duplicates are removed across sources too
        kept = []
        for de, en in fn(roots, st):
            de, en = sd.normalize(de), sd.normalize(en)
            if filt(de, en):
                kept.append((de, en))
        by_source[name] = kept
        if dump:  # per-source TSV for reading by eye
            os.makedirs(dump, exist_ok=True)
            sd.write_lines(os.path.join(dump, name + ".tsv"), ["%s\t%s" % p for p in kept])
        stats["extract"][name] = st
        stats["filters"][name] = filt.counts
        sd.progress("deen: %-17s %6d pairs kept of %6d extracted" % (name, len(kept), filt.counts["input"]))

    key = lambda salt: (lambda p: sd.hkey(p[0], p[1], salt=salt))
    test_ding, rest_ding = sd.take_lowest(by_source.get("ding", []), N_TEST_DING, key("test"))
    test_lo, rest_lo = sd.take_lowest(by_source.get("libreoffice", []), N_TEST_LO, key("test"))
    pool = [(n, p) for n in by_source for p in
            (rest_ding if n == "ding" else rest_lo if n == "libreoffice" else by_source[n])]
    ranked = sorted(pool, key=lambda np: sd.hkey(np[1][0], np[1][1], salt="valid"))
    valid, train = ranked[:N_VALID], ranked[N_VALID:]

    held = set()
    for de, en in test_ding + test_lo + [p for _, p in valid]:
        held.add(("de", side_key(de)))
        held.add(("en", side_key(en)))
    overlap = {}
    train_kept = []
    for n, (de, en) in train:
        if ("de", side_key(de)) in held or ("en", side_key(en)) in held:
            overlap[n] = overlap.get(n, 0) + 1
        else:
            train_kept.append((n, (de, en)))
    train_kept.sort(key=lambda np: sd.hkey(np[1][0], np[1][1], salt="order"))

    def per_source(items):
        c = {}
        for n, _ in items:
            c[n] = c.get(n, 0) + 1
        return c

    stats["splits"] = {
        "train": per_source(train_kept),
        "valid": per_source(valid),
        "test-ding": {"ding": len(test_ding)},
        "test-libreoffice": {"libreoffice": len(test_lo)},
        "train_dropped_heldout_overlap": overlap,
    }
    with sd.AtomicDir(out) as tmp:
        for split, pairs in (("train", [p for _, p in train_kept]), ("valid", [p for _, p in valid]),
                             ("test-ding", test_ding), ("test-libreoffice", test_lo)):
            sd.write_lines(os.path.join(tmp, split + ".de"), [d for d, _ in pairs])
            sd.write_lines(os.path.join(tmp, split + ".en"), [e for _, e in pairs])
            sd.progress("deen: %-17s %6d pairs" % (split, len(pairs)))
    sd.write_json(stats_path, stats)
    return stats


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pkgs", required=True, help="directory with one unpacked tree per package")
    ap.add_argument("--out", required=True)
    ap.add_argument("--stats", required=True)
    ap.add_argument("--sources", nargs="*")
    ap.add_argument("--dump", help="also write DIR/SOURCE.tsv of the kept pairs (debugging)")
    a = ap.parse_args()
    build(a.pkgs, a.out, a.stats, a.sources, a.dump)


if __name__ == "__main__":
    if sys.argv[1:] == ["--list-packages"]:   # NAME PATTERN... per line, for fetch-data.sh
        for p in PACKAGES:
            print(p, *UNPACK[p])
    else:
        main()
