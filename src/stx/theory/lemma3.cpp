// stx/theory/lemma3.cpp — Xiong et al. (ICML 2020), Lemma 3: ‖J_LN(x)‖₂ = O(√d/‖x‖).
//
// Measures the spectral norm of the explicit Jacobian of the model's own LayerNorm / RMSNorm
// (stx::Norm, γ=1, β=0), built row by row with torch::autograd::grad in float64 and reduced by
// at::linalg_svdvals, and compares it with
//   (a) the exact closed forms (jacobian.h): LN ‖J‖₂ = √d/sqrt(‖x − x̄‖² + dε) (d ≥ 3), and the whole
//       matrix J = (1/s)(I − yyᵀ/(d s²))P entrywise, plus that matrix's own svdvals norm;
//       RMSNorm ‖J‖₂ = √d/sqrt(‖x‖² + dε), J = (1/r)(I − xxᵀ/(d r²));
//   (b) the paper's √d/‖x‖, which equals the exact LN value only when the mean of x is small
//       (‖x‖² = ‖x − x̄‖² + d·x̄²) — an observation, not a theory claim.
// Inputs: zero-mean Gaussians σ·N(0, I_d) over σ = 1e-3 … 1e3, and shifted N(m, I_d), m = 0.1 … 100.
//
// Tolerance 1e-9 (relative): float64's unit roundoff is 1.1e-16; an autograd row and the formula each
// cost O(d) flops, and svdvals is backward stable, so honest discrepancies are ≈ d·1e-16 ≲ 1e-13, while
// a wrong formula (e.g. ε in the wrong place, a missing P) errs by ≥ dε/‖y‖² ≈ 1e-5 at σ = 1.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

#include "stx/core/error.h"
#include "stx/report/plot.h"
#include "stx/theory/experiments.h"
#include "stx/theory/jacobian.h"

