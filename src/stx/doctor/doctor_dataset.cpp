// stx/doctor/doctor_dataset.cpp — see doctor_dataset.h.
#include "stx/doctor/doctor_dataset.h"

#include <fmt/format.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>

#include "stx/atlas/atlas_summary.h"
#include "stx/config/config_io.h"
#include "stx/config/schemes.h"
#include "stx/core/atomic_file.h"
#include "stx/core/error.h"
#include "stx/core/signals.h"
#include "stx/doctor/doctor_model.h"
#include "stx/doctor/doctor_probe.h"
#include "stx/report/metrics_schema.h"
#include "stx/sweep/sweep_plan.h"

namespace stx::doctor {

namespace fs = std::filesystem;

nlohmann::json to_json(const Example& e) {
  nlohmann::json lines = nlohmann::json::array();
  for (auto& l : e.early.lines) lines.push_back(to_json(l));
  nlohmann::json j = {{"name", e.name},       {"scheme", e.scheme}, {"depth", e.depth},   {"lr", e.lr},
                      {"warmup", e.warmup},   {"seed", e.seed},     {"steps", e.steps},   {"label", e.label},
                      {"failure", e.failure}, {"source", e.source}, {"regime", e.regime}, {"lines", lines}};
  j["failure_step"] = e.failure_step ? nlohmann::json(*e.failure_step) : nlohmann::json(nullptr);
  j["final_bpb"] = e.final_bpb ? nlohmann::json(*e.final_bpb) : nlohmann::json(nullptr);
  if (e.early.diverged_step) j["probe_divergence"] = {{"step", *e.early.diverged_step}, {"cause", e.early.cause}};
  return j;
}

Example example_from_json(const nlohmann::json& j) {
  Example e;
  e.name = j.at("name"), e.scheme = j.at("scheme"), e.depth = j.at("depth"), e.lr = j.at("lr");
  e.warmup = j.at("warmup"), e.seed = j.value("seed", int64_t{0}), e.steps = j.at("steps");
  e.label = j.at("label"), e.failure = j.value("failure", ""), e.source = j.value("source", "");
  doctor_class(e.label);  // one of the five labels
  if (j.contains("failure_step") && j["failure_step"].is_number()) e.failure_step = j["failure_step"].get<int64_t>();
  if (j.contains("final_bpb") && j["final_bpb"].is_number()) e.final_bpb = j["final_bpb"].get<double>();
  e.regime = j.value("regime", nlohmann::json::object());
  for (auto& l : j.at("lines")) e.early.lines.push_back(line_from_json(l));
  if (j.contains("probe_divergence"))
    e.early.diverged_step = j["probe_divergence"].at("step").get<int64_t>(),
    e.early.cause = j["probe_divergence"].value("cause", "");
  return e;
}

std::vector<Example> read_dataset(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError("cannot read the doctor's dataset '" + path + "'");
  std::vector<Example> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty()) continue;
    try {
      out.push_back(example_from_json(nlohmann::json::parse(line)));
    } catch (const std::exception& e) {
      throw InputError(fmt::format("{}:{}: not a doctor example ({})", path, n, e.what()));
    }
  }
  return out;
}

void write_dataset(const std::string& path, const std::vector<Example>& examples) {
  std::string text;
  for (auto& e : examples) text += to_json(e).dump() + "\n";
  write_text_atomically(path, text);
}

std::string atlas_label(const nlohmann::json& run, double unigram_bits) {
  const auto reading = atlas::reading_from_json(
      run.contains("reading") && run["reading"].is_object() ? run["reading"] : nlohmann::json::object());
  const bool guard = run.contains("guard_stop") && run["guard_stop"].is_boolean()
                         ? run["guard_stop"].get<bool>()
                         : run.value("outcome", "") == "diverged" || reading.failure.rfind("diverged", 0) == 0;
  return grid::to_string(atlas::outcome_of(reading, guard, unigram_bits));
}

double atlas_outcome_bits(const nlohmann::json& atlas) {
  for (const char* k : {"unigram_entropy_bits", "init_loss_bits"})
    if (atlas.contains(k) && atlas[k].is_number()) return atlas[k].get<double>();
  return NAN;
}

std::string doctor_class(const std::string& label) {
  const auto o = grid::outcome_from_string(label);
  if (!o || !grid::is_label(*o))
    throw InputError("label '" + label + "' (allowed: " + [] {
      std::string s;
      for (auto l : grid::kLabels) s += (s.empty() ? "" : ", ") + grid::to_string(l);
      return s;
    }() + ")");
  switch (*o) {
    case grid::Outcome::Trains: return "trains";
    case grid::Outcome::TooSlow:
    case grid::Outcome::Stalls: return "stalls";
    default: return "diverges";
  }
}

