// stx/doctor/logistic.h — L2-regularized logistic regression, fitted by Newton's method
// (iteratively reweighted least squares), on standardized inputs: the doctor's predictor is
// small enough to print and read (docs/doctor.md).
//   p(y = 1 | x) = σ(b + Σ_i w_i (x_i − μ_i) / s_i)
//   minimizes Σ_n log(1 + exp(−ỹ_n f(x_n))) + (λ/2) ‖w‖²   (ỹ = ±1; b not penalized)
// A missing input (doctor_signals.h kMissing) is read as its training mean: it adds nothing.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace stx::doctor {

struct Logistic {
  std::vector<std::string> names;
  std::vector<double> mean, scale, w;
  double b = 0;
  double l2 = 0;
  int iterations = 0;

  double logit(const std::vector<double>& x) const;
  double prob(const std::vector<double>& x) const;
  // w_i · z_i of each input: what pushed the logit (for the evidence).
  std::vector<double> contributions(const std::vector<double>& x) const;
};

// Fits on rows X (each in `names` order) and labels y ∈ {0, 1}; only the columns in `use`
// (indices into names) enter, the rest get weight 0. Throws InputError on an empty or one-class set.
Logistic fit_logistic(const std::vector<std::vector<double>>& X, const std::vector<int>& y,
                      const std::vector<std::string>& names, const std::vector<size_t>& use, double l2);

nlohmann::json to_json(const Logistic& m);
Logistic logistic_from_json(const nlohmann::json& j);

// Area under the ROC curve of scores for labels (1 = positive): the probability that a random
// positive scores above a random negative, ties counting one half (Mann–Whitney). NaN if a
// class is empty.
double auroc(const std::vector<double>& score, const std::vector<int>& y);

}  // namespace stx::doctor
