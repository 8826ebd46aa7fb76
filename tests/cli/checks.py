"""Scaffolding shared by the CLI tests (tests/cli/test_*.py): a pass/fail tally and the exit,
a small corpus cut from the embedded Bible pairs, and waiting for a run to reach a step."""
import gzip
import json
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def cut_bible(dest, counts):
    """dest/{split}.{es,en}: the first n lines of each split of data/default/bible-es-en."""
    os.makedirs(dest, exist_ok=True)
    for split, n in counts.items():
        for lang in ("es", "en"):
            with gzip.open(os.path.join(ROOT, "data", "default", "bible-es-en", f"{split}.{lang}.gz"), "rt",
                           encoding="utf-8") as f:
                rows = [next(f) for _ in range(n)]
            with open(os.path.join(dest, f"{split}.{lang}"), "w", encoding="utf-8") as f:
                f.write("".join(rows))
    return dest


def wait_for_step(proc, run_dir, step):
    """Polls run_dir/metrics.jsonl until a line at `step` or later appears, or proc ends."""
    while proc.poll() is None:
        try:
            with open(os.path.join(run_dir, "metrics.jsonl")) as f:
                if any(json.loads(l).get("step", 0) >= step for l in f if l.strip()):
                    return
        except (FileNotFoundError, json.JSONDecodeError):
            pass
        time.sleep(0.05)


class Checks:
    def __init__(self):
        self.passed, self.failed = 0, 0

    def __call__(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print(f"ok   {name}")
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")
        return ok

    def finish(self, extra=""):
        print(f"{self.passed} passed, {self.failed} failed{extra}")
        sys.exit(1 if self.failed else 0)