std::vector<std::string> atlas_run_overrides(const nlohmann::json& plan, const nlohmann::json& run) {
  const Config c = config_from_json(plan.at("config"));
  std::vector<std::string> o = sweep::scheme_row(run.at("scheme").get<std::string>()).overrides();
  o.push_back(fmt::format("model.decoder_layers={}", run.at("depth").get<int64_t>()));
  o.push_back(fmt::format("train.max_steps={}", plan.at("steps").get<int64_t>()));
  o.push_back(fmt::format("train.lr={:.10g}", run.at("lr").get<double>()));
  o.push_back(fmt::format("train.seed={}", c.train.seed + run.at("seed").get<int64_t>()));
  o.push_back(
      fmt::format("train.warmup_steps={}", run.at("warmup").get<bool>() ? plan.at("warmup").get<int64_t>() : 0));
  return o;
}

Config atlas_run_config(const nlohmann::json& plan, const nlohmann::json& run) {
  Config c = config_from_json(plan.at("config"));
  for (auto& kv : atlas_run_overrides(plan, run)) apply_override(c, kv);
  validate(c);
  return c;
}

nlohmann::json read_atlas_json(const std::string& atlas_dir) {
  const auto atlas_path = fs::path(atlas_dir) / "atlas.json";
  std::ifstream in(atlas_path);
  if (!in) throw InputError("no atlas at '" + atlas_dir + "' (atlas.json missing; run `stx experiment atlas` first)");
  nlohmann::json atlas;
  try {
    in >> atlas;
  } catch (const std::exception& e) {
    throw InputError("'" + atlas_path.string() + "' is not JSON: " + e.what());
  }
  if (!atlas.contains("runs") || !atlas.contains("plan"))
    throw InputError("'" + atlas_path.string() + "' is not an atlas report (no \"runs\" or \"plan\")");
  return atlas;
}

int collect(const CollectOptions& o) {
  const auto atlas = read_atlas_json(o.atlas_dir);
  const double unigram = atlas_outcome_bits(atlas);
  const auto& plan = atlas["plan"];
  std::vector<Example> examples;
  std::map<std::string, size_t> have;
  if (fs::exists(o.out)) examples = read_dataset(o.out);
  for (size_t i = 0; i < examples.size(); ++i) have[examples[i].name] = i;
  std::vector<const nlohmann::json*> pending;
  for (auto& r : atlas["runs"]) {
    const auto outcome = r.value("outcome", "");
    const auto label = grid::outcome_from_string(outcome);
    if (!(label && grid::is_label(*label)) && outcome != "converged" && outcome != "stalled" && outcome != "diverged")
      continue;  // not ended (the spellings before the labels count)
    if (!have.count(r.value("name", ""))) pending.push_back(&r);
  }
  int added = 0, probed = 0;
  for (auto* rp : pending) {
    if (stop_signal()) break;
    const auto& r = *rp;
    Example e;
    e.name = r.at("name"), e.scheme = r.at("scheme"), e.depth = r.at("depth"), e.lr = r.at("lr");
    e.warmup = r.at("warmup"), e.seed = r.value("seed", int64_t{0}), e.steps = plan.at("steps");
    e.label = atlas_label(r, unigram);
    const auto& rd = r.contains("reading") && r["reading"].is_object() ? r["reading"] : nlohmann::json::object();
    e.failure = rd.value("failure", "");
    if (rd.contains("failure_step") && rd["failure_step"].is_number())
      e.failure_step = rd["failure_step"].get<int64_t>();
    if (rd.contains("final_bpb") && rd["final_bpb"].is_number()) e.final_bpb = rd["final_bpb"].get<double>();
    const Config c = atlas_run_config(plan, r);
    const int64_t horizon = default_horizon(c);
    e.regime = regime_of(c);
    const auto log = metrics::path_in((fs::path(o.atlas_dir) / "runs" / e.name).string());
    if (fs::exists(log)) {
      e.source = "run";
      e.early = early_of(metrics::read_metrics(log).records, horizon);
    } else {
      e.source = "probe";
      e.early = probe(c, horizon, /*quiet=*/true).early;
      ++probed;
    }
    examples.push_back(e);
    ++added;
    write_dataset(o.out, examples);
    if (!o.quiet) std::cerr << fmt::format("[{}/{}] {}: {} ({})\n", added, pending.size(), e.name, e.label, e.source);
  }
  if (!o.quiet)
    std::cout << fmt::format("doctor collect: {} examples added ({} probed again), {} in {}\n", added, probed,
                             examples.size(), o.out);
  return stop_signal() ? 128 + stop_signal() : 0;
}

}  // namespace stx::doctor
