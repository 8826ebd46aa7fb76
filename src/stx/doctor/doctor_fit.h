// stx/doctor/doctor_fit.h — `stx doctor fit`: fits the doctor (doctor_model.h) on part of the
// atlas's runs and reports how it does on the rest (docs/doctor.md).
//   split     fit on the runs at --train-depths whose scheme is not held out; test on every
//             other run: the deeper rows, and the held-out schemes at every depth
//   signals   at the horizon K = ⌈5 % of the run's updates⌉ (doctor_signals.h); a run that
//             diverged by K is "observed" (P(fails) = 1), not fitted on
//   report    on the test runs: AUROC for "fails" (diverges or stalls) of the doctor and of the
//             two baselines (a logistic model of the loss at K alone, of the gradient norm at K
//             alone, fitted on the same runs), precision and recall at the threshold (by default the
//             one with the best F1 score on the fitted runs, never on the test runs), the Brier
//             score and calibration in five bins, the 3-class confusion, how many steps before
//             the failure the warning came, and how many runs the doctor declined to judge
// Writes the model (--model) and DIR/report.json, DIR/report.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace stx::doctor {

struct FitOptions {
  std::string data;                          // dataset.jsonl (doctor_dataset.h)
  std::string model_out;                     // model.json
  std::string report_dir;                    // report.json, report.md
  std::vector<int64_t> train_depths{6, 24};  // fitted on these depths …
  std::vector<std::string> holdout_schemes;  // … except these schemes
  double l2 = 1.0;
  double threshold = 0;  // P(fails) at which to flag; 0: the one with the best F1 on the fitted runs
  std::string command;
};

// Every fifth row of the scheme table used by the atlas (stx sweep's rows), from the fifth:
// the schemes held out by default, chosen by position, not by result.
std::vector<std::string> default_holdout_schemes();

int fit(const FitOptions& o);

}  // namespace stx::doctor
