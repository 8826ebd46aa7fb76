#!/usr/bin/env python3
"""The include order of docs/design.md, checked against the sources.

Two rules, both read from docs/design.md:
  rooms: a file in src/stx/ROOM/ (or apps/stx/) includes stx headers only from the rooms its row
         of "The rooms, lowest first" allows ("X and below" = X and everything X may include);
  model: a file in src/stx/model/ includes only model/ files of an earlier level of the list
         under "Inside model/" (a file and its own header excepted).

  scripts/check-includes.py [REPO]   exit 0: every include follows the order; 1: a list of the
                                     includes that do not; 2: design.md has no such table
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).resolve().parent.parent)
design = (root / "docs/design.md").read_text()
INCLUDE = re.compile(r'^#include "stx/([a-z_]+)/([a-z_0-9]+)\.h"', re.M)


def fail(msg):
    print(f"check-includes: {msg}", file=sys.stderr)
    sys.exit(2)


# The rooms' table: | `room/` | what | may include |
allowed = {}
for m in re.finditer(r"^\| `([a-z_/]+)/` \|.*\| ([^|]+) \|$", design, re.M):
    allowed[m.group(1)] = m.group(2).strip()
if "model" not in allowed or "core" not in allowed:
    fail("docs/design.md has no rooms table ('| `room/` | … | may include |')")


def closure(room, seen=None):
    seen = set() if seen is None else seen
    text = allowed[room]
    if text == "everything":
        return set(allowed)
    out = set()
    if text.startswith("nothing"):
        return out
    below = text.endswith("and below")
    for name in re.split(r",\s*|\s+and\s+", text.replace(" and below", "")):
        name = name.strip().rstrip("/")
        if not name:
            continue
        if name not in allowed:
            fail(f"room '{room}/' may include '{name}', which is not a room of the table")
        out.add(name)
        if below and name not in seen:
            seen.add(name)
            out |= closure(name, seen)
    return out


# Inside model/: "N. `a`, `b`" lines under the heading.
sec = re.search(r"^### Inside `model/`\n(.*?)(?=^#)", design, re.M | re.S)
if not sec:
    fail("docs/design.md has no '### Inside `model/`' section")
level = {}
# An item runs from "N. " to the next item; the files are its `names` outside parentheses.
for m in re.finditer(r"^(\d+)\. (.*?)(?=^\d+\. |\Z)", sec.group(1), re.M | re.S):
    for name in re.findall(r"`([a-z_0-9]+)`", re.sub(r"\([^)]*\)", "", m.group(2))):
        level[name] = int(m.group(1))

bad = []
sources = list((root / "src/stx").rglob("*.[ch]*")) + list((root / "apps/stx").glob("*.[ch]*"))
for f in sorted(sources):
    rel = f.relative_to(root)
    room = "apps/stx" if rel.parts[0] == "apps" else rel.parts[2]
    if room not in allowed:
        continue  # src/stx/*.h at the top, src/spm_shim: not rooms of the table
    ok = set(allowed) if room == "apps/stx" else closure(room) | {room}
    text = f.read_text()
    for m in INCLUDE.finditer(text):
        inc_room, inc = m.group(1), m.group(2)
        line = text.count("\n", 0, m.start()) + 1
        if inc_room not in ok:
            bad.append(f"{rel}:{line}: {room}/ includes {inc_room}/{inc}.h (allowed: {allowed[room]})")
        if room == "model" and inc_room == "model" and inc != f.stem:
            if f.stem not in level or inc not in level:
                missing = f.stem if f.stem not in level else inc
                bad.append(f"{rel}:{line}: model/{missing} is not in design.md's list 'Inside model/'")
            elif level[inc] >= level[f.stem]:
                bad.append(f"{rel}:{line}: model/{f.stem} (level {level[f.stem]}) includes model/{inc}.h "
                           f"(level {level[inc]}): an arrow up or sideways")
for f in sorted((root / "src/stx/model").glob("*.h")):
    if f.stem not in level:
        bad.append(f"src/stx/model/{f.name}: not in design.md's list 'Inside model/'")
if bad:
    print("\n".join(sorted(set(bad))))
    sys.exit(1)
print(f"check-includes: {len(sources)} files follow docs/design.md's order "
      f"({len(allowed)} rooms, {len(level)} files inside model/)")
