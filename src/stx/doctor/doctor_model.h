// stx/doctor/doctor_model.h — the fitted doctor (data/doctor/model.json, written by
// `stx doctor fit`, docs/doctor.md): two logistic models over the signals at the probe horizon,
//   P(fails)              fails = diverges or stalls (doctor_dataset.h)
//   P(diverges | fails)   which failure
// the ranges of every signal in the runs it was fitted on (a config outside them is not judged),
// the signal quantiles of runs that trained and runs that failed (the printed evidence), the
// fitted regime (model shape, task, data) and, per scheme and depth of the fit, the learning
// rates that trained (the prescriptions' rate caps).
#pragma once
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "stx/config/config.h"
#include "stx/doctor/logistic.h"

namespace stx::doctor {

struct SignalRange {
  double lo = 0, hi = 0;                  // over the fitted runs
  std::vector<double> trains_q, fails_q;  // 10th, 50th, 90th percentiles (empty: none)
};

struct AtlasCell {
  std::string scheme;
  int64_t depth = 0;
  std::vector<double> trained_lrs;  // increasing (with warm-up)
  std::optional<double> best_lr, best_bpb;
};

struct DoctorModel {
  double horizon_fraction = 0.05;
  double threshold = 0.5;  // P(fails) at or above: predicted to fail
  nlohmann::json regime;   // model.arch, d_model, n_heads, d_ff, max_len, data.task, corpus, tokenizer
  Logistic fail, diverge;
  double diverge_prior = 0.5;  // P(diverges | fails) when the fit had one kind of failure only
  bool diverge_fitted = false;
  std::vector<SignalRange> ranges;  // signal_names() order
  std::vector<AtlasCell> atlas;
  nlohmann::json fitted_on;  // the split, counts, command
};

nlohmann::json regime_of(const Config& c);
// "" when every signal with a weight lies within the fitted range widened by a quarter of its
// span on each side, else which do not ("grad_reach = -9.1 (fitted -3.2 … 0.4)").
std::string signals_outside(const DoctorModel& m, const std::vector<double>& x);
// "" when c is in the fitted regime, else why not ("model.d_model 512 (fitted: 64)").
std::string regime_mismatch(const DoctorModel& m, const Config& c);

nlohmann::json to_json(const DoctorModel& m);
DoctorModel model_from_json(const nlohmann::json& j);
DoctorModel load_model(const std::string& path);  // InputError on a missing or bad file
std::string default_model_path();                 // <source>/data/doctor/model.json

}  // namespace stx::doctor
