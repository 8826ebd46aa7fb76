#!/usr/bin/env bash
# Regenerates docs/theory/ (`stx theory all` at the quick defaults: report.md, JSON, figures) and
# splices the report into docs/theory.md between its BEGIN/END REPORT markers. The findings
# above the markers are written by hand from these numbers; re-read them after a change.
# Usage: scripts/update-theory-docs.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
B=${1:-build}
rm -rf docs/theory.new
"$B/stx" theory all --out docs/theory.new
rm -rf docs/theory && mv docs/theory.new docs/theory
python3 - <<'PY'
import re
doc = open("docs/theory.md", encoding="utf-8").read()
rep = open("docs/theory/report.md", encoding="utf-8").read()
body = rep.split("\n", 1)[1]                                   # drop the report's title
body = body.replace("--out docs/theory.new", "--out docs/theory")
body = re.sub(r"^## ", "### ", body, flags=re.M)
body = re.sub(r"!\[([^\]]*)\]\(([^)/]+\.png)\)", r"![\1](theory/\2)", body)
begin, end = "<!-- BEGIN REPORT -->", "<!-- END REPORT -->"
head, rest = doc.split(begin)
tail = rest.split(end)[1]
open("docs/theory.md", "w", encoding="utf-8").write(head + begin + "\n" + body.strip() + "\n" + end + tail)
PY
echo "docs/theory.md updated"
