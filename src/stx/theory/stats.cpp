#include "stx/theory/stats.h"

#include <cmath>

namespace stx::theory {

MeanSE mean_se(const std::vector<double>& xs) {
  MeanSE r;
  r.n = static_cast<int>(xs.size());
  if (r.n == 0) return r;
  for (double x : xs) r.mean += x;
  r.mean /= r.n;
  if (r.n < 2) return r;
  double ss = 0;
  for (double x : xs) ss += (x - r.mean) * (x - r.mean);
  r.sd = std::sqrt(ss / (r.n - 1));
  r.se = r.sd / std::sqrt(static_cast<double>(r.n));
  return r;
}

Fit linear_fit(const std::vector<double>& x, const std::vector<double>& y) {
  Fit f;
  const size_t n = x.size();
  if (n < 2) return f;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= n;
  my /= n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) sxx += (x[i] - mx) * (x[i] - mx), sxy += (x[i] - mx) * (y[i] - my);
  f.slope = sxy / sxx;
  f.intercept = my - f.slope * mx;
  if (n >= 3) {
    double rss = 0;
    for (size_t i = 0; i < n; ++i) {
      const double e = y[i] - f.intercept - f.slope * x[i];
      rss += e * e;
    }
    f.slope_se = std::sqrt(rss / (n - 2) / sxx);
  }
  return f;
}

Fit loglog_fit(const std::vector<double>& x, const std::vector<double>& y) {
  std::vector<double> lx, ly;
  for (size_t i = 0; i < x.size(); ++i) lx.push_back(std::log(x[i])), ly.push_back(std::log(y[i]));
  return linear_fit(lx, ly);
}

}  // namespace stx::theory
