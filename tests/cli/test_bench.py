"""`stx bench` quick check: a tiny decoder config, 2 timed steps; the report's JSON keys are
present and positive; bad arguments exit 2 with one line and write no JSON.
Run: python3 tests/cli/test_bench.py build/stx   (a few seconds; no timing is asserted)"""
import json
import os
import subprocess
import sys
import tempfile

from checks import Checks  # noqa: E402

STX = os.path.abspath(sys.argv[1])
ENV = dict(os.environ, OMP_NUM_THREADS="1")

TINY = """model:
  arch: decoder
  vocab_size: 50
  d_model: 16
  n_heads: 2
  d_ff: 32
  decoder_layers: 2
  scheme: post
  dropout: 0.1
  max_len: 8
train:
  max_tokens: 16
"""


check = Checks()


def run(args):
    return subprocess.run([STX, "bench"] + args, capture_output=True, text=True, timeout=120, env=ENV)


with tempfile.TemporaryDirectory() as d:
    cfg = os.path.join(d, "tiny.yaml")
    with open(cfg, "w") as f:
        f.write(TINY)
    out = os.path.join(d, "bench.json")
    r = run(["--config", cfg, "--steps", "2", "--warmup", "1", "--threads", "1", "--json", out])
    check("bench exits 0", r.returncode == 0, r.stderr[-2000:])
    check("text report", "tokens/s:" in r.stdout and "sgemm fraction:" in r.stdout, r.stdout)
    j = json.load(open(out)) if os.path.exists(out) else {}
    positive = ["tokens_per_s", "ms_per_step_median", "ms_per_step_mean", "cpu_ms_per_step", "flops_per_step", "gflops", "sgemm_gflops",
                "sgemm_fraction", "best_gemm_ms_per_step", "peak_rss_mb", "rss_before_mb", "parameters", "threads", "tokens_per_step"]
    check("json keys positive", all(isinstance(j.get(k), (int, float)) and j[k] > 0 for k in positive),
          {k: j.get(k) for k in positive})
    check("defaults: seq = max_len, batch = max_tokens / seq", j.get("seq") == 8 and j.get("batch") == 2,
          (j.get("batch"), j.get("seq")))
    check("config name and steps", j.get("config") == "tiny" and j.get("steps") == 2 and j.get("warmup") == 1, j)
    # FLOP count, decoder-only closed form: 3·[L·R·(8d² + 4·d·d_ff + 4·T·d) + 2·R·d·V].
    L, R, T, dm, ff, V = 2, 16, 8, 16, 32, 50
    want = 3 * (L * R * (8 * dm * dm + 4 * dm * ff + 4 * T * dm) + 2 * R * dm * V)
    check("flops_per_step = closed form", j.get("flops_per_step") == want, (j.get("flops_per_step"), want))
    check("sgemm shapes listed", len(j.get("sgemm_shapes", [])) > 0 and
          sum(s["count"] * 2 * s["batch"] * s["m"] * s["n"] * s["k"] for s in j["sgemm_shapes"]) == want)

    check("the tighter products bound: at most the BLAS's", 0 < j.get("best_gemm_ms_per_step", 0) <= j.get("gemm_ms_per_step", 0),
          (j.get("best_gemm_ms_per_step"), j.get("gemm_ms_per_step")))
    check("both kernels timed on every shape", all(s.get("band_ms", 0) > 0 for s in j.get("sgemm_shapes", [])),
          j.get("sgemm_shapes"))
    check("text: step / products", "step / products:" in r.stdout, r.stdout)
    check("kernels reported", j.get("kernels") == "fused", j.get("kernels"))
    # The reference kernels and a profile: the same model, a trace with forward and backward ops.
    trace = os.path.join(d, "trace.json")
    r = run(["--config", cfg, "--steps", "1", "--warmup", "1", "--threads", "1", "--kernels", "reference",
             "--profile", trace, "--json", out])
    j = json.load(open(out)) if os.path.exists(out) else {}
    check("--kernels reference runs", r.returncode == 0 and j.get("kernels") == "reference", r.stderr[-2000:])
    names = {e.get("name") for e in json.load(open(trace))} if os.path.exists(trace) else set()
    check("--profile writes a trace with forward and backward ops",
          "aten::mm" in names and any("Backward" in n for n in names if n), sorted(n for n in names if n)[:20])
    table = subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "..", "..", "bench",
                                                         "profile_table.py"), trace, "--top", "5"],
                           capture_output=True, text=True, timeout=60)
    check("profile_table.py prints the ops", table.returncode == 0 and "self ms/step" in table.stdout
          and "(all ops, self)" in table.stdout, table.stdout + table.stderr)

    def expect_bad(name, args, mention):
        if os.path.exists(out):
            os.remove(out)
        r = run(args + ["--json", out])
        err = [l for l in r.stderr.splitlines() if l.strip()]
        ok = r.returncode == 2 and len(err) == 1 and mention in r.stderr and not os.path.exists(out)
        check(name, ok, f"exit {r.returncode}, stderr {r.stderr!r}")

    expect_bad("--steps 0", ["--config", cfg, "--steps", "0"], "--steps")
    expect_bad("--seq beyond max_len", ["--config", cfg, "--seq", "9", "--steps", "1"], "max_len")
    expect_bad("missing config file", ["--config", os.path.join(d, "nope.yaml")], "nope.yaml")
    expect_bad("--kernels bogus", ["--config", cfg, "--kernels", "bogus"], "--kernels")

check.finish()
