#!/usr/bin/env python3
"""Time per op from a Chrome trace of `stx bench --profile FILE` (LibTorch's profiler).

    python3 bench/profile_table.py FILE [--top N]

Self time is an op's duration minus that of the ops nested in it (same thread); total time
includes them. Per step = over the profiled steps (stx bench profiles 5).
"""
import argparse
import collections
import json
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("trace")
    ap.add_argument("--top", type=int, default=30)
    ap.add_argument("--steps", type=int, default=5, help="profiled steps (stx bench: 5)")
    a = ap.parse_args()
    try:
        with open(a.trace) as f:
            events = [e for e in json.load(f) if e.get("ph") == "X"]
    except (OSError, ValueError) as e:
        print(f"profile_table: cannot read {a.trace}: {e}", file=sys.stderr)
        sys.exit(2)
    by_tid = collections.defaultdict(list)
    for e in events:
        by_tid[e["tid"]].append(e)
    self_us, total_us, calls = collections.Counter(), collections.Counter(), collections.Counter()
    for evs in by_tid.values():
        evs.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack = []  # [end, name, child time]
        for e in evs:
            while stack and stack[-1][0] <= e["ts"]:
                end, name, child = stack.pop()
            if stack:
                stack[-1][2] += e["dur"]
            stack.append([e["ts"] + e["dur"], e["name"], 0.0])
            total_us[e["name"]] += e["dur"]
            calls[e["name"]] += 1
        # self time: second pass with the same nesting
        stack = []
        for e in evs:
            while stack and stack[-1][0] <= e["ts"]:
                end, name, child, dur = stack.pop()
                self_us[name] += dur - child
            if stack:
                stack[-1][2] += e["dur"]
            stack.append([e["ts"] + e["dur"], e["name"], 0.0, e["dur"]])
        while stack:
            end, name, child, dur = stack.pop()
            self_us[name] += dur - child
    all_self = sum(self_us.values())
    print(f"{'op':<52} {'calls/step':>10} {'self ms/step':>12} {'self %':>7} {'total ms/step':>13}")
    for name, us in self_us.most_common(a.top):
        print(f"{name[:52]:<52} {calls[name] / a.steps:>10.0f} {us / 1e3 / a.steps:>12.2f} "
              f"{100 * us / all_self:>7.1f} {total_us[name] / 1e3 / a.steps:>13.2f}")
    print(f"{'(all ops, self)':<52} {sum(calls.values()) / a.steps:>10.0f} {all_self / 1e3 / a.steps:>12.2f}")


if __name__ == "__main__":
    main()