namespace stx::theory {

namespace {

struct Group {
  NormKind kind;
  double eps;
  std::string name;  // "LN ε=0"
  std::string key;   // "ln0"
};

struct Point {  // one input under one norm
  std::string family;
  double scale = 0, mean = 0, xnorm = 0, autograd = 0, closed = 0, formula_norm = 0, matrix_err = 0, paper = 0;
};

double rel(double a, double b) { return std::abs(a - b) / std::abs(b); }

// ---- grid: width, draws, the input settings and the norms --------------------------------------
struct Grid {
  int64_t d = 0, draws = 0;
  double eps = 0;              // the model's default norm_eps
  std::vector<double> scales;  // zero-mean: x = σ g
  std::vector<double> means;   // shifted: x = g + m
  std::vector<Group> groups;
};

Grid make_grid(const Options& o) {
  Grid g;
  g.d = o.d.value_or(o.full ? 256 : 64);
  g.draws = o.seeds.value_or(o.full ? 5 : 3);
  if (g.d < 3) throw InputError("lemma3: the closed form needs d ≥ 3");
  if (g.draws < 1) throw InputError("lemma3: need ≥ 1 draw per input setting");
  g.eps = 1e-5;                                     // the model's default norm_eps
  g.scales = {1e-3, 1e-2, 1e-1, 1, 10, 100, 1000};  // zero-mean: x = σ g
  g.means = {0.1, 0.3, 1, 3, 10, 30, 100};          // shifted: x = g + m
  g.groups = {{NormKind::LayerNorm, 0.0, "LN ε=0", "ln0"},
              {NormKind::LayerNorm, g.eps, "LN ε=1e-5", "lneps"},
              {NormKind::RMSNorm, 0.0, "RMS ε=0", "rms0"},
              {NormKind::RMSNorm, g.eps, "RMS ε=1e-5", "rmseps"}};
  return g;
}

// ---- measure: every input under every norm -----------------------------------------------------
struct Measurements {
  size_t n_inputs = 0;                            // inputs per norm
  std::map<std::string, std::vector<Point>> pts;  // group key → points
};

Measurements measure(const Grid& grid, uint64_t base_seed) {
  const int64_t d = grid.d;
  // The inputs, shared by every norm.
  struct Input {
    std::string family;
    double scale, mean;
    torch::Tensor x;
  };
  std::vector<Input> inputs;
  auto gen = at::detail::createCPUGenerator(0x1e33a3ULL * 1000003ULL + base_seed);
  for (int64_t k = 0; k < grid.draws; ++k) {
    for (double s : grid.scales) inputs.push_back({"zero-mean", s, 0.0, s * torch::randn({d}, gen, torch::kFloat64)});
    for (double m : grid.means) inputs.push_back({"shifted", 1.0, m, torch::randn({d}, gen, torch::kFloat64) + m});
  }

  Measurements out;
  out.n_inputs = inputs.size();
  auto& pts = out.pts;
  for (auto& g : grid.groups)
    for (auto& in : inputs) {
      Point p{in.family, in.scale, in.mean};
      auto J = norm_jacobian_autograd(g.kind, in.x, g.eps);
      auto F = norm_jacobian_formula(g.kind, in.x, g.eps);
      p.xnorm = in.x.norm().item<double>();
      p.autograd = spectral_norm(J);
      p.closed = norm_jacobian_norm_closed(g.kind, in.x, g.eps);
      p.formula_norm = spectral_norm(F);
      p.matrix_err = (J - F).abs().max().item<double>() / p.autograd;
      p.paper = paper_jacobian_norm(in.x);
      pts[g.key].push_back(p);
    }
  return out;
}

nlohmann::json make_config(const Grid& g, uint64_t base_seed) {
  return {{"d", g.d},
          {"draws_per_setting", g.draws},
          {"base_seed", base_seed},
          {"eps_values", {0.0, g.eps}},
          {"zero_mean_scales", g.scales},
          {"shifted_means", g.means},
          {"shifted_sigma", 1.0},
          {"dtype", "float64"},
          {"jacobian", "torch::autograd::grad per output row of stx::Norm (weight 1, bias 0)"},
          {"spectral_norm", "at::linalg_svdvals, largest"},
          {"tolerance", 1e-9}};
}

// ---- the paper's √d/‖x‖ against the true LN norm (ε = 0) ---------------------------------------
struct PaperComparison {
  double zero_worst = 1;             // worst true/paper ratio over the zero-mean inputs
  double m3_true = 0, m3_paper = 0;  // N(3, I): true ‖J‖₂ and √d/‖x‖, mean over the draws
  double m100_ratio = 0;             // N(100, I): true/paper
};

PaperComparison compare_with_paper(const Measurements& m) {
  const auto& ln0 = m.pts.at("ln0");
  auto avg = [&](double mean, double Point::*field) {  // mean over the draws of a shifted setting
    double a = 0;
    int k = 0;
    for (auto& p : ln0)
      if (p.family == "shifted" && p.mean == mean) a += p.*field, ++k;
    return a / k;
  };
  PaperComparison c;
  for (auto& p : ln0)
    if (p.family == "zero-mean") c.zero_worst = std::max(c.zero_worst, p.autograd / p.paper);
  c.m3_true = avg(3.0, &Point::autograd), c.m3_paper = avg(3.0, &Point::paper);
  c.m100_ratio = avg(100.0, &Point::autograd) / avg(100.0, &Point::paper);
  return c;
}

// ---- claims ------------------------------------------------------------------------------------
void add_claims(Result& r, const Grid& grid, const Measurements& m, const PaperComparison& pc) {
  // Theory claims: per (norm, ε, input family), the worst relative error over all its inputs.
  const double tol = 1e-9;
  for (auto& g : grid.groups)
    for (std::string fam : {"zero-mean", "shifted"}) {
      double e_closed = 0, e_matrix = 0, e_fnorm = 0;
      for (auto& p : m.pts.at(g.key))
        if (p.family == fam)
          e_closed = std::max(e_closed, rel(p.closed, p.autograd)), e_matrix = std::max(e_matrix, p.matrix_err),
          e_fnorm = std::max(e_fnorm, rel(p.formula_norm, p.autograd));
      const bool ln = g.kind == NormKind::LayerNorm;
      const std::string fk = fam == "zero-mean" ? "zero" : "shift";
      const std::string norm_expr =
          ln ? (g.eps == 0 ? "√d/‖x−x̄‖" : "√d/sqrt(‖x−x̄‖²+dε)") : (g.eps == 0 ? "√d/‖x‖" : "√d/sqrt(‖x‖²+dε)");
      r.near(g.key + "_norm_" + fk, fmt::format("{}, {}: ‖J‖₂ = {} (max rel. err)", g.name, fam, norm_expr), 0,
             e_closed, tol);
      r.near(g.key + "_matrix_" + fk,
             fmt::format("{}, {}: J = {} entrywise", g.name, fam, ln ? "(1/s)(I−yyᵀ/(ds²))P" : "(1/r)(I−xxᵀ/(dr²))"), 0,
             e_matrix, tol);
      if (ln)
        r.near(g.key + "_formula_norm_" + fk, fmt::format("{}, {}: ‖formula‖₂ = ‖J‖₂ (svdvals)", g.name, fam), 0,
               e_fnorm, tol);
    }

  // Observations: the paper's √d/‖x‖ against the true LN norm (ε = 0).
  {
    auto& c = r.near("paper_zero_mean", "LN, zero-mean inputs: ‖J‖₂·‖x‖/√d = 1 (paper, worst)", 1.0, pc.zero_worst, 0.1,
                     false);
    c.tolerance = "0.1 (chosen)";
  }
  {
    auto& c = r.near("paper_mean3", fmt::format("LN, N(3, I), d={}: ‖J‖₂ vs paper √d/‖x‖ (draw mean)", grid.d),
                     pc.m3_paper, pc.m3_true, 0.1 * pc.m3_paper, false);
    c.tolerance = "10% (chosen)";
  }
  {
    auto& c = r.near("paper_mean100", "LN, N(100, I): ‖J‖₂·‖x‖/√d (paper: O(1))", 1.0, pc.m100_ratio, 0.1, false);
    c.tolerance = "0.1 (chosen)";
  }
}

// ---- findings ----------------------------------------------------------------------------------
void add_findings(Result& r, const Grid& grid, const Measurements& m, const PaperComparison& pc) {
  const int64_t d = grid.d, draws = grid.draws;
  const double eps = grid.eps;
  double worst = 0, min_ratio = 1e300;
  for (auto& [k, v] : m.pts)
    for (auto& p : v) {
      worst = std::max({worst, rel(p.closed, p.autograd), p.matrix_err, rel(p.formula_norm, p.autograd)});
      if (k == "ln0") min_ratio = std::min(min_ratio, p.autograd / p.paper);
    }
  r.findings.push_back(fmt::format(
      "All closed forms match the explicit autograd Jacobian (d={}, {} inputs × 4 norms): worst relative error {:.1e}, "
      "i.e. float64 rounding (≈ d·1e-16); tolerance 1e-9.",
      d, m.n_inputs, worst));
  r.findings.push_back(fmt::format(
      "The paper's step √d/‖x − x̄‖ = O(√d/‖x‖) needs a small mean: at d={} with x ~ N(3, I) the true ‖J_LN‖₂ is {:.3f} "
      "(mean of {} draws; ≈ 1/σ = 1 up to the χ spread of ‖x − x̄‖) but √d/‖x‖ = {:.3f} (×{:.2f}; an earlier "
      "measurement, one draw "
      "at d=64: 1.057 vs 0.317); at mean 100 the ratio is ×{:.1f}: ‖x‖/‖x − x̄‖ ≈ sqrt(1 + mean²/σ²) is unbounded. "
      "LayerNorm's Jacobian ignores the mean, so √d/‖x‖ is only a lower bound (min true/paper over all inputs {:.4f}); "
      "for zero-mean Gaussians it is close (worst ratio {:.4f}, i.e. sqrt(1 + O(1/d))).",
      d, pc.m3_true, draws, pc.m3_paper, pc.m3_true / pc.m3_paper, pc.m100_ratio, min_ratio, pc.zero_worst));
  {
    const Point& tiny = m.pts.at("lneps").front();  // zero-mean σ = 1e-3, first draw
    const Point& tiny0 = m.pts.at("ln0").front();
    r.findings.push_back(fmt::format(
        "RMSNorm's ‖J‖₂ is exactly √d/‖x‖ (ε=0): the paper's expression is exact for RMSNorm, mean or not. With ε=1e-5 "
        "both norms saturate at 1/√ε = {:.0f}: LayerNorm at σ=1e-3 gives {:.1f} instead of {:.1f} (ε=0).",
        1 / std::sqrt(eps), tiny.autograd, tiny0.autograd));
  }
}

// ---- series, data files and figure: ‖J‖₂ against ‖x‖, log-log ----------------------------------
void add_plot(Result& r, const Grid& grid, const Measurements& m) {
  const int64_t d = grid.d, draws = grid.draws;
  const double eps = grid.eps;
  const auto& pts = m.pts;
  nlohmann::json js = nlohmann::json::object();
  const std::vector<std::pair<std::string, std::string>> plotted{
      {"ln0", "zero-mean"}, {"ln0", "shifted"}, {"lneps", "zero-mean"}, {"rms0", "shifted"}};
  for (auto& [k, v] : pts) {
    nlohmann::json a = nlohmann::json::array();
    for (auto& p : v)
      a.push_back({{"family", p.family},
                   {"scale", p.scale},
                   {"mean", p.mean},
                   {"x_norm", p.xnorm},
                   {"autograd", p.autograd},
                   {"closed", p.closed},
                   {"formula_norm", p.formula_norm},
                   {"matrix_err", p.matrix_err},
                   {"paper", p.paper}});
    js[k] = a;
  }
  r.series = js;
  for (auto& [k, fam] : plotted) {  // one block per draw (blank-line separated), each sorted by ‖x‖
    const auto& v = pts.at(k);
    const size_t per_draw = v.size() / static_cast<size_t>(draws);
    std::ostringstream t;
    t << "# x_norm autograd closed paper  (one block per draw)\n";
    for (int64_t k2 = 0; k2 < draws; ++k2) {
      std::vector<Point> b;
      for (size_t i = k2 * per_draw; i < (k2 + 1) * per_draw; ++i)
        if (v[i].family == fam) b.push_back(v[i]);
      std::sort(b.begin(), b.end(), [](const Point& a, const Point& c) { return a.xnorm < c.xnorm; });
      for (auto& p : b) t << p.xnorm << " " << p.autograd << " " << p.closed << " " << p.paper << "\n";
      t << "\n";
    }
    r.data_files.push_back({k + "_" + (fam == "zero-mean" ? "zero" : "shift") + ".dat", t.str()});
  }
  r.plot = [d, eps](const std::string& dir, const std::string& png) {
    auto f = [&](const std::string& n) { return "'" + dir + "/" + n + "'"; };
    std::ostringstream g;
    g << gnuplot_preamble(png, 1000, 700) << "set logscale xy\nset format x '10^{%L}'\nset format y '10^{%L}'\n"
      << "set xlabel '‖x‖₂'\nset ylabel '‖J(x)‖₂ (largest singular value)'\n"
      << "set title \"Xiong et al. Lemma 3: ‖J‖₂ of LayerNorm / RMSNorm, d=" << d
      << " (points: autograd Jacobian; lines: formulas)\"\n"
      << "set key inside left bottom box opaque font ',10'\n"
      << "plot sqrt(" << d << ")/x w l lw 2 lc rgb '#333333' t 'paper √d/‖x‖ (= RMSNorm exact)', " << 1 / std::sqrt(eps)
      << " w l dt 3 lc rgb '#999999' t '1/√ε (ε=1e-5)', " << f("ln0_zero.dat")
      << " u 1:3 w l lw 1 lc rgb '#1f77b4' t 'LN ε=0 exact √d/‖x−x̄‖, zero-mean', " << f("ln0_zero.dat")
      << " u 1:2 w p pt 7 ps 1.5 lc rgb '#1f77b4' t 'LN ε=0 autograd, N(0, σ²I)', " << f("ln0_shift.dat")
      << " u 1:3 w l lw 1 lc rgb '#d62728' t 'LN ε=0 exact √d/‖x−x̄‖, shifted', " << f("ln0_shift.dat")
      << " u 1:2 w p pt 5 ps 1.0 lc rgb '#d62728' t 'LN ε=0 autograd, N(m, I), m=0.1…100', " << f("lneps_zero.dat")
      << " u 1:3 w l lw 1 dt 2 lc rgb '#2ca02c' t 'LN ε=1e-5 exact √d/sqrt(‖y‖²+dε)', " << f("lneps_zero.dat")
      << " u 1:2 w p pt 9 ps 0.8 lc rgb '#2ca02c' t 'LN ε=1e-5 autograd, N(0, σ²I)', " << f("rms0_shift.dat")
      << " u 1:2 w p pt 6 ps 1.6 lc rgb '#9467bd' t 'RMSNorm ε=0 autograd, N(m, I)'\n";
    return g.str();
  };
}

}  // namespace

Result run_lemma3(const Options& o) {
  const Grid grid = make_grid(o);
  const Measurements m = measure(grid, o.seed);
  const PaperComparison pc = compare_with_paper(m);

  Result r;
  r.experiment = "lemma3";
  r.config = make_config(grid, o.seed);
  add_claims(r, grid, m, pc);
  add_findings(r, grid, m, pc);
  add_plot(r, grid, m);
  return r;
}

}  // namespace stx::theory
