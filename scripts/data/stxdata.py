"""Shared helpers for the stx data pipeline (standard library only).

Text normalization, HTML text extraction (by element id and by block order),
pair filters, deterministic hash splits and atomic file writing. Used by
deen.py, lm.py, bible.py and selftest.py; run with /usr/bin/python3.
"""
import gzip
import hashlib
import html
import html.parser
import json
import os
import re
import shutil
import unicodedata

# --------------------------------------------------------------------------
# normalization

_ZERO_WIDTH = dict.fromkeys(map(ord, "\u00ad\u200b\u200c\u200d\u2060\ufeff"), None)
_WS = re.compile(r"\s+")


def normalize(text, unescape=False):
    """NFC, entities decoded (if unescape), control/odd spaces -> ' ', collapsed."""
    if unescape:
        text = html.unescape(text)
    text = unicodedata.normalize("NFC", text).translate(_ZERO_WIDTH)
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat in ("Zs", "Zl", "Zp") or (cat[0] == "C" and ch not in "\t\n\r" and cat != "Co"):
            out.append(" ")
        else:
            out.append(ch)
    return _WS.sub(" ", "".join(out)).strip()


_WORD = re.compile(r"\w+", re.UNICODE)


def tokens(text):
    return _WORD.findall(text.casefold())


def has_letter(text):
    return any(ch.isalpha() for ch in text)


# --------------------------------------------------------------------------
# HTML extraction

VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
        "param", "source", "track", "wbr"}
SKIP_TAGS = {"script", "style", "pre", "head", "noscript", "textarea", "svg",
             # Mallard (GNOME help): metadata, code blocks, media fallbacks
             "credit", "mal:credit", "revision", "comment", "media", "screen", "its:rules"}


class IdTextExtractor(html.parser.HTMLParser):
    """Collects the text of every <p>/<hN> element whose id matches `id_re`.

    Elements listed in SKIP_TAGS are dropped, and so are hidden="true" variant
    spans (LibreOffice's switchinline: MAC/WRITER/CALC...) except the "default"
    one; <br> becomes a space. Returns [(id, text)] in document order.
    """

    def __init__(self, id_re=r"^(par|hd)_id", tags=("p", "h1", "h2", "h3", "h4", "h5", "h6")):
        super().__init__(convert_charrefs=True)
        self.id_re = re.compile(id_re)
        self.tags = set(tags)
        self.items = []
        self.cur = None          # [id, tag, depth_of_same_tag, parts]
        self.skip = 0            # depth inside skipped subtrees
        self.stack = []          # open tags (non-void) with skip flag

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            if tag == "br" and self.cur is not None and not self.skip:
                self.cur[3].append(" ")
            return
        a = dict(attrs)
        skip = tag in SKIP_TAGS or (a.get("hidden") == "true" and
                                    not (a.get("id") or "").startswith("default"))
        if self.cur is not None and tag == self.cur[1]:
            if tag == "p" and self.id_re.search(a.get("id") or ""):
                self._close()    # unclosed <p> followed by a new one
            else:
                self.cur[2] += 1
        self.stack.append((tag, skip))
        if skip:
            self.skip += 1
            return
        if self.cur is None and tag in self.tags and not self.skip:
            eid = a.get("id") or ""
            if self.id_re.search(eid):
                self.cur = [eid, tag, 0, []]

    def handle_startendtag(self, tag, attrs):
        if tag == "br" and self.cur is not None and not self.skip:
            self.cur[3].append(" ")

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        # pop to the matching open tag (tolerates unclosed inline tags)
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                for t, s in self.stack[i:]:
                    if s:
                        self.skip -= 1
                del self.stack[i:]
                break
        if self.cur is not None and tag == self.cur[1]:
            if self.cur[2] == 0:
                self._close()
            else:
                self.cur[2] -= 1

    def handle_data(self, data):
        if self.cur is not None and not self.skip:
            self.cur[3].append(data)

    def _close(self):
        self.items.append((self.cur[0], normalize("".join(self.cur[3]))))
        self.cur = None

    def close(self):
        super().close()
        if self.cur is not None:
            self._close()


