#include "stx/theory/experiment.h"

#include <cmath>

namespace stx::theory {

Claim& Result::near(std::string id, std::string statement, double predicted, double measured, double tol, bool theory) {
  Claim c{std::move(id), std::move(statement), predicted, measured, tol, std::abs(measured - predicted) <= tol, theory};
  claims.push_back(std::move(c));
  return claims.back();
}

Claim& Result::within(std::string id, std::string statement, double lo, double hi, double measured, double tol,
                      bool theory) {
  Claim c{std::move(id),
          std::move(statement),
          nlohmann::json::array({lo, hi}),
          measured,
          tol,
          measured >= lo - tol && measured <= hi + tol,
          theory};
  claims.push_back(std::move(c));
  return claims.back();
}

bool Result::all_theory_claims_hold() const {
  for (auto& c : claims)
    if (c.theory && !c.holds) return false;
  return true;
}

nlohmann::json Result::to_json() const {
  nlohmann::json j;
  j["experiment"] = experiment;
  j["config"] = config;
  j["claims"] = nlohmann::json::array();
  for (auto& c : claims)
    j["claims"].push_back({{"id", c.id},
                           {"statement", c.statement},
                           {"predicted", c.predicted},
                           {"measured", c.measured},
                           {"tolerance", c.tolerance},
                           {"holds", c.holds},
                           {"kind", c.theory ? "theory" : "observation"}});
  j["series"] = series;
  j["findings"] = findings;
  return j;
}

}  // namespace stx::theory
