// stx/doctor/doctor_model.cpp — see doctor_model.h.
#include "stx/doctor/doctor_model.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "stx/core/error.h"
#include "stx/core/user_path.h"
#include "stx/doctor/doctor_signals.h"

namespace stx::doctor {

nlohmann::json regime_of(const Config& c) {
  return {{"model.arch", to_string(c.model.arch)},
          {"model.d_model", c.model.d_model},
          {"model.n_heads", c.model.n_heads},
          {"model.d_ff", c.model.d_ff},
          {"model.max_len", c.model.max_len},
          {"data.task", to_string(c.data.task)},
          {"data.corpus", c.data.corpus},
          {"data.tokenizer", to_string(c.data.tokenizer)},
          {"train.optimizer", to_string(c.train.optimizer)}};
}

std::string regime_mismatch(const DoctorModel& m, const Config& c) {
  const auto now = regime_of(c);
  std::string out;
  for (auto& [k, v] : m.regime.items())
    if (now.contains(k) && now[k] != v)
      out += (out.empty() ? "" : ", ") + fmt::format("{} {} (fitted: {})", k, now[k].dump(), v.dump());
  return out;
}

std::string signals_outside(const DoctorModel& m, const std::vector<double>& x) {
  const auto& names = signal_names();
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (m.fail.w[i] == 0 || x[i] == kMissing) continue;
    const auto& r = m.ranges[i];
    const double slack = 0.25 * (r.hi - r.lo);
    if (x[i] < r.lo - slack || x[i] > r.hi + slack)
      out +=
          (out.empty() ? "" : ", ") + fmt::format("{} = {:.3g} (fitted {:.3g} … {:.3g})", names[i], x[i], r.lo, r.hi);
  }
  return out;
}

nlohmann::json to_json(const DoctorModel& m) {
  nlohmann::json ranges = nlohmann::json::object();
  const auto& names = signal_names();
  for (size_t i = 0; i < names.size() && i < m.ranges.size(); ++i)
    ranges[names[i]] = {{"lo", m.ranges[i].lo},
                        {"hi", m.ranges[i].hi},
                        {"trains_p10_p50_p90", m.ranges[i].trains_q},
                        {"fails_p10_p50_p90", m.ranges[i].fails_q}};
  nlohmann::json atlas = nlohmann::json::array();
  for (auto& c : m.atlas) {
    nlohmann::json j = {{"scheme", c.scheme}, {"depth", c.depth}, {"trained_lrs", c.trained_lrs}};
    j["best_lr"] = c.best_lr ? nlohmann::json(*c.best_lr) : nlohmann::json(nullptr);
    j["best_bpb"] = c.best_bpb ? nlohmann::json(*c.best_bpb) : nlohmann::json(nullptr);
    atlas.push_back(j);
  }
  return {{"stx_doctor_model", 1},
          {"horizon_fraction", m.horizon_fraction},
          {"threshold", m.threshold},
          {"regime", m.regime},
          {"fails", to_json(m.fail)},
          {"diverges_given_fails", m.diverge_fitted ? to_json(m.diverge) : nlohmann::json(nullptr)},
          {"diverge_prior", m.diverge_prior},
          {"signal_ranges", ranges},
          {"atlas", atlas},
          {"fitted_on", m.fitted_on}};
}

DoctorModel model_from_json(const nlohmann::json& j) {
  if (j.value("stx_doctor_model", 0) != 1) throw InputError("not a doctor model (no \"stx_doctor_model\": 1)");
  DoctorModel m;
  m.horizon_fraction = j.at("horizon_fraction").get<double>();
  if (!(m.horizon_fraction > 0 && m.horizon_fraction <= 1))
    throw InputError(fmt::format("horizon_fraction {}: must be in (0, 1]", m.horizon_fraction));
  m.threshold = j.at("threshold").get<double>();
  m.regime = j.at("regime");
  m.fail = logistic_from_json(j.at("fails"));
  if (j.contains("diverges_given_fails") && !j["diverges_given_fails"].is_null())
    m.diverge = logistic_from_json(j["diverges_given_fails"]), m.diverge_fitted = true;
  m.diverge_prior = j.value("diverge_prior", 0.5);
  const auto& names = signal_names();
  m.ranges.assign(names.size(), {});
  for (size_t i = 0; i < names.size(); ++i) {
    if (!j.at("signal_ranges").contains(names[i])) throw InputError("no range for signal '" + names[i] + "'");
    const auto& r = j["signal_ranges"][names[i]];
    m.ranges[i].lo = r.at("lo").get<double>(), m.ranges[i].hi = r.at("hi").get<double>();
    m.ranges[i].trains_q = r.at("trains_p10_p50_p90").get<std::vector<double>>();
    m.ranges[i].fails_q = r.at("fails_p10_p50_p90").get<std::vector<double>>();
  }
  for (auto& c : j.at("atlas")) {
    AtlasCell a;
    a.scheme = c.at("scheme"), a.depth = c.at("depth"), a.trained_lrs = c.at("trained_lrs").get<std::vector<double>>();
    if (c.contains("best_lr") && c["best_lr"].is_number()) a.best_lr = c["best_lr"].get<double>();
    if (c.contains("best_bpb") && c["best_bpb"].is_number()) a.best_bpb = c["best_bpb"].get<double>();
    m.atlas.push_back(a);
  }
  m.fitted_on = j.value("fitted_on", nlohmann::json::object());
  return m;
}

DoctorModel load_model(const std::string& path) {
  require_regular_file(path, "the doctor model", "fit one with `stx doctor fit`");
  std::ifstream in(path);
  if (!in) throw InputError("cannot read the doctor model '" + path + "' (fit one with `stx doctor fit`)");
  try {
    nlohmann::json j;
    in >> j;
    return model_from_json(j);
  } catch (const InputError& e) {
    throw InputError("doctor model '" + path + "': " + e.what());
  } catch (const std::exception& e) {
    throw InputError("doctor model '" + path + "' is not a valid model: " + e.what());
  }
}

std::string default_model_path() {
  return (std::filesystem::path(STX_SOURCE_DIR) / "data" / "doctor" / "model.json").string();
}

}  // namespace stx::doctor
