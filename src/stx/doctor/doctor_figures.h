// stx/doctor/doctor_figures.h — the held-out test as figures (docs/doctor.md): the ROC curves
// of the doctor and the two baselines, and the doctor's calibration (P(fails) in bins against
// the observed failure rate).
#pragma once
#include <string>
#include <vector>

namespace stx::doctor {

struct Curve {
  std::string label;
  std::vector<double> score;  // NaN: not judged (left out)
  std::vector<int> y;
};

void draw_roc(const std::string& png, const std::string& title, const std::vector<Curve>& curves);
void draw_calibration(const std::string& png, const std::string& title, const Curve& c, int bins = 5);

}  // namespace stx::doctor
