"""Scaffolding shared by the CLI tests (tests/cli/test_*.py): a pass/fail tally and the exit,
a small corpus cut from the embedded Bible pairs, running stx, a run's metrics.jsonl, a file's
digest, and waiting for a run to reach a step."""
import gzip
import hashlib
import json
import os
import subprocess
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


def cut_moby(dest, counts):
    """dest/{split}.txt: the first n lines of each split of data/default/moby-dick."""
    os.makedirs(dest, exist_ok=True)
    for split, n in counts.items():
        with gzip.open(os.path.join(ROOT, "data", "default", "moby-dick", f"{split}.txt.gz"), "rt",
                       encoding="utf-8") as f:
            rows = [next(f) for _ in range(n)]
        with open(os.path.join(dest, f"{split}.txt"), "w", encoding="utf-8") as f:
            f.write("".join(rows))
    return dest


def config_args(config, sets):
    """["--config", config, "--set", "k=v", …] for the {key: value} overrides `sets`."""
    return ["--config", config] + [a for k, v in sets.items() for a in ("--set", f"{k}={v}")]


def run_stx(stx, args, env=None, timeout=600, input=None):
    """stx ARGS with captured text output (and `input` on stdin)."""
    return subprocess.run([stx] + args, capture_output=True, text=True, timeout=timeout, input=input,
                          env=env if env is not None else dict(os.environ, OMP_NUM_THREADS="1"))


def metrics(run_dir, partial=False):
    """The records of run_dir/metrics.jsonl; partial: of a run that may be writing it (no file
    is no records, a half-written last line is skipped)."""
    p = os.path.join(run_dir, "metrics.jsonl")
    if partial and not os.path.exists(p):
        return []
    with open(p) as f:
        return [json.loads(l) for l in f if (l.strip().endswith("}") if partial else l.strip())]


def sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def bad_input_problems(r, must_mention, before=None):
    """What is wrong with a run of stx on bad input: it must exit 2 with one stderr line naming
    every string in must_mention, and leave the files of `before` ({path: sha}) unchanged."""
    err = [l for l in r.stderr.splitlines() if l.strip()]
    problems = []
    if r.returncode != 2:
        problems.append(f"exit {r.returncode}")
    if len(err) != 1:
        problems.append(f"{len(err)} stderr lines: {r.stderr!r}")
    for m in must_mention:
        if m not in r.stderr:
            problems.append(f"no {m!r} in {r.stderr.strip()!r}")
    for p, h in (before or {}).items():
        if not os.path.exists(p) or sha(p) != h:
            problems.append(f"{p} changed")
    return problems


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