def id_texts(markup, **kw):
    p = IdTextExtractor(**kw)
    p.feed(markup)
    p.close()
    return p.items


BLOCK_TAGS = {"p", "h1", "h2", "h3", "h4", "h5", "h6", "dt", "dd", "li", "td", "th", "div",
              "title", "caption", "blockquote", "tr", "table", "ul", "ol", "dl", "body",
              "section", "figure", "figcaption", "thead", "tbody", "html",
              # Mallard
              "page", "desc", "item", "list", "steps", "terms", "tree", "note", "info",
              "links", "example", "quote", "synopsis", "subtitle", "listing", "cite"}
SKIP_CLASSES = {"navheader", "navfooter", "toc", "list-of-figures", "list-of-tables",
                "list-of-examples", "indexterm", "footnotes", "programlisting", "screen",
                "literallayout", "synopsis", "cmdsynopsis", "funcsynopsis", "docnav"}


INCOMPLETE = "\ue000"   # private-use mark for text a renderer would generate


class BlockTextExtractor(html.parser.HTMLParser):
    """Splits a page into block-level text segments, in document order.

    Every start/end of a block tag ends the current segment; inline tags are
    transparent. Skips <head>, scripts, <pre>/<code> and DocBook navigation,
    tables of contents and program listings. Used for order alignment of two
    translations of the same page.
    """

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.segs = []
        self.parts = []
        self.skip = 0
        self.stack = []

    def _flush(self):
        if self.parts:
            t = normalize("".join(self.parts))
            if t:
                self.segs.append(t)
            self.parts = []

    def handle_starttag(self, tag, attrs):
        if tag in VOID:
            if tag == "br":
                self.parts.append(" ")
            return
        a = dict(attrs)
        cls = set((a.get("class") or "").split())
        skip = tag in SKIP_TAGS or bool(cls & SKIP_CLASSES)
        self.stack.append((tag, skip))
        if skip:
            self.skip += 1
        if tag in BLOCK_TAGS and not self.skip:
            self._flush()
        elif skip and self.skip == 1:
            self._flush()

    def handle_startendtag(self, tag, attrs):
        if tag == "br":
            self.parts.append(" ")
        elif tag == "link" and not self.skip and any(k == "xref" for k, _ in attrs):
            # Mallard <link xref="page"/>: the renderer fills in the target's title, which
            # we do not have -> mark the segment incomplete ("see ."); callers drop it
            self.parts.append(INCOMPLETE)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        for i in range(len(self.stack) - 1, -1, -1):
            if self.stack[i][0] == tag:
                for t, s in self.stack[i:]:
                    if s:
                        self.skip -= 1
                del self.stack[i:]
                break
        if tag in BLOCK_TAGS and not self.skip:
            self._flush()

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)

    def close(self):
        super().close()
        self._flush()


def block_texts(markup):
    p = BlockTextExtractor()
    p.feed(markup)
    p.close()
    return p.segs


def strip_tags(markup):
    """Plain text of an inline markup fragment (tags dropped, entities decoded)."""
    return normalize(html.unescape(re.sub(r"<[^>]*>", " ", markup)))


# --------------------------------------------------------------------------
# pair filters

MAX_CHARS = 250          # segments longer than this (either side) are dropped
RATIO_MIN, RATIO_MAX = 0.4, 2.5
JACCARD_MAX, JACCARD_MIN_TOKENS = 0.5, 5

FILTERS = ("empty", "too_long", "length_ratio", "untranslated", "duplicate")


def jaccard(a, b):
    sa, sb = set(tokens(a)), set(tokens(b))
    if not sa and not sb:
        return 1.0
    return len(sa & sb) / len(sa | sb)


