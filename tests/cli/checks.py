"""Scaffolding shared by the CLI tests (tests/cli/test_*.py): a pass/fail tally and the exit."""
import sys


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
