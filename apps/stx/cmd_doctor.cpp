// stx doctor — predicts from the first updates whether a configuration will train, stall or
// diverge, says why and prescribes a fix (docs/doctor.md; src/stx/doctor/):
//   stx doctor --config FILE [--set k=v]… [--steps K]   probe: train the first K updates, judge
//   stx doctor --run RUN [--steps K]                    judge a run's first K updates from its
//                                                       metrics.jsonl, and watch the rest of it
//   stx doctor collect --atlas DIR --out FILE           the ground truth from an atlas's runs
//   stx doctor fit --data FILE …                        fit the model, test it on held-out runs
//   stx doctor verify --atlas DIR --data FILE --out DIR rerun the held-out failures with the
//                                                       prescription applied
// Exit: 0 answered (a verdict, or "cannot judge" with the reason); 2 bad input.
#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "command.h"
#include "stx/config/config_io.h"
#include "stx/core/error.h"
#include "stx/core/runtime.h"
#include "stx/core/user_path.h"
#include "stx/doctor/doctor_dataset.h"
#include "stx/doctor/doctor_fit.h"
#include "stx/doctor/doctor_model.h"
#include "stx/doctor/doctor_probe.h"
#include "stx/doctor/doctor_verdict.h"
#include "stx/doctor/doctor_verify.h"
#include "stx/doctor/run_watch.h"
#include "stx/report/metrics_schema.h"
#include "stx/sweep/sweep_plan.h"
#include "stx/train/memory_estimate.h"

