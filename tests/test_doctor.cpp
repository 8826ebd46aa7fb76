// Unit tests of stx doctor's parts: the logistic fit recovers the coefficients that generated
// its data; AUROC by hand (ties count one half); the signals at the horizon from hand-made
// lines; a divergence in the probe; the model's JSON round trip; the verdict's refusals (outside
// the fitted regime or ranges) and its prescription; the run watch; which earlier reruns verify
// may keep.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "stx/config/config_io.h"
#include "stx/core/error.h"
#include "stx/doctor/doctor_dataset.h"
#include "stx/doctor/doctor_model.h"
#include "stx/doctor/doctor_signals.h"
#include "stx/doctor/doctor_verdict.h"
#include "stx/doctor/doctor_verify.h"
#include "stx/doctor/logistic.h"
#include "stx/doctor/run_watch.h"

namespace stx::doctor {
namespace {

TEST(Doctor, LogisticFitRecoversTheGeneratingCoefficients) {
  std::mt19937_64 g(7);
  std::normal_distribution<double> n(0.0, 1.0);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  const auto& names = signal_names();
  std::vector<std::vector<double>> X;
  std::vector<int> y;
  for (int i = 0; i < 20000; ++i) {
    std::vector<double> x(names.size(), 0.0);
    x[0] = 3.0 + 2.0 * n(g);  // mean 3, scale 2: the fit standardizes
    x[1] = n(g);
    x[2] = n(g);  // not used by the truth
    const double t = 0.5 + 1.5 * (x[0] - 3.0) / 2.0 - 1.0 * x[1];
    y.push_back(u(g) < 1.0 / (1.0 + std::exp(-t)) ? 1 : 0);
    X.push_back(x);
  }
  const auto m = fit_logistic(X, y, names, {0, 1, 2}, 0.0);
  EXPECT_NEAR(m.mean[0], 3.0, 0.05);
  EXPECT_NEAR(m.scale[0], 2.0, 0.05);
  EXPECT_NEAR(m.w[0], 1.5, 0.08);
  EXPECT_NEAR(m.w[1], -1.0, 0.08);
  EXPECT_NEAR(m.w[2], 0.0, 0.06);
  EXPECT_NEAR(m.b, 0.5, 0.06);
  EXPECT_EQ(m.w[3], 0.0);  // not in `use`
  // L2 shrinks the weights toward 0.
  const auto r = fit_logistic(X, y, names, {0, 1, 2}, 5000.0);
  EXPECT_LT(std::abs(r.w[0]), std::abs(m.w[0]) * 0.9);
  // A missing input adds nothing to the logit.
  std::vector<double> x(names.size(), 0.0);
  x[0] = kMissing, x[1] = 0.0, x[2] = 0.0;
  EXPECT_DOUBLE_EQ(m.logit(x), m.b + m.w[1] * (0.0 - m.mean[1]) / m.scale[1] + m.w[2] * (0.0 - m.mean[2]) / m.scale[2]);
  EXPECT_THROW(fit_logistic(X, std::vector<int>(X.size(), 1), names, {0}, 1.0), stx::InputError);
}

TEST(Doctor, AurocByHand) {
  // positives 0.35, 0.8 vs negatives 0.1, 0.4: pairs won 1 + 2 of 4 → 0.75.
  EXPECT_DOUBLE_EQ(auroc({0.1, 0.4, 0.35, 0.8}, {0, 0, 1, 1}), 0.75);
  EXPECT_DOUBLE_EQ(auroc({0.5, 0.5}, {0, 1}), 0.5);
  EXPECT_DOUBLE_EQ(auroc({0.9, 0.1}, {0, 1}), 0.0);
  EXPECT_TRUE(std::isnan(auroc({0.1, 0.2}, {1, 1})));
}

nlohmann::json line_json(int64_t step, double loss, double lr, double logit, double logz) {
  return {{"step", step},
          {"loss", loss},
          {"lr", lr},
          {"grad_norm", 2.0},
          {"grad_norm_layer", {{"decoder", {0.1, 0.5, 1.0}}}},
          {"delta_f", 3.0 * static_cast<double>(step)},
          {"delta_f_step", 30.0},
          {"attn_max_logit", {{"decoder", {{"self_attn", {logit - 1, logit}}}}}},
          {"attn_entropy", {{"decoder", {{"self_attn", {{"mean", {1.5, 3.0}}, {"min_head", {0.2, 2.0}}}}}}}},
          {"log_z", {{"mean", 1.0}, {"max", logz}}},
          {"ln_input_norm", {{"decoder", {{"self_attn_layer_norm", {1.0, 100.0}}}}}},
          {"param_norm", 50.0}};
}

TEST(Doctor, SignalsAtTheHorizon) {
  std::vector<nlohmann::json> rec{line_json(10, 4.0, 0.5e-3, 2.0, 5.0),
                                  line_json(20, 3.0, 1e-3, 6.0, 5.5),
                                  {{"step", 20}, {"valid_loss", 3.0}},
                                  line_json(30, 2.5, 1e-3, 9.0, 7.0)};
  const auto e = early_of(metrics::records_of(rec), 20);
  ASSERT_EQ(e.lines.size(), 2u);
  EXPECT_FALSE(e.diverged_step);
  const auto s = signals_at(e.lines, 20, 2e-3);
  ASSERT_TRUE(s);
  EXPECT_EQ(s->step, 20);
  const auto& x = s->x;
  EXPECT_NEAR(x[0], slog(3.0 / std::log(2.0)), 1e-12);  // loss in bits, slog
  EXPECT_NEAR(unslog(x[0]), 3.0 / std::log(2.0), 1e-12);
  EXPECT_NEAR(x[1], std::log10(2.0), 1e-12);          // grad_norm
  EXPECT_NEAR(x[2], -1.0, 1e-12);                     // grad_reach: log10(0.1 / 1.0)
  EXPECT_NEAR(x[3], std::log10(30.0 / 10.0), 1e-12);  // ΔF per update
  EXPECT_NEAR(x[4], std::log10(7.0), 1e-12);          // attn_logit, slog
  EXPECT_NEAR(x[5], std::log10(5.0), 1e-12);          // growth since the first line, slog
  EXPECT_DOUBLE_EQ(x[6], 1.5);                        // layer entropies (head means)
  EXPECT_DOUBLE_EQ(x[7], 3.0);
  EXPECT_NEAR(x[8], std::log10(1.5), 1e-12);  // log Z drift, slog
  EXPECT_NEAR(x[9], 2.0, 1e-12);              // ln_input
  EXPECT_NEAR(x[10], std::log10(2e-3), 1e-12);
  EXPECT_DOUBLE_EQ(x[11], 0.5);                 // lr at K ÷ peak
  EXPECT_FALSE(signals_at(e.lines, 10, 2e-3));  // one line is not enough
  // A bottom-layer gradient of exactly zero (underflowed) is the smallest normal float's reach,
  // not a missing signal.
  auto zero = line_json(20, 3.0, 1e-3, 6.0, 5.5);
  zero["grad_norm_layer"]["decoder"] = {0.0, 0.5, 2.0};
  const auto z = line_of(metrics::record_of(zero, "zero"));
  ASSERT_TRUE(z && z->grad_reach);
  EXPECT_NEAR(*z->grad_reach, std::log10(std::numeric_limits<float>::min() / 2.0), 1e-9);
  // A divergence event up to the horizon is recorded; one after it is not.
  rec.insert(rec.begin() + 1,
             nlohmann::json{{"step", 15}, {"event", "divergence"}, {"cause", "non-finite loss"}, {"action", "skip"}});
  EXPECT_EQ(early_of(metrics::records_of(rec), 20).diverged_step.value_or(-1), 15);
  EXPECT_FALSE(early_of(metrics::records_of(rec), 12).diverged_step);
}

DoctorModel small_model() {
  DoctorModel m;
  const auto& names = signal_names();
  m.fail.names = names;
  m.fail.mean.assign(names.size(), 0.0), m.fail.scale.assign(names.size(), 1.0), m.fail.w.assign(names.size(), 0.0);
  m.fail.w[0] = 2.0, m.fail.mean[0] = 0.5;  // a high loss at K (slog bits) → fails
  m.fail.b = 0.0;
  m.diverge_prior = 0.2;
  m.ranges.assign(names.size(), {});
  for (auto& r : m.ranges) r.lo = 0, r.hi = 10, r.trains_q = {1, 2, 3}, r.fails_q = {4, 5, 6};
  m.regime = regime_of(Config{});
  m.atlas.push_back({"post", 6, {1e-3, 3e-3}, 1e-3, 3.5});
  return m;
}

TEST(Doctor, ModelJsonRoundTrip) {
  const auto m = small_model();
  const auto back = model_from_json(to_json(m));
  std::vector<double> x(signal_names().size(), 1.0);
  x[0] = 5.0;
  EXPECT_DOUBLE_EQ(back.fail.prob(x), m.fail.prob(x));
  EXPECT_EQ(back.atlas.size(), 1u);
  EXPECT_EQ(back.regime, m.regime);
  EXPECT_THROW(model_from_json({{"stx_doctor_model", 2}}), stx::InputError);
}

TEST(Doctor, VerdictRefusesOutsideTheFittedRangesAndRegime) {
  const auto m = small_model();
  Config c;
  c.model.arch = Arch::Decoder, c.model.decoder_layers = 6, c.train.lr = 1e-2, c.train.warmup_steps = 0;
  c.train.max_steps = 400;
  std::vector<nlohmann::json> rec{line_json(10, 5.0, 1e-2, 2.0, 5.0), line_json(20, 5.0, 1e-2, 2.0, 5.0)};
  // Every signal within 0 … 10: judged; loss slog(5 nats / ln 2) = 0.91 > 0.5 → fails.
  auto early = early_of(metrics::records_of(rec), 20);
  auto cfit = c;
  auto mm = m;
  mm.regime = regime_of(cfit);
  auto v = judge(mm, cfit, early, 20);
  ASSERT_TRUE(v.judged) << v.not_judged;
  EXPECT_EQ(v.outcome, "stalls");  // P(diverges | fails) = the prior 0.2
  EXPECT_GT(v.p_fail, 0.5);
  // No warm-up: the prescription adds one (10 % of the steps).
  EXPECT_NE(std::find(v.rx.overrides.begin(), v.rx.overrides.end(), "train.warmup_steps=40"), v.rx.overrides.end());
  // A loss beyond the fitted range plus a quarter of its span (slog 10 + 2.5): not judged.
  auto far = rec;
  far[1]["loss"] = 1e13;  // slog(1.44e13 bits) = 13.2
  v = judge(mm, cfit, early_of(metrics::records_of(far), 20), 20);
  EXPECT_FALSE(v.judged);
  EXPECT_NE(v.not_judged.find("loss"), std::string::npos) << v.not_judged;
  // Another model width: outside the fitted regime.
  auto wide = cfit;
  wide.model.d_model = 2 * cfit.model.d_model;
  v = judge(mm, wide, early, 20);
  EXPECT_FALSE(v.judged);
  EXPECT_NE(v.not_judged.find("model.d_model"), std::string::npos) << v.not_judged;
  // A divergence seen in the probe is the verdict, whatever the ranges.
  auto div = rec;
  div.insert(div.begin() + 1,
             nlohmann::json{{"step", 18}, {"event", "divergence"}, {"cause", "non-finite loss"}, {"action", "skip"}});
  v = judge(mm, wide, early_of(metrics::records_of(div), 20), 20);
  EXPECT_TRUE(v.judged && v.observed);
  EXPECT_EQ(v.outcome, "diverges");
}

TEST(Doctor, WatchFindsTheSignalThatLeftItsEarlyRange) {
  std::vector<nlohmann::json> rec{line_json(10, 3.0, 1e-3, 2.0, 5.0), line_json(20, 3.0, 1e-3, 2.0, 5.0),
                                  line_json(30, 3.0, 1e-3, 3.0, 5.0), line_json(40, 3.0, 1e-3, 5.0, 6.0),
                                  line_json(50, 7.0, 1e-3, 6.0, 12.0)};
  const auto w = watch_run(metrics::records_of(rec), 20);
  EXPECT_EQ(w.last_step, 50);
  ASSERT_EQ(w.moved.size(), 3u);
  EXPECT_EQ(w.moved[0], (std::pair<std::string, int64_t>{"attn_logit", 40}));  // 5 > 2 × 2
  EXPECT_EQ(w.moved[1].second, 50);
}

TEST(Doctor, AtlasLabels) {
  const double u = 4.431;  // the unigram entropy: a final loss ≥ 4.331 is the plateau
  auto run = [](const char* outcome, const char* failure, double bpb) {
    return nlohmann::json{{"outcome", outcome}, {"reading", {{"failure", failure}, {"final_bpb", bpb}}}};
  };
  // atlas.json entries from before the outcome labels (no curve: grid/outcome.h's fallback).
  EXPECT_EQ(atlas_label(run("converged", "", 3.4), u), "trains");
  EXPECT_EQ(atlas_label(run("converged", "", 4.34), u), "stalls");  // no gradient reach recorded
  EXPECT_EQ(atlas_label(run("converged", "", 4.32), u), "trains");
  EXPECT_EQ(atlas_label(run("converged", "loss spike", 3.4), u), "spiked and recovered");
  EXPECT_EQ(atlas_label(run("converged", "loss spike", 4.4), u), "diverges");
  EXPECT_EQ(atlas_label(run("diverged", "diverged (non-finite)", 3.4), u), "diverges");
  EXPECT_EQ(atlas_label(run("diverged", "loss spike", 3.4), u), "diverges");  // a spike, then the guard
  EXPECT_EQ(atlas_label(run("stalled", "stalled", 5.0), u), "stalls");
  auto reach = run("converged", "", 4.5);
  reach["reading"]["grad_reach"] = 0.2;
  EXPECT_EQ(atlas_label(reach, u), "too slow");
  reach["reading"]["grad_reach"] = 0.002;
  EXPECT_EQ(atlas_label(reach, u), "stalls");
  // With the labels: the curve decides; "guard_stop" says the guard stopped it.
  auto curve = run("stalls", "", 4.5);
  curve["reading"]["train_curve"] = nlohmann::json::array();
  for (int s = 1; s <= 8; ++s) curve["reading"]["train_curve"].push_back({s * 10, 6.0 - 0.1 * s});
  EXPECT_EQ(atlas_label(curve, u), "too slow");
  curve["reading"]["final_bpb"] = 4.0;
  EXPECT_EQ(atlas_label(curve, u), "trains");
  curve["guard_stop"] = true;
  EXPECT_EQ(atlas_label(curve, u), "diverges");
  // The doctor's three classes: the set it was fitted on (a spike was a failure, the plateau a stall).
  EXPECT_EQ(doctor_class("trains"), "trains");
  EXPECT_EQ(doctor_class("too slow"), "stalls");
  EXPECT_EQ(doctor_class("stalls"), "stalls");
  EXPECT_EQ(doctor_class("spiked and recovered"), "diverges");
  EXPECT_EQ(doctor_class("diverges"), "diverges");
  EXPECT_THROW(doctor_class("converged"), InputError);
  EXPECT_DOUBLE_EQ(atlas_outcome_bits({{"unigram_entropy_bits", nullptr}, {"init_loss_bits", 8.0}}), 8.0);
  EXPECT_DOUBLE_EQ(atlas_outcome_bits({{"unigram_entropy_bits", 4.4}, {"init_loss_bits", 8.0}}), 4.4);
}

TEST(Doctor, VerifyKeepsARerunOnlyForItsOwnPrescription) {
  const auto row = nlohmann::json::parse(
      R"({"name": "post-L6-lr0.1", "rerun": "trains",
          "verdict": {"prescription": {"text": "cap the rate", "set": ["train.lr=0.003", "train.warmup_steps=40"]}}})");
  EXPECT_TRUE(same_prescription(row, {"train.lr=0.003", "train.warmup_steps=40"}));
  EXPECT_FALSE(same_prescription(row, {"train.lr=0.001", "train.warmup_steps=40"}));  // refit changed the cap
  EXPECT_FALSE(same_prescription(row, {"train.lr=0.003"}));
  EXPECT_FALSE(same_prescription(row, {}));
  const auto none = nlohmann::json::parse(R"({"verdict": {"prescription": {"text": "", "set": []}}})");
  EXPECT_TRUE(same_prescription(none, {}));
  EXPECT_FALSE(same_prescription(none, {"model.scheme=pre"}));
  EXPECT_FALSE(same_prescription(nlohmann::json::parse(R"({"name": "x"})"), {}));  // no verdict: unknown
  EXPECT_FALSE(same_prescription(nlohmann::json::parse(R"({"verdict": {"prescription": {"set": [1]}}})"), {}));
}

}  // namespace
}  // namespace stx::doctor
