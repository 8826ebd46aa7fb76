"""`stx doctor` end to end (the shape of the answers, not the numbers of the committed model):
fit on a synthetic dataset whose failures follow one signal (the fit must find it: AUROC > 0.9
on the held-out depth), the model and report written; a probe of a config in the fitted regime
(judged or declined, with the JSON fields), a config outside it (declined, saying why), a run
judged from its metrics.jsonl with the watch; bad input exits 2 with one line.
Run: python3 tests/cli/test_doctor.py build/stx"""
import json
import math
import os
import random
import sys
import tempfile

from checks import Checks, bad_input_problems, run_stx  # noqa: E402

STX = os.path.abspath(sys.argv[1])
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
ATLAS = os.path.join(ROOT, "configs", "atlas.yaml")
MODEL = os.path.join(ROOT, "data", "doctor", "model.json")
check = Checks()


def example(i, depth, scheme, reach):
    """A run whose first 20 updates are two logged lines; it fails when its gradient reach is low
    (some at update 15, before K = 20: no warning in advance)."""
    rng = random.Random(i)
    fails = reach + rng.gauss(0, 0.5) < -3
    lines = []
    for step in (10, 20):
        lines.append({"step": step, "lr": 1e-3 * step / 40, "loss": 3.5 + rng.random(), "grad_norm": 1 + rng.random(),
                      "grad_reach": reach, "delta_f": 2.0, "delta_f_step": 1.0 + rng.random(),
                      "attn_logit": 3 + rng.random(), "entropy_min": 2 + rng.random(), "entropy_max": 3.8,
                      "log_z_max": 6 + rng.random(), "ln_input": 1.5, "param_norm": 60})
    return {"name": f"{scheme}-L{depth}-{i}", "scheme": scheme, "depth": depth, "lr": 1e-3, "warmup": True, "seed": 0,
            "steps": 400, "label": ("stalls" if i % 2 else "diverges") if fails else "trains", "failure": "",
            "failure_step": (15 if i % 7 == 0 else 300) if fails else None, "final_bpb": 4.4 if fails else 3.3, "source": "run",
            "regime": {"model.d_model": 64}, "lines": lines}


