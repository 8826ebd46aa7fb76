// stx/theory/stats.h — the statistics the experiments use to turn samples into claims:
// mean with standard error, and least-squares slopes in log-log space with their standard error.
#pragma once
#include <vector>

namespace stx::theory {

struct MeanSE {
  double mean = 0, se = 0, sd = 0;
  int n = 0;
};
// Mean, sample standard deviation and standard error of the mean of xs.
MeanSE mean_se(const std::vector<double>& xs);

struct Fit {
  double slope = 0, intercept = 0, slope_se = 0;
};
// Ordinary least squares y = a + b x; slope_se from the residual variance (needs ≥ 3 points).
Fit linear_fit(const std::vector<double>& x, const std::vector<double>& y);
// Fit of log y against log x.
Fit loglog_fit(const std::vector<double>& x, const std::vector<double>& y);

}  // namespace stx::theory