namespace stx::cli {

namespace fs = std::filesystem;

void register_doctor(Registry& reg) {
  struct Opts {
    ConfigOptions cfg;
    std::string run, model, atlas, out, data, report, depths = "6,24", holdout;
    int64_t steps = 0;
    int jobs = 2;
    double l2 = 1.0, threshold = 0;
    bool json = false, quiet = false;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = reg.app.add_subcommand(
      "doctor", "predict from the first updates whether a config trains, stalls or diverges, why, and what to change");
  o->cfg.add_to(sub, /*config_required=*/false);
  sub->add_option("--run", o->run, "judge a run directory from its metrics.jsonl instead of probing a config");
  sub->add_option("--steps", o->steps, "the probe horizon K in updates (default: 5 % of train.max_steps)");
  sub->add_option("--model", o->model, "the fitted doctor (default: data/doctor/model.json)");
  sub->add_flag("--json", o->json, "print the verdict as JSON");
  sub->add_flag("--quiet", o->quiet, "no progress output while probing");
  sub->require_subcommand(0, 1);
  auto* collect = sub->add_subcommand("collect", "add the atlas's ended runs to the doctor's dataset");
  collect->add_option("--atlas", o->atlas, "atlas directory (atlas.json; runs/ when present)")->required();
  collect->add_option("--out", o->out, "dataset (JSON lines; the examples already there are kept)")->required();
  collect->add_flag("--quiet", o->quiet, "no line per run added");
  auto* fitc = sub->add_subcommand("fit", "fit the doctor on part of the dataset, report on the rest");
  fitc->add_option("--data", o->data, "dataset from `stx doctor collect`")->required();
  fitc->add_option("--model", o->model, "where to write the model (default: data/doctor/model.json)");
  fitc->add_option("--report", o->report, "directory for report.json and report.md")->required();
  fitc->add_option("--train-depths", o->depths, "depths fitted on (the rest are held out)")->capture_default_str();
  fitc->add_option("--holdout-schemes", o->holdout,
                   "schemes held out at every depth (default: every fifth row of the scheme table)");
  fitc->add_option("--l2", o->l2, "L2 penalty of the logistic models")->capture_default_str();
  fitc->add_option("--threshold", o->threshold,
                   "P(fails) at which the doctor flags a run (default: the best F1 on the fitted runs)");
  auto* ver = sub->add_subcommand("verify", "rerun the held-out failing atlas runs with the doctor's prescription");
  ver->add_option("--atlas", o->atlas, "atlas directory (atlas.json)")->required();
  ver->add_option("--data", o->data, "dataset from `stx doctor collect`")->required();
  ver->add_option("--out", o->out, "directory for the reruns, prescriptions.json and prescriptions.md")->required();
  ver->add_option("--model", o->model, "the fitted doctor (default: data/doctor/model.json)");
  ver->add_option("--train-depths", o->depths, "depths the model was fitted on")->capture_default_str();
  ver->add_option("--holdout-schemes", o->holdout, "schemes held out (default: every fifth row of the scheme table)");
  ver->add_option("--jobs", o->jobs, "reruns at once, one thread each")->capture_default_str();
  ver->add_flag("--quiet", o->quiet, "no progress lines");
  reg.add(sub, [o, sub, collect, fitc, ver] {
    if (collect->parsed()) {
      doctor::CollectOptions c;
      c.atlas_dir = o->atlas, c.out = o->out, c.quiet = o->quiet;
      return doctor::collect(c);
    }
    const std::string model_path = o->model.empty() ? doctor::default_model_path() : o->model;
    if (fitc->parsed()) {
      if (!(o->l2 >= 0)) throw InputError(fmt::format("--l2 {}: must be ≥ 0", o->l2));
      if (!(o->threshold >= 0 && o->threshold < 1))
        throw InputError(fmt::format("--threshold {}: must be in (0, 1) (0 or absent: the best F1)", o->threshold));
      doctor::FitOptions f;
      f.threshold = o->threshold;
      f.data = o->data, f.model_out = model_path, f.report_dir = o->report, f.command = command_line();
      f.train_depths = sweep::parse_depths(o->depths);
      f.holdout_schemes = o->holdout.empty() ? doctor::default_holdout_schemes() : sweep::parse_schemes(o->holdout);
      return doctor::fit(f);
    }
    if (ver->parsed()) {
      if (o->jobs < 1) throw InputError(fmt::format("--jobs {}: must be at least 1", o->jobs));
      std::error_code ec;
      doctor::VerifyOptions v;
      v.exe = fs::read_symlink("/proc/self/exe", ec).string();
      if (ec) throw InputError("cannot find the stx binary (/proc/self/exe): " + ec.message());
      v.atlas_dir = o->atlas, v.data = o->data, v.model = model_path, v.out = o->out, v.command = command_line();
      v.train_depths = sweep::parse_depths(o->depths), v.jobs = o->jobs, v.quiet = o->quiet;
      v.holdout_schemes = o->holdout.empty() ? doctor::default_holdout_schemes() : sweep::parse_schemes(o->holdout);
      return doctor::verify(v);
    }
    if (o->run.empty() == o->cfg.config.empty())
      throw InputError(
          "give one of --config FILE (probe a config) or --run RUN (judge a run), or a subcommand: "
          "collect, fit");
    if (sub->count("--steps") && o->steps < 2)
      throw InputError(fmt::format("--steps {}: must be at least 2", o->steps));
    const auto m = doctor::load_model(model_path);
    Config c;
    doctor::Early early;
    int64_t horizon = 0;
    std::vector<metrics::Record> records;
    if (!o->run.empty()) {
      const auto cfg_path = (fs::path(o->run) / "config.yaml").string();
      const auto log = metrics::path_in(o->run);
      require_directory(o->run, "--run");
      if (!regular_file_if_present(cfg_path, "run file") || !regular_file_if_present(log, "run file"))
        throw InputError("'" + o->run + "' is not a run directory (needs config.yaml and metrics.jsonl)");
      c = resolve_config(cfg_path, o->cfg.overrides);
      horizon = o->steps ? o->steps : doctor::default_horizon(c);
      records = metrics::read_metrics(log).records;
      early = doctor::early_of(records, horizon);
    } else {
      c = resolve_config(o->cfg.config, o->cfg.overrides);
      horizon = o->steps ? o->steps : doctor::default_horizon(c);
      if (horizon > c.train.max_steps)
        throw InputError(
            fmt::format("--steps {}: the probe needs 2 … train.max_steps ({}) updates", horizon, c.train.max_steps));
      use_default_threads(c.model.d_model, c.train.max_tokens);
      check_memory(c, estimate_training_memory(c));  // before the probe allocates anything
      if (!o->quiet)
        std::cerr << fmt::format("doctor: probing the first {} of {} updates …\n", horizon, c.train.max_steps);
      const auto p = doctor::probe(c, horizon, o->quiet);
      if (!o->quiet) std::cerr << fmt::format("doctor: probe took {:.1f} s\n", p.seconds);
      early = p.early;
    }
    const auto v = doctor::judge(m, c, early, horizon);
    const auto watch = records.empty() ? doctor::Watch{} : doctor::watch_run(records, horizon);
    if (o->json) {
      auto j = doctor::to_json(v);
      j["horizon"] = horizon;
      if (!o->run.empty()) j["since"] = doctor::to_json(watch);
      std::cout << j.dump(1) << "\n";
    } else {
      std::cout << fmt::format("stx doctor: {} layers, {}, lr {:g}, warm-up {}, first {} of {} updates\n",
                               c.model.decoder_layers + c.model.encoder_layers * (c.model.arch == Arch::EncoderDecoder),
                               v.scheme_row.empty() ? to_string(c.model.scheme) : v.scheme_row, c.train.lr,
                               c.train.warmup_steps, horizon, c.train.max_steps);
      std::cout << doctor::render(v, m);
      if (!o->run.empty()) std::cout << doctor::render(watch);
    }
    return 0;
  });
}

}  // namespace stx::cli
