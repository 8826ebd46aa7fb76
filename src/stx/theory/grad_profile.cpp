// stx/theory/grad_profile.cpp — Xiong et al. (ICML 2020) Figure 3 (docs/reference.md#gradient-profile):
// gradient norms of the FFN output weights W^{2,l} at initialization in
// encoder-decoder models, (a)(b) per layer of a 6-6 model (encoder, decoder) and (c)(d) for the
// last layer of 6-6 … 14-14 models, for Post-LN, Pre-LN, DeepNorm, Post-LN-init and
// Post-LN + σReparam.
// Data: byte tokens (V = 256) of the embedded Moby-Dick chapter; a sequence pair is a random
// window: source = bytes [o, o+T), target = the next T bytes, decoder input = target shifted
// right after a BOS id 0 (teacher forcing); loss = mean token cross-entropy of the tied
// output layer. Dropout off (the gradient of the network at init).
// Two measures per layer, over K mini-batches g_1 … g_K of one initialized model:
//   (1) ‖(1/K) Σ_k g_k‖_F — the paper's: average the gradient over mini-batches, then the norm;
//   (2) (1/K) Σ_k ‖g_k‖_F — the mean of per-batch norms.
// Each is computed per seed (fresh init, fresh batches); reported as mean ± SE over S seeds.
// The paper's descriptions are compared as observations (theory=false) with 4 SEs; the SE of a
// top/bottom ratio is taken on ln(ratio) per seed (SE over seeds), that of a depth slope is propagated from
// the per-depth SEs (loglog_slope in theory_setting.h; disjoint seeds per depth).
// Stages: grid → measure (one model: grad_profile_model.{h,cpp}) → summary → claims → findings → plot.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <fstream>
#include <sstream>

#include "stx/core/error.h"
#include "stx/data/byte_corpus.h"
#include "stx/model/init.h"
#include "stx/report/plot.h"
#include "stx/theory/experiments.h"
#include "stx/theory/grad_profile_model.h"
#include "stx/theory/stats.h"
#include "stx/theory/theory_setting.h"

