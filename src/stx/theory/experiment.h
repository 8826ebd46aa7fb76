// stx/theory/experiment.h — what a theory experiment is: options in, claims (predicted vs
// measured, with a tolerance and a verdict), findings in plain words, series for figures out.
// Each experiment lives in its own file (lemma2.cpp, …) and registers itself in registry.cpp.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace stx::theory {

// Options shared by all experiments; each reads the ones it uses and documents its defaults.
struct Options {
  bool full = false;  // paper-sized settings instead of the quick defaults
  uint64_t seed = 0;  // base seed (seed s of a multi-seed run uses seed + s)
  std::optional<int64_t> d, layers, d_ff, seeds, tokens, steps;
  std::optional<std::vector<int64_t>> depths;  // depth grids (theorem1, deepnet-update)
  std::optional<double> lr;
};

struct Claim {
  std::string id;            // "post_ratio_l3"
  std::string statement;     // "E‖x^{post,5}_3‖²/d = 3/2"
  nlohmann::json predicted;  // a number, or [lo, hi] for an interval
  double measured = 0;
  nlohmann::json tolerance;  // a number (absolute), or a string explaining the test
  bool holds = false;
  // true: a claim the theory makes under its own assumptions (must hold); false: a
  // comparison with a paper's description or an outside-the-assumptions probe (reported).
  bool theory = true;
};

struct Result {
  std::string experiment;
  nlohmann::json config;  // the settings actually used
  std::vector<Claim> claims;
  nlohmann::json series = nlohmann::json::object();  // data behind the figure
  std::vector<std::string> findings;                 // plain-words observations, with numbers
  // gnuplot script body for the figure: receives the path of a data directory where
  // write_data() files are, and the output PNG path. Empty: no figure.
  std::function<std::string(const std::string& data_dir, const std::string& png)> plot;
  std::vector<std::pair<std::string, std::string>> data_files;  // name → whitespace table text

  // Convenience: record a claim "measured within tol of predicted".
  Claim& near(std::string id, std::string statement, double predicted, double measured, double tol, bool theory = true);
  // Record a claim "lo ≤ measured ≤ hi" (tol widens both ends).
  Claim& within(std::string id, std::string statement, double lo, double hi, double measured, double tol,
                bool theory = true);
  bool all_theory_claims_hold() const;
  nlohmann::json to_json() const;
};

struct Experiment {
  std::string name, summary;
  std::function<Result(const Options&)> run;
};

const std::vector<Experiment>& experiments();
const Experiment* find_experiment(const std::string& name);

}  // namespace stx::theory
