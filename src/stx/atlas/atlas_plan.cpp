// stx/atlas/atlas_plan.cpp — see atlas_plan.h.
#include "stx/atlas/atlas_plan.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "stx/config/config_io.h"
#include "stx/core/error.h"
#include "stx/grid/grid_plan.h"
#include "stx/sweep/sweep_plan.h"

namespace stx::atlas {

namespace {

// Keys every run sets itself: differences in the base config there change no run.
std::set<std::string> own_keys(const AtlasPlan& p) {
  std::set<std::string> k{"train.max_steps",     "train.lr", "train.seed", "train.warmup_steps", "model.decoder_layers",
                          "model.encoder_layers"};
  for (auto& s : p.schemes)
    for (auto& o : sweep::scheme_row(s).overrides()) k.insert(o.substr(0, o.find('=')));
  return k;
}

}  // namespace

size_t nearest_rate(const std::vector<double>& lrs, double lr) {
  size_t best = 0;
  for (size_t i = 1; i < lrs.size(); ++i)
    if (std::abs(std::log(lrs[i] / lr)) < std::abs(std::log(lrs[best] / lr))) best = i;
  return best;
}

std::vector<double> parse_rates(const std::string& text) {
  std::vector<double> out;
  size_t start = 0;
  while (start <= text.size()) {
    const auto comma = text.find(',', start);
    const auto item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    size_t used = 0;
    double v = 0;
    try {
      v = std::stod(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || !std::isfinite(v) || v <= 0)
      throw InputError("--lrs '" + text + "': '" + item + "' is not a positive number (expected e.g. 1e-4,3e-4,1e-3)");
    if (!out.empty() && v <= out.back()) throw InputError("--lrs '" + text + "': the rates must increase");
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

AtlasPlan make_plan(const std::string& config_path, const std::vector<std::string>& overrides,
                    const std::vector<std::string>& schemes, const std::vector<int64_t>& depths,
                    const std::vector<double>& lrs, int64_t seeds, int64_t steps, int64_t warmup, double nowarm_lr,
                    int64_t neighbours, bool quick) {
  if (steps <= 0) throw InputError(fmt::format("--steps {}: must be a positive number of updates", steps));
  if (seeds < 1) throw InputError(fmt::format("--seeds {}: must be at least 1", seeds));
  if (warmup < 0 || warmup >= steps)
    throw InputError(fmt::format("--warmup {}: must be ≥ 0 and below --steps {}", warmup, steps));
  if (nowarm_lr < 0 || !std::isfinite(nowarm_lr))
    throw InputError(fmt::format("--nowarm-lr {}: must be a positive rate, or 0 for no such column", nowarm_lr));
  if (neighbours < 0) throw InputError(fmt::format("--neighbours {}: must be ≥ 0", neighbours));
  if (schemes.empty() || depths.empty() || lrs.empty())
    throw InputError("the atlas needs at least one scheme, one depth and one learning rate");
  AtlasPlan p;
  p.config_path = config_path, p.overrides = overrides, p.base = resolve_config(config_path, overrides);
  p.schemes = schemes, p.depths = depths, p.lrs = lrs, p.seeds = seeds, p.steps = steps, p.warmup = warmup;
  p.nowarm_lr = nowarm_lr, p.neighbours = neighbours, p.quick = quick;
  std::sort(p.depths.begin(), p.depths.end());
  if (p.base.model.arch != Arch::Decoder || p.base.data.task != Task::LM)
    throw InputError("--config " + config_path +
                     ": the atlas trains decoder language models (model.arch: decoder, "
                     "data.task: lm); configs/atlas.yaml is one");
  grid::refuse_own_keys(overrides, own_keys(p), "the atlas", "use --schemes, --depths, --lrs, --seeds or --steps");
  std::vector<grid::PlannedRun> runs;
  for (auto& r : all_runs(p)) runs.push_back({r.name, run_overrides(p, r)});
  grid::validate_runs(p.base, runs);
  return p;
}

std::vector<AtlasRun> all_runs(const AtlasPlan& p) {
  std::vector<AtlasRun> out;
  for (size_t di = 0; di < p.depths.size(); ++di)
    for (auto& s : p.schemes) {
      for (size_t li = 0; li < p.lrs.size(); ++li)
        out.push_back({s, p.depths[di], static_cast<int64_t>(di), li, p.lrs[li], 0, true, ""});
      if (p.nowarm_lr > 0 && p.warmup > 0 && di < 2)
        out.push_back(
            {s, p.depths[di], static_cast<int64_t>(di), nearest_rate(p.lrs, p.nowarm_lr), p.nowarm_lr, 0, false, ""});
      for (int64_t k = 1; k < p.seeds; ++k)  // candidates: atlas_runner's rule_out keeps those near the best
        for (size_t li = 0; li < p.lrs.size(); ++li)
          out.push_back({s, p.depths[di], static_cast<int64_t>(di), li, p.lrs[li], k, true, ""});
    }
  for (auto& r : out) r.name = run_name(r);
  return out;
}

std::string run_name(const AtlasRun& r) {
  return fmt::format("{}-L{}-lr{:g}{}{}", r.scheme, r.depth, r.lr, r.seed ? fmt::format("-s{}", r.seed) : "",
                     r.warmup ? "" : "-nowarm");
}

std::vector<std::string> run_overrides(const AtlasPlan& p, const AtlasRun& r) {
  std::vector<std::string> o = sweep::scheme_row(r.scheme).overrides();
  o.push_back(fmt::format("model.decoder_layers={}", r.depth));
  o.push_back(fmt::format("train.max_steps={}", p.steps));
  o.push_back(fmt::format("train.lr={:.10g}", r.lr));
  o.push_back(fmt::format("train.seed={}", p.base.train.seed + r.seed));
  o.push_back(fmt::format("train.warmup_steps={}", r.warmup ? p.warmup : 0));
  return o;
}

nlohmann::json plan_json(const AtlasPlan& p) {
  return {{"config_path", p.config_path},
          {"overrides", p.overrides},
          {"config", config_to_json(p.base)},
          {"steps", p.steps},
          {"warmup", p.warmup},
          {"nowarm_lr", p.nowarm_lr},
          {"schemes", p.schemes},
          {"depths", p.depths},
          {"lrs", p.lrs},
          {"seeds", p.seeds},
          {"neighbours", p.neighbours}};
}

std::string plan_mismatch(const nlohmann::json& stored, const AtlasPlan& p) {
  for (const char* k : {"steps", "config", "warmup"})
    if (!stored.contains(k)) return std::string("its atlas_plan.json lacks \"") + k + "\"";
  if (stored["steps"] != p.steps)
    return fmt::format("it was run with --steps {}, not {}", stored["steps"].dump(), p.steps);
  if (stored["warmup"] != p.warmup)
    return fmt::format("it was run with --warmup {}, not {}", stored["warmup"].dump(), p.warmup);
  return grid::config_mismatch(stored["config"], p.base, own_keys(p));
}

}  // namespace stx::atlas
