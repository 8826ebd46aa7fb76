// stx/doctor/logistic.cpp — see logistic.h.
#include "stx/doctor/logistic.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "stx/core/error.h"
#include "stx/doctor/doctor_signals.h"

namespace stx::doctor {

namespace {

double sigmoid(double t) { return t >= 0 ? 1.0 / (1.0 + std::exp(-t)) : std::exp(t) / (1.0 + std::exp(t)); }

// Solves A x = r for a symmetric positive definite A (n × n, row-major) by Cholesky.
std::vector<double> solve_spd(std::vector<double> A, std::vector<double> r, size_t n) {
  for (size_t j = 0; j < n; ++j) {
    double d = A[j * n + j];
    for (size_t k = 0; k < j; ++k) d -= A[j * n + k] * A[j * n + k];
    d = std::sqrt(std::max(d, 1e-300));
    A[j * n + j] = d;
    for (size_t i = j + 1; i < n; ++i) {
      double s = A[i * n + j];
      for (size_t k = 0; k < j; ++k) s -= A[i * n + k] * A[j * n + k];
      A[i * n + j] = s / d;
    }
  }
  for (size_t i = 0; i < n; ++i) {  // L y = r
    for (size_t k = 0; k < i; ++k) r[i] -= A[i * n + k] * r[k];
    r[i] /= A[i * n + i];
  }
  for (size_t i = n; i-- > 0;) {  // Lᵀ x = y
    for (size_t k = i + 1; k < n; ++k) r[i] -= A[k * n + i] * r[k];
    r[i] /= A[i * n + i];
  }
  return r;
}

}  // namespace

double Logistic::logit(const std::vector<double>& x) const {
  double t = b;
  for (size_t i = 0; i < w.size(); ++i)
    if (w[i] != 0 && x[i] != kMissing) t += w[i] * (x[i] - mean[i]) / scale[i];
  return t;
}

double Logistic::prob(const std::vector<double>& x) const { return sigmoid(logit(x)); }

std::vector<double> Logistic::contributions(const std::vector<double>& x) const {
  std::vector<double> c(w.size(), 0.0);
  for (size_t i = 0; i < w.size(); ++i)
    if (x[i] != kMissing) c[i] = w[i] * (x[i] - mean[i]) / scale[i];
  return c;
}

Logistic fit_logistic(const std::vector<std::vector<double>>& X, const std::vector<int>& y,
                      const std::vector<std::string>& names, const std::vector<size_t>& use, double l2) {
  const size_t n = X.size(), p = names.size();
  const auto pos = std::count(y.begin(), y.end(), 1);
  if (n == 0 || pos == 0 || pos == static_cast<long>(n))
    throw InputError("logistic fit: needs examples of both classes (" + std::to_string(pos) + " of " +
                     std::to_string(n) + " positive)");
  Logistic m;
  m.names = names, m.l2 = l2;
  m.mean.assign(p, 0.0), m.scale.assign(p, 1.0), m.w.assign(p, 0.0);
  // Standardize each used column over its present values.
  for (size_t i : use) {
    double s = 0, s2 = 0, k = 0;
    for (auto& row : X)
      if (row[i] != kMissing) s += row[i], s2 += row[i] * row[i], ++k;
    if (k == 0) continue;
    m.mean[i] = s / k;
    const double var = s2 / k - m.mean[i] * m.mean[i];
    m.scale[i] = var > 1e-24 ? std::sqrt(var) : 1.0;
  }
  // Design matrix: a 1 column (the bias) and the used columns, standardized, missing → 0.
  const size_t q = use.size() + 1;
  std::vector<double> Z(n * q);
  for (size_t r = 0; r < n; ++r) {
    Z[r * q] = 1.0;
    for (size_t c = 0; c < use.size(); ++c) {
      const double v = X[r][use[c]];
      Z[r * q + c + 1] = v == kMissing ? 0.0 : (v - m.mean[use[c]]) / m.scale[use[c]];
    }
  }
  std::vector<double> beta(q, 0.0);
  beta[0] = std::log(static_cast<double>(pos) / static_cast<double>(n - pos));
  for (m.iterations = 1; m.iterations <= 100; ++m.iterations) {
    std::vector<double> H(q * q, 0.0), g(q, 0.0);
    for (size_t r = 0; r < n; ++r) {
      double t = 0;
      for (size_t c = 0; c < q; ++c) t += Z[r * q + c] * beta[c];
      const double pr = sigmoid(t), wt = std::max(pr * (1 - pr), 1e-12);
      for (size_t c = 0; c < q; ++c) {
        g[c] += (pr - y[r]) * Z[r * q + c];
        for (size_t d = 0; d <= c; ++d) H[c * q + d] += wt * Z[r * q + c] * Z[r * q + d];
      }
    }
    for (size_t c = 1; c < q; ++c) g[c] += l2 * beta[c], H[c * q + c] += l2;
    for (size_t c = 0; c < q; ++c)
      for (size_t d = c + 1; d < q; ++d) H[c * q + d] = H[d * q + c];
    H[0] += 1e-9;  // the bias is unpenalized: keep H positive definite on separable data
    const auto step = solve_spd(H, g, q);
    double moved = 0;
    for (size_t c = 0; c < q; ++c) beta[c] -= step[c], moved = std::max(moved, std::abs(step[c]));
    if (moved < 1e-10) break;
  }
  m.b = beta[0];
  for (size_t c = 0; c < use.size(); ++c) m.w[use[c]] = beta[c + 1];
  return m;
}

nlohmann::json to_json(const Logistic& m) {
  nlohmann::json w = nlohmann::json::object();
  for (size_t i = 0; i < m.names.size(); ++i)
    if (m.w[i] != 0) w[m.names[i]] = {{"weight", m.w[i]}, {"mean", m.mean[i]}, {"scale", m.scale[i]}};
  return {{"bias", m.b}, {"l2", m.l2}, {"iterations", m.iterations}, {"inputs", w}};
}

Logistic logistic_from_json(const nlohmann::json& j) {
  Logistic m;
  m.names = signal_names();
  const size_t p = m.names.size();
  m.mean.assign(p, 0.0), m.scale.assign(p, 1.0), m.w.assign(p, 0.0);
  m.b = j.at("bias").get<double>();
  m.l2 = j.value("l2", 0.0), m.iterations = j.value("iterations", 0);
  for (auto& [name, v] : j.at("inputs").items()) {
    const auto it = std::find(m.names.begin(), m.names.end(), name);
    if (it == m.names.end()) throw InputError("doctor model: unknown signal '" + name + "'");
    const auto i = static_cast<size_t>(it - m.names.begin());
    m.w[i] = v.at("weight").get<double>(), m.mean[i] = v.at("mean").get<double>();
    m.scale[i] = v.at("scale").get<double>();
    if (!(m.scale[i] > 0)) throw InputError("doctor model: signal '" + name + "' has a non-positive scale");
  }
  return m;
}

double auroc(const std::vector<double>& score, const std::vector<int>& y) {
  std::vector<size_t> idx(score.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return score[a] < score[b]; });
  // Mann–Whitney U from mid-ranks.
  double rank_sum = 0, npos = 0, nneg = 0;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j < idx.size() && score[idx[j]] == score[idx[i]]) ++j;
    const double mid = (static_cast<double>(i + j - 1)) / 2.0 + 1.0;
    for (size_t k = i; k < j; ++k)
      if (y[idx[k]] == 1) rank_sum += mid;
    i = j;
  }
  for (int v : y) (v == 1 ? npos : nneg) += 1;
  if (npos == 0 || nneg == 0) return NAN;
  return (rank_sum - npos * (npos + 1) / 2.0) / (npos * nneg);
}

}  // namespace stx::doctor
