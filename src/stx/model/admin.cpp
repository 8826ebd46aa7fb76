#include "stx/model/admin.h"

#include <cmath>

namespace stx {

void AdminProfile::add(const std::string& name, const torch::Tensor& skip, const torch::Tensor& branch) {
  const double vs = skip.to(torch::kFloat64).var(/*unbiased=*/false).item<double>();
  const double vb = branch.to(torch::kFloat64).var(/*unbiased=*/false).item<double>();
  records.push_back({stack + ".layers." + name, omega, vs, vb});
  omega = std::sqrt(vs + vb);
}

}  // namespace stx