namespace stx::theory {

namespace {

using grad_profile::measure_profile;
using grad_profile::Profile;
using grad_profile::Settings;

// ln(top/bottom layer gradient) of measure (1), per seed, as mean ± SE over seeds (the log keeps
// the seed-to-seed spread of a ratio with a tiny denominator symmetric).
MeanSE log_top_bottom(const Profile& p, int s2) {
  std::vector<double> r;
  const auto& a = p.avg[s2];
  for (size_t s = 0; s < a.front().size(); ++s) r.push_back(std::log(a.back()[s] / a.front()[s]));
  return mean_se(r);
}
std::string ratio_text(const MeanSE& m) {
  return fmt::format("top/bottom {:.2f} (ln {:.2f} ± {:.2f})", std::exp(m.mean), m.mean, m.se);
}

// An observation "measured > threshold" at 4 SEs (measured − 4·SE > threshold), or "<".
void beyond(Result& r, const std::string& id, const std::string& stmt, bool greater, double threshold,
            const MeanSE& m) {
  const bool holds = greater ? m.mean - 4 * m.se > threshold : m.mean + 4 * m.se < threshold;
  r.claims.push_back(Claim{id, stmt, fmt::format("{} {}", greater ? ">" : "<", threshold), m.mean,
                           fmt::format("4 SE = {:.3g}", 4 * m.se), holds, /*theory=*/false});
}

std::string join_values(const std::vector<double>& v, const char* f = "{:.3f}") {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt::format(fmt::runtime(f), v[i]);
  return s;
}

const char* const stack_name[2] = {"encoder", "decoder"};

// ---- grid: model settings, the (a)(b) depth N6, the (c)(d) depth sweep, the corpus -------------
struct Grid {
  bool full = false;  // --full (quick mode skips σReparam in the depth sweep)
  Settings st{};
  int64_t N6 = 6;               // the (a)(b) model is N6-N6
  std::vector<int64_t> depths;  // the (c)(d) sweep
  std::vector<int64_t> all;     // every depth measured: the sweep, and N6 first if not in it
  size_t i6 = 0, ideep = 0;     // index in `all` of N6 and of the deepest model of the sweep
  std::vector<size_t> idx;      // index in `all` of each depth of the sweep
  torch::Tensor bytes;          // the corpus
  uint64_t seed = 0;            // base seed
};

Grid make_grid(const Options& o) {
  const bool full = o.full;
  Grid grid;
  grid.full = full, grid.seed = o.seed;
  // Quick: a small 64-wide model (2 cores); --full: the paper's d=512, d_F=1024, 4 heads, 10 seeds.
  // --full runs ≈ 30 min on 2 cores (5 schemes × 6-6 … 14-14 at d=512).
  Settings st{o.d.value_or(full ? 512 : 64),    0, 4, o.seeds.value_or(full ? 10 : 6), 4, 8,
              o.tokens.value_or(full ? 32 : 24)};
  st.d_ff = o.d_ff.value_or(full ? 1024 : 2 * st.d);
  if (st.d % st.heads) st.heads = 1;
  grid.st = st;
  grid.N6 = o.layers.value_or(6);
  grid.depths =
      o.depths ? *o.depths : (full ? std::vector<int64_t>{6, 8, 10, 12, 14} : std::vector<int64_t>{6, 10, 14});
  grid.bytes = read_byte_tokens(demo_text_path(), 1000, "grad-profile");
  if (2 * st.T + 1 > grid.bytes.size(0))
    throw InputError(fmt::format("grad-profile: --tokens {} needs 2·T+1 ≤ {} corpus bytes", st.T, grid.bytes.size(0)));
  // profiles[c][iN]; the (a)(b) model is depth N6 (measured once if it is in the depth grid).
  auto& all = grid.all;
  all = grid.depths;
  if (std::find(all.begin(), all.end(), grid.N6) == all.end()) all.insert(all.begin(), grid.N6);
  grid.i6 = std::find(all.begin(), all.end(), grid.N6) - all.begin();
  for (auto N : grid.depths) grid.idx.push_back(std::find(all.begin(), all.end(), N) - all.begin());
  grid.ideep = grid.idx.empty() ? grid.i6 : grid.idx.back();
  return grid;
}

// Quick mode skips σReparam in the depth sweep: at init (γ = σ(W₀)) its forward is Post-LN's
// and its raw-weight gradient differs only by the u vᵀ component (see the 6-6 columns).
bool skip(const Grid& grid, const SchemeRow& c, int64_t N) { return !grid.full && N != grid.N6 && c.sigma_reparam; }
bool swept(const Grid& grid, const SchemeRow& c) {  // measured at every depth of the sweep
  return std::none_of(grid.depths.begin(), grid.depths.end(), [&](int64_t N) { return skip(grid, c, N); });
}

nlohmann::json make_config(const Grid& grid) {
  const Settings& st = grid.st;
  return {{"arch", "encoder-decoder"},
          {"layers_ab", grid.N6},
          {"depths_cd", grid.depths},
          {"d", st.d},
          {"d_ff", st.d_ff},
          {"heads", st.heads},
          {"seeds", st.S},
          {"minibatches_K", st.K},
          {"batch_sequences", st.B},
          {"tokens_T", st.T},
          {"vocab", 256},
          {"data", "byte tokens of data/demo/moby-dick-ch1.txt: src = T bytes, tgt = the next T, BOS 0"},
          {"loss", "mean token cross-entropy, tied embedding, teacher forcing"},
          {"init",
           "Xavier normal (q/k too), zero biases, LN γ=1 β=0, sinusoidal positions, √d embed scale; "
           "dropout off"},
          {"measure_1", "‖mean_k g_k‖_F (paper: average over mini-batches, then the norm)"},
          {"measure_2", "mean_k ‖g_k‖_F (mean of per-batch norms)"},
          {"sigma_reparam_grad", "gradient of the raw weight W (Ŵ = γW/σ, γ = σ(W₀))"},
          {"base_seed", grid.seed},
          {"depth_sweep_schemes", grid.full ? "all five" : "all but Post-LN+σReparam (≡ Post-LN at init)"}};
}

// ---- measure: prof[c][iN], scheme c at depth all[iN] (empty where skipped) ---------------------
using Profiles = std::vector<std::vector<Profile>>;

Profiles measure(const Grid& grid) {
  const auto& cols = scheme_columns(true);
  Profiles prof(cols.size());
  for (size_t iN = 0; iN < grid.all.size(); ++iN)
    for (size_t c = 0; c < cols.size(); ++c) {
      const int64_t N = grid.all[iN];
      const uint64_t base = grid.seed + 1000003ULL * (iN + 1);
      prof[c].push_back(skip(grid, cols[c], N) ? Profile{} : measure_profile(grid.st, cols[c], N, grid.bytes, base));
    }
  return prof;
}

// ---- summary over seeds: per-layer profiles, last layer vs depth, the deepest model ------------
struct LayerProfile {  // the N6-N6 model, per layer: measure (1) mean, SE; measure (2) mean, SE
  std::vector<double> m1, e1, m2, e2;
};
struct DepthCurve {              // the last layer per depth of the sweep (empty where the scheme is not swept)
  std::vector<double> m, e, m2;  // measure (1) mean, SE; measure (2) mean
  SlopeFit fit;                  // log-log slope vs N (≥ 2 depths)
};
struct Summary {
  std::vector<std::array<LayerProfile, 2>> layers;            // [c][stack]
  std::vector<std::array<DepthCurve, 2>> depth;               // [c][stack]
  std::array<std::array<std::vector<double>, 2>, 2> deepest;  // [Post-LN, Pre-LN][stack]: measure (1) per layer
};

Summary summarize(const Grid& grid, const Profiles& prof) {
  const auto& cols = scheme_columns(true);
  Summary sm;
  sm.layers.resize(cols.size()), sm.depth.resize(cols.size());
  std::vector<double> xN(grid.depths.begin(), grid.depths.end());
  for (size_t c = 0; c < cols.size(); ++c)
    for (int s2 = 0; s2 < 2; ++s2) {
      const auto& p = prof[c][grid.i6];
      auto& lp = sm.layers[c][s2];
      for (int64_t l = 0; l < grid.N6; ++l) {
        auto a = mean_se(p.avg[s2][l]), b = mean_se(p.mean[s2][l]);
        lp.m1.push_back(a.mean), lp.e1.push_back(a.se), lp.m2.push_back(b.mean), lp.e2.push_back(b.se);
      }
      if (!swept(grid, cols[c])) continue;
      auto& dc = sm.depth[c][s2];
      for (size_t k : grid.idx) {
        auto a = mean_se(prof[c][k].avg[s2].back());
        dc.m.push_back(a.mean), dc.e.push_back(a.se), dc.m2.push_back(mean_se(prof[c][k].mean[s2].back()).mean);
      }
      if (grid.depths.size() >= 2) dc.fit = loglog_slope(xN, dc.m, dc.e);
    }
  for (size_t c : {size_t{0}, size_t{1}})
    for (int s2 = 0; s2 < 2; ++s2)
      for (auto& v : prof[c][grid.ideep].avg[s2]) sm.deepest[c][s2].push_back(mean_se(v).mean);
  return sm;
}

// ---- claims: the paper's descriptions, as observations -----------------------------------------
void add_claims(Result& r, const Grid& grid, const Profiles& prof, const Summary& sm) {
  const int64_t N6 = grid.N6;
  const size_t i6 = grid.i6;
  for (int s2 = 0; s2 < 2; ++s2) {  // (a)(b)
    const std::string sn = stack_name[s2];
    const std::string nn = std::to_string(N6) + "-" + std::to_string(N6);
    beyond(r, "post_grows_" + sn,
           "Post-LN " + sn + " " + nn +
               ": ln(top/bottom layer gradient) > 0 (paper: grows "
               "with l), measure (1)",
           true, 0.0, log_top_bottom(prof[0][i6], s2));
    const auto pre = log_top_bottom(prof[1][i6], s2);
    r.near("pre_flat_" + sn,
           "Pre-LN " + sn + " " + nn + ": ln(top/bottom layer gradient) = 0 (paper: flat), measure (1)", 0.0, pre.mean,
           4 * pre.se, false);
  }
  if (grid.depths.size() >= 3)  // (c)(d)
    for (int s2 = 0; s2 < 2; ++s2) {
      const std::string sn = stack_name[s2];
      const auto& fp = sm.depth[0][s2].fit;
      const auto& fr = sm.depth[1][s2].fit;
      r.near("post_last_flat_" + sn, "Post-LN " + sn + " last-layer gradient flat in depth N (paper Fig. 3c,d): slope",
             0.0, fp.slope, 4 * fp.se, false);
      beyond(r, "pre_last_decreasing_" + sn, "Pre-LN " + sn + " last-layer gradient decreases with N (paper): slope",
             false, 0.0, MeanSE{fr.slope, fr.se, 0, 0});
    }
}

// ---- findings ----------------------------------------------------------------------------------
void add_findings(Result& r, const Grid& grid, const Profiles& prof, const Summary& sm) {
  const auto& cols = scheme_columns(true);
  const int64_t N6 = grid.N6;
  const size_t i6 = grid.i6, ideep = grid.ideep;
  const auto &depths = grid.depths, &all = grid.all;
  // (a)(b): per-layer profile of the N6-N6 model.
  for (size_t c = 0; c < cols.size(); ++c)
    for (int s2 = 0; s2 < 2; ++s2) {
      const auto& lp = sm.layers[c][s2];
      r.findings.push_back(
          fmt::format("{} {} {}-{} per-layer ‖∂L/∂W^{{2,l}}‖, l = 1…{}: measure (1) {}; measure (2) "
                      "{}; (1) {}",
                      cols[c].title, stack_name[s2], N6, N6, N6, join_values(lp.m1), join_values(lp.m2),
                      ratio_text(log_top_bottom(prof[c][i6], s2))));
    }
  {  // measure (1) against (2): how much averaging over mini-batches cancels
    std::string line = "Measure (1)/(2), mean over the layers of the 6-6 model:";
    for (size_t c = 0; c < cols.size(); ++c)
      for (int s2 = 0; s2 < 2; ++s2) {
        double q = 0;
        for (int64_t l = 0; l < N6; ++l)
          q += mean_se(prof[c][i6].avg[s2][l]).mean / mean_se(prof[c][i6].mean[s2][l]).mean / static_cast<double>(N6);
        line += fmt::format(" {} {} {:.3f};", cols[c].title, stack_name[s2], q);
      }
    r.findings.push_back(line +
                         fmt::format(" over K = {} mini-batches of {} sequences: at init the per-batch gradients "
                                     "share a dominant batch-independent part, so the paper's measure and the "
                                     "mean of per-batch norms nearly agree.",
                                     grid.st.K, grid.st.B));
  }
  // (c)(d): last layer's W² gradient against depth.
  for (size_t c = 0; c < cols.size(); ++c)
    for (int s2 = 0; s2 < 2; ++s2) {
      if (!swept(grid, cols[c])) continue;
      const auto& dc = sm.depth[c][s2];
      r.findings.push_back(
          fmt::format("{} {} last-layer ‖∂L/∂W^{{2,N}}‖ for N-N, N = {}: measure (1) {}; (2) {}; "
                      "log-log slope vs N {:.3f} ± {:.3f}",
                      cols[c].title, stack_name[s2], fmt::join(depths, ","), join_values(dc.m), join_values(dc.m2),
                      dc.fit.slope, dc.fit.se));
    }
  // Deepest model's per-layer profile (an earlier quick simulation: Post-LN grows toward the top at 12).
  for (size_t c : {size_t{0}, size_t{1}})
    for (int s2 = 0; s2 < 2; ++s2)
      r.findings.push_back(fmt::format("{} {} {}-{} per-layer measure (1): {}; {}", cols[c].title, stack_name[s2],
                                       all[ideep], all[ideep], join_values(sm.deepest[c][s2]),
                                       ratio_text(log_top_bottom(prof[c][ideep], s2))));
  {
    auto x = [&](size_t c, size_t k, int s2) { return std::exp(log_top_bottom(prof[c][k], s2).mean); };
    const SlopeFit fit[2][2] = {{sm.depth[0][0].fit, sm.depth[0][1].fit}, {sm.depth[1][0].fit, sm.depth[1][1].fit}};
    std::string line = fmt::format(
        "Paper vs measured: the paper says Post-LN's W^{{2,l}} gradient grows with l and Pre-LN's stays flat. "
        "Measured top/bottom layer ratios (measure (1); > 1 grows, < 1 decreases with l): Post-LN decoder ×{:.2f} at "
        "{}-{}, ×{:.1f} at {}-{}; Post-LN encoder ×{:.2f} / ×{:.2f}; Pre-LN encoder ×{:.2f}, decoder ×{:.2f} at {}-{}.",
        x(0, i6, 1), N6, N6, x(0, ideep, 1), all[ideep], all[ideep], x(0, i6, 0), x(0, ideep, 0), x(1, i6, 0),
        x(1, i6, 1), N6, N6);
    auto verdict = [](const SlopeFit& f, bool flat) -> std::string {
      if (flat) return std::abs(f.slope) <= 4 * f.se ? "flat as the paper says" : "not flat (paper: flat)";
      if (f.slope + 4 * f.se < 0) return "decreasing as the paper says";
      return f.slope < 0 ? "decreasing, not significant at 4 SE" : "not decreasing (paper: decreasing)";
    };
    if (depths.size() >= 2)
      line += fmt::format(
          " Last layer vs N (log-log slopes): Post-LN {:.3f} ± {:.3f} encoder ({}), {:.3f} ± {:.3f} "
          "decoder ({}); Pre-LN {:.3f} ± {:.3f} encoder ({}), {:.3f} ± {:.3f} decoder ({}).",
          fit[0][0].slope, fit[0][0].se, verdict(fit[0][0], true), fit[0][1].slope, fit[0][1].se,
          verdict(fit[0][1], true), fit[1][0].slope, fit[1][0].se, verdict(fit[1][0], false), fit[1][1].slope,
          fit[1][1].se, verdict(fit[1][1], false));
    r.findings.push_back(line);
  }
  r.findings.push_back(fmt::format(
      "Paper: Post-LN last-layer gradient 'around 1.6' (IWSLT14, d=512, real vocabulary); here Post-LN {} / {} "
      "(encoder / decoder, {}-{}, measure (1)) — the level depends on d, the vocabulary and the batch, only the depth "
      "trend is comparable.",
      fmt::format("{:.3f}", sm.depth[0][0].m.front()), fmt::format("{:.3f}", sm.depth[0][1].m.front()), depths.front(),
      depths.front()));
}

// ---- series, data and figure -------------------------------------------------------------------
void add_plot(Result& r, const Grid& grid, const Summary& sm) {
  const auto& cols = scheme_columns(true);
  const int64_t N6 = grid.N6;
  const auto& depths = grid.depths;
  for (size_t c = 0; c < cols.size(); ++c)
    for (int s2 = 0; s2 < 2; ++s2) {
      const auto& lp = sm.layers[c][s2];
      r.series["per_layer"][cols[c].key][stack_name[s2]] = {
          {"avg_then_norm", lp.m1}, {"avg_then_norm_se", lp.e1}, {"mean_of_norms", lp.m2}, {"mean_of_norms_se", lp.e2}};
      if (!swept(grid, cols[c])) continue;
      const auto& dc = sm.depth[c][s2];
      r.series["last_layer"][cols[c].key][stack_name[s2]] = {{"N", grid.depths},         {"avg_then_norm", dc.m},
                                                             {"avg_then_norm_se", dc.e}, {"mean_of_norms", dc.m2},
                                                             {"slope_N", dc.fit.slope},  {"slope_N_se", dc.fit.se}};
    }
  for (size_t c : {size_t{0}, size_t{1}})
    for (int s2 = 0; s2 < 2; ++s2) r.series["deepest_per_layer"][cols[c].key][stack_name[s2]] = sm.deepest[c][s2];
  for (int s2 = 0; s2 < 2; ++s2) {
    std::ostringstream t, u;
    t << "# layer";
    u << "# N";
    for (auto& c : cols)
      t << " " << c.key << "_m1 " << c.key << "_se1 " << c.key << "_m2", u << " " << c.key << " " << c.key << "_se";
    t << "\n";
    u << "\n";
    for (int64_t l = 0; l < N6; ++l) {
      t << l + 1;
      for (auto& lp : sm.layers) t << " " << lp[s2].m1[l] << " " << lp[s2].e1[l] << " " << lp[s2].m2[l];
      t << "\n";
    }
    for (size_t k = 0; k < depths.size(); ++k) {
      u << depths[k];
      for (size_t c = 0; c < cols.size(); ++c)
        if (swept(grid, cols[c])) u << " " << sm.depth[c][s2].m[k] << " " << sm.depth[c][s2].e[k];
        else u << " NaN NaN";
      u << "\n";
    }
    r.data_files.emplace_back(std::string("gp_layers_") + stack_name[s2] + ".dat", t.str());
    r.data_files.emplace_back(std::string("gp_depth_") + stack_name[s2] + ".dat", u.str());
  }
  const auto ncols = cols.size();
  std::vector<std::string> labels, colors;
  for (auto& c : cols) labels.push_back(c.title), colors.push_back(c.color);
  std::vector<bool> in_sweep;
  for (size_t c = 0; c < ncols; ++c) in_sweep.push_back(swept(grid, cols[c]));
  r.plot = [labels, colors, ncols, N6, depths, in_sweep](const std::string& dir, const std::string& png) {
    std::ostringstream g;
    g << gnuplot_preamble(png, 1300, 900);
    g << "set multiplot layout 2,2 title \"Xiong et al. Fig. 3 at init: ‖∂L/∂W^{2,l}‖_F (mean ± SE over seeds; "
         "bars: gradient averaged over mini-batches, then norm)\"\n";
    g << "set logscale y\nset key top left font ',9'\n";
    for (int s2 = 0; s2 < 2; ++s2) {
      const std::string sn = s2 ? "decoder" : "encoder";
      g << "set title '(" << (s2 ? "b" : "a") << ") " << sn << " layers, " << N6 << "-" << N6 << "'\n";
      g << "set xlabel 'layer l'\nset ylabel '‖∂L/∂W^{2,l}‖_F'\nset style data histogram\n"
        << "set style histogram errorbars gap 1 lw 1\nset style fill solid 0.8 border -1\nset boxwidth 0.9\n"
        << "set yrange [*:*]\nset xrange [*:*]\nunset logscale x\n";
      g << "plot ";
      for (size_t c = 0; c < ncols; ++c)
        g << (c ? ", " : "") << "'" << dir << "/gp_layers_" << sn << ".dat' using " << 2 + 3 * c << ":" << 3 + 3 * c
          << (c ? "" : ":xtic(1)") << " lc rgb '" << colors[c] << "' title '" << labels[c] << "'";
      g << "\n";
    }
    for (int s2 = 0; s2 < 2; ++s2) {
      const std::string sn = s2 ? "decoder" : "encoder";
      g << "set title '(" << (s2 ? "d" : "c") << ") " << sn << " last layer vs depth N-N'\n";
      g << "set style data linespoints\nset logscale x\nset xlabel 'layers N (N-N model)'\nset ylabel "
           "'‖∂L/∂W^{2,N}‖_F'\n"
        << "set xtics (" << fmt::format("{}", fmt::join(depths, ",")) << ")\nset xrange [" << depths.front() * 0.9
        << ":" << depths.back() * 1.1 << "]\n";
      g << "plot ";
      bool first = true;
      for (size_t c = 0; c < ncols; ++c) {
        if (!in_sweep[c]) continue;
        g << (first ? "'" : ", '") << dir << "/gp_depth_" << sn << ".dat' using 1:" << 2 + 2 * c << ":" << 3 + 2 * c
          << " with yerrorlines pt 7 lc rgb '" << colors[c] << "' title '" << labels[c] << "'";
        first = false;
      }
      g << "\n";
    }
    g << "unset multiplot\n";
    return g.str();
  };
}

}  // namespace

Result run_grad_profile(const Options& o) {
  const Grid grid = make_grid(o);
  const Profiles prof = measure(grid);
  const Summary sm = summarize(grid, prof);

  Result r;
  r.experiment = "grad-profile";
  r.config = make_config(grid);
  add_claims(r, grid, prof, sm);
  add_findings(r, grid, prof, sm);
  add_plot(r, grid, sm);
  return r;
}

}  // namespace stx::theory