with tempfile.TemporaryDirectory() as d:
    data = os.path.join(d, "dataset.jsonl")
    rows = [example(i, depth, scheme, -random.Random(1000 + i).uniform(0, 8))
            for i, (depth, scheme) in enumerate([(dd, s) for dd in (6, 24, 96) for s in ("post", "pre")] * 40)]
    with open(data, "w") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    model, report = os.path.join(d, "model.json"), os.path.join(d, "report")
    r = run_stx(STX, ["doctor", "fit", "--data", data, "--model", model, "--report", report,
                      "--holdout-schemes", "pre"])
    check("fit exits 0", r.returncode == 0, r.stderr[-800:])
    rep = json.load(open(os.path.join(report, "report.json"))) if r.returncode == 0 else {}
    held = rep.get("groups", {}).get("held-out depth 96", {}).get("doctor", {})
    check("the fit finds the signal the failures follow (held-out depth 96: AUROC > 0.9)",
          (held.get("auroc") or 0) > 0.9, held)
    groups = rep.get("groups", {})
    check("leads are warnings in advance: every lead > 0 steps",
          all(x > 0 for g in groups.values() for x in g.get("lead_steps", [])),
          {k: min(g.get("lead_steps") or [1]) for k, g in groups.items()})
    bt = rep.get("baseline_thresholds", {})
    check("each baseline flags at its own threshold, not the doctor's",
          set(bt) == {"loss", "grad_norm"} and all(0 < v < 1 for v in bt.values()), bt)
    m = json.load(open(model)) if os.path.exists(model) else {}
    w = m.get("fails", {}).get("inputs", {})
    check("its largest weight is on grad_reach, negative", w and min(w, key=lambda k: w[k]["weight"]) == "grad_reach",
          {k: round(v["weight"], 2) for k, v in w.items()})
    check("report.md has the held-out table", os.path.exists(os.path.join(report, "report.md")) and
          "held-out depth 96" in open(os.path.join(report, "report.md")).read())

    # A probe in the fitted regime (the committed model, fitted on the atlas).
    r = run_stx(STX, ["doctor", "--config", ATLAS, "--set", "model.decoder_layers=2", "--set", "train.max_steps=80",
                      "--steps", "4", "--json", "--quiet", "--model", MODEL])
    v = json.loads(r.stdout) if r.returncode == 0 else {}
    check("probe: exit 0 and a verdict in JSON", r.returncode == 0 and isinstance(v.get("judged"), bool),
          r.stderr[-800:])
    if v.get("judged"):
        check("probe: outcome, probability, prescription", v.get("outcome") in ("trains", "stalls", "diverges") and
              0 <= v.get("p_fails", -1) <= 1 and "set" in v.get("prescription", {}), v)
    else:
        check("probe: says why it does not judge", bool(v.get("not_judged")), v)
    r = run_stx(STX, ["doctor", "--config", ATLAS, "--set", "model.d_model=32", "--set", "model.d_ff=64",
                      "--set", "model.n_heads=2", "--set", "model.decoder_layers=2", "--set", "train.max_steps=80",
                      "--steps", "4", "--quiet", "--model", MODEL])
    check("outside the fitted regime: declines and names it", r.returncode == 0 and "cannot judge" in r.stdout and
          "model.d_model" in r.stdout, r.stdout + r.stderr[-500:])

    # A run judged from its metrics.jsonl.
    run = os.path.join(d, "run")
    r = run_stx(STX, ["train", "--config", ATLAS, "--out", run, "--quiet", "--set", "model.decoder_layers=2",
                      "--set", "train.max_steps=24", "--set", "train.log_every=2", "--set", "train.eval_every=24",
                      "--set", "train.doctor=true"])
    check("a short run trains", r.returncode == 0, r.stderr[-800:])
    lines = [json.loads(x) for x in open(os.path.join(run, "metrics.jsonl"))] if r.returncode == 0 else []
    train_lines = [x for x in lines if "loss" in x]
    check("train.doctor: every training line from the second on (K = 2) carries the verdict and the watch",
          len(train_lines) > 2 and "doctor" not in train_lines[0] and
          all(isinstance(x.get("doctor", {}).get("judged"), bool) and "left_early_range" in x["doctor"]
              for x in train_lines[1:]),
          [x.get("doctor") for x in train_lines][:3])
    r = run_stx(STX, ["doctor", "--run", run, "--json", "--model", MODEL])
    v = json.loads(r.stdout) if r.returncode == 0 else {}
    check("--run: a verdict and the watch since the horizon", r.returncode == 0 and "since" in v and
          v["since"].get("last_step") == 24 and v.get("horizon") == 2, r.stdout[-600:] + r.stderr[-600:])

    # A run written by another program must follow docs/metrics.md: a key of the wrong type is
    # bad input naming the file, line and key.
    with open(os.path.join(run, "metrics.jsonl"), "a") as f:
        f.write('{"step": 26, "loss": "high"}\n')
    n = len(lines) + 1
    r = run_stx(STX, ["doctor", "--run", run, "--model", MODEL])
    check("--run: a line that breaks the schema exits 2 with file:line and the key",
          not bad_input_problems(r, [f"metrics.jsonl:{n}: key 'loss' is a string"]),
          bad_input_problems(r, [f"metrics.jsonl:{n}: key 'loss' is a string"]))

    # Bad input: exit 2, one line.
    for args, mention in [
        (["doctor", "--config", ATLAS, "--steps", "1"], "--steps 1"),
        (["doctor", "--config", ATLAS, "--steps", "100000"], "--steps 100000"),
        (["doctor", "--config", ATLAS, "--run", run], "--config"),
        (["doctor"], "--config"),
        (["doctor", "--run", d], "not a run directory"),
        (["doctor", "--config", ATLAS, "--model", data], "doctor model"),
        (["doctor", "fit", "--data", os.path.join(d, "nope.jsonl"), "--report", report], "nope.jsonl"),
        (["doctor", "fit", "--data", data, "--report", report, "--threshold", "1.5"], "--threshold"),
        (["doctor", "collect", "--atlas", d, "--out", os.path.join(d, "x.jsonl")], "atlas.json"),
    ]:
        r = run_stx(STX, args)
        check(f"bad input ({mention}) exits 2 with one line", not bad_input_problems(r, [mention]),
              bad_input_problems(r, [mention]))
    one = os.path.join(d, "one.jsonl")
    with open(one, "w") as f:
        f.write("".join(json.dumps(dict(x, label="trains")) + "\n" for x in rows[:20]))
    r = run_stx(STX, ["doctor", "fit", "--data", one, "--model", os.path.join(d, "m1.json"), "--report", report])
    check("a dataset with one class: exit 2", not bad_input_problems(r, ["both classes"]),
          bad_input_problems(r, ["both classes"]))

check.finish()
