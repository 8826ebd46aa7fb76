#!/usr/bin/python3
"""Unpacks the files of a .deb (or an npm .tgz) that match glob patterns, without root.

usage: unpack.py ARCHIVE DEST [PATTERN ...]

A .deb is read through `dpkg-deb --fsys-tarfile`; a .tgz directly. Only regular
files whose member path (without the leading "./") matches a pattern are
written (all files when no pattern is given; `*` also matches `/`), plus the
package's usr/share/doc/*/copyright. The tree is built in DEST.tmp and renamed
to DEST; DEST/.stx-unpacked records the archive and the patterns, and a second
run with the same ones does nothing.
"""
import fnmatch
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile

ALWAYS = ["usr/share/doc/*/copyright"]


def stamp_of(archive, patterns):
    st = os.stat(archive)
    key = "%s\n%d\n%s" % (os.path.basename(archive), st.st_size, "\n".join(patterns))
    return hashlib.sha256(key.encode()).hexdigest()


def unpack(archive, dest, patterns):
    stamp = stamp_of(archive, patterns)
    stamp_file = os.path.join(dest, ".stx-unpacked")
    if os.path.exists(stamp_file) and open(stamp_file).read().strip() == stamp:
        return 0, True
    tmp = dest + ".tmp"
    if os.path.exists(tmp):
        shutil.rmtree(tmp)
    os.makedirs(tmp)
    if archive.endswith(".deb"):
        proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", archive], stdout=subprocess.PIPE)
        tf = tarfile.open(fileobj=proc.stdout, mode="r|")
    else:
        proc = None
        tf = tarfile.open(archive, mode="r|*")
    pats = list(patterns) + ALWAYS if patterns else None
    n = 0
    for m in tf:
        if not m.isfile():
            continue
        name = m.name[2:] if m.name.startswith("./") else m.name
        parts = name.split("/")
        if name.startswith("/") or ".." in parts:
            continue
        if pats is not None and not any(fnmatch.fnmatchcase(name, p) for p in pats):
            continue
        out = os.path.join(tmp, *parts)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        src = tf.extractfile(m)
        with open(out, "wb") as f:
            shutil.copyfileobj(src, f, 1 << 20)
        n += 1
    tf.close()
    if proc is not None:
        proc.stdout.close()
        if proc.wait() != 0:
            shutil.rmtree(tmp)
            raise SystemExit("unpack: dpkg-deb failed on %s" % archive)
    with open(os.path.join(tmp, ".stx-unpacked"), "w") as f:
        f.write(stamp + "\n")
    if os.path.exists(dest):
        shutil.rmtree(dest)
    os.rename(tmp, dest)
    return n, False


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    n, cached = unpack(sys.argv[1], sys.argv[2], sys.argv[3:])
    print("cached" if cached else "%d files" % n)


if __name__ == "__main__":
    main()
