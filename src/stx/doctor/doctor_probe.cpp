// stx/doctor/doctor_probe.cpp — see doctor_probe.h.
#include "stx/doctor/doctor_probe.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "stx/core/error.h"
#include "stx/report/metrics_schema.h"
#include "stx/train/trainer.h"

namespace stx::doctor {

namespace fs = std::filesystem;

int64_t default_horizon(const Config& c) {
  const auto k = static_cast<int64_t>(std::ceil(0.05 * static_cast<double>(c.train.max_steps)));
  return std::min(c.train.max_steps, std::max<int64_t>(k, 2));
}

namespace {

// A temporary run directory, removed with everything in it when it goes out of scope.
struct TempRun {
  std::string dir;
  TempRun() {
    const char* t = std::getenv("TMPDIR");
    std::string tmpl = (t && *t ? std::string(t) : std::string("/tmp")) + "/stx-doctor-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
      throw InputError("cannot create a temporary directory for the doctor's probe in " + tmpl);
    dir = tmpl;
  }
  ~TempRun() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

}  // namespace

ProbeResult probe(const Config& c, int64_t horizon, bool quiet) {
  if (horizon < 2 || horizon > c.train.max_steps)
    throw InputError("--steps " + std::to_string(horizon) + ": the probe needs 2 … train.max_steps (" +
                     std::to_string(c.train.max_steps) + ") updates");
  TempRun tmp;
  TrainOptions t;
  t.config = c;
  auto& tr = t.config.train;
  if (tr.log_every > horizon / 2) tr.log_every = std::max<int64_t>(1, horizon / 2);
  tr.eval_every = tr.max_steps + 1, tr.checkpoint_every = tr.max_steps + 1;
  t.run_dir = tmp.dir + "/run";
  t.quiet = quiet;
  t.stop_after = horizon;
  const auto t0 = std::chrono::steady_clock::now();
  const auto out = train(t);
  if (out.kind == TrainOutcome::Kind::Interrupted)
    throw InputError("the doctor's probe was stopped by signal " + std::to_string(out.signal));
  ProbeResult r;
  r.horizon = horizon;
  r.early = early_of(metrics::read_metrics(metrics::path_in(t.run_dir)).records, horizon);
  if (out.kind == TrainOutcome::Kind::Diverged && !r.early.diverged_step)
    r.early.diverged_step = out.step, r.early.cause = out.message;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace stx::doctor