def pair_problem(src, tgt, max_chars=MAX_CHARS):
    """Name of the first filter a (normalized) pair fails, or None."""
    if not src or not tgt or not has_letter(src) or not has_letter(tgt):
        return "empty"
    if len(src) > max_chars or len(tgt) > max_chars:
        return "too_long"
    r = len(src) / len(tgt)
    if r < RATIO_MIN or r > RATIO_MAX:
        return "length_ratio"
    if src.casefold() == tgt.casefold():
        return "untranslated"
    ts, tt = tokens(src), tokens(tgt)
    if min(len(ts), len(tt)) >= JACCARD_MIN_TOKENS and jaccard(src, tgt) > JACCARD_MAX:
        return "untranslated"
    return None


class PairFilter:
    """Applies pair_problem plus exact-duplicate removal; counts drops by reason."""

    def __init__(self, max_chars=MAX_CHARS):
        self.max_chars = max_chars
        self.seen = set()
        self.counts = {"input": 0, **{k: 0 for k in FILTERS}, "kept": 0}

    def __call__(self, src, tgt):
        self.counts["input"] += 1
        why = pair_problem(src, tgt, self.max_chars)
        if why is None:
            key = (src, tgt)
            if key in self.seen:
                why = "duplicate"
            else:
                self.seen.add(key)
        if why is None:
            self.counts["kept"] += 1
            return True
        self.counts[why] += 1
        return False


# --------------------------------------------------------------------------
# deterministic splits

def hkey(*parts, salt=""):
    """64-bit integer from sha256 of the parts: a stable, RNG-free order."""
    h = hashlib.sha256((salt + "\x1f" + "\x1e".join(parts)).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big")


def take_lowest(items, n, key):
    """Splits items into (the n with the lowest key, the rest); order by key."""
    ranked = sorted(items, key=key)
    return ranked[:n], ranked[n:]


# --------------------------------------------------------------------------
# files

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def count_lines(path):
    with open(path, "rb") as f:
        return sum(1 for _ in f)


def write_lines(path, lines, compress=None):
    """One line per item, UTF-8, '\n'. compress: None, or write gzip -9 when the
    path ends in .gz (mtime 0 and no file name in the header: byte-identical rebuilds)."""
    data = []
    for line in lines:
        assert "\n" not in line and "\r" not in line, line
        data.append(line)
        data.append("\n")
    blob = "".join(data).encode("utf-8")
    if path.endswith(".gz"):
        with open(path, "wb") as raw:
            with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=9, mtime=0) as g:
                g.write(blob)
    else:
        with open(path, "wb") as f:
            f.write(blob)


class AtomicDir:
    """Build a directory under a temporary name, then swap it in by rename.

    with AtomicDir("out/deen") as tmp: write files into tmp
    A crash leaves the old directory (if any) intact plus a .tmp leftover
    that the next run removes.
    """

    def __init__(self, final):
        self.final = os.path.abspath(final)
        parent, name = os.path.split(self.final)
        self.tmp = os.path.join(parent, "." + name + ".tmp")
        self.old = os.path.join(parent, "." + name + ".old")

    def __enter__(self):
        os.makedirs(os.path.dirname(self.final), exist_ok=True)
        for d in (self.tmp, self.old):
            if os.path.exists(d):
                shutil.rmtree(d)
        os.makedirs(self.tmp)
        return self.tmp

    def __exit__(self, exc_type, exc, tb):
        if exc_type is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            return False
        if os.path.exists(self.final):
            os.rename(self.final, self.old)
        os.rename(self.tmp, self.final)
        if os.path.exists(self.old):
            shutil.rmtree(self.old)
        return False


def write_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(obj, f, indent=2, ensure_ascii=False, sort_keys=False)
        f.write("\n")
    os.replace(tmp, path)


def progress(msg):
    print("[data] " + msg, flush=True)
