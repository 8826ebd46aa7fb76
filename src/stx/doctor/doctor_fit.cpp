// stx/doctor/doctor_fit.cpp — see doctor_fit.h.
#include "stx/doctor/doctor_fit.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "stx/config/schemes.h"
#include "stx/core/atomic_file.h"
#include "stx/core/error.h"
#include "stx/doctor/doctor_dataset.h"
#include "stx/doctor/doctor_figures.h"
#include "stx/doctor/doctor_model.h"

namespace stx::doctor {

namespace fs = std::filesystem;

std::vector<std::string> default_holdout_schemes() {
  std::vector<std::string> out;
  const auto rows = schemes_used_by(kUseSweep);
  for (size_t i = 4; i < rows.size(); i += 5) out.push_back(rows[i]->name);
  return out;
}

namespace {

struct Case {
  const Example* ex = nullptr;
  std::optional<Signals> s;
  bool observed = false;  // diverged by the horizon
  bool train = false;
  int64_t horizon = 0;
  int fails = 0, diverges = 0;
};

std::vector<double> quantiles(std::vector<double> v) {
  if (v.empty()) return {};
  std::sort(v.begin(), v.end());
  auto q = [&](double f) { return v[static_cast<size_t>(std::lround(f * static_cast<double>(v.size() - 1)))]; };
  return {q(0.1), q(0.5), q(0.9)};
}

// How a set of predictions does on a set of cases (p: P(fails) per case, NaN = not judged).
struct Score {
  int n = 0, judged = 0, positives = 0;
  double auroc = NAN, precision = NAN, recall = NAN, brier = NAN;
  int tp = 0, fp = 0, fn = 0, tn = 0;
};

Score score(const std::vector<double>& p, const std::vector<int>& y, double threshold) {
  Score s;
  std::vector<double> pj;
  std::vector<int> yj;
  double brier = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    ++s.n;
    s.positives += y[i];
    if (std::isnan(p[i])) continue;
    ++s.judged;
    pj.push_back(p[i]), yj.push_back(y[i]);
    brier += (p[i] - y[i]) * (p[i] - y[i]);
    const bool flag = p[i] >= threshold;
    (flag ? (y[i] ? s.tp : s.fp) : (y[i] ? s.fn : s.tn)) += 1;
  }
  if (s.judged == 0) return s;
  s.auroc = auroc(pj, yj);
  s.brier = brier / s.judged;
  s.precision = s.tp + s.fp ? static_cast<double>(s.tp) / (s.tp + s.fp) : NAN;
  s.recall = s.tp + s.fn ? static_cast<double>(s.tp) / (s.tp + s.fn) : NAN;
  return s;
}

nlohmann::json score_json(const Score& s) {
  auto num = [](double x) { return std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x); };
  return {{"runs", s.n},
          {"judged", s.judged},
          {"failures", s.positives},
          {"auroc", num(s.auroc)},
          {"precision", num(s.precision)},
          {"recall", num(s.recall)},
          {"brier", num(s.brier)},
          {"tp", s.tp},
          {"fp", s.fp},
          {"fn", s.fn},
          {"tn", s.tn}};
}

// The P(fails) threshold with the best F1 score on the fitted runs (ties: the higher).
double best_f1_threshold(const Logistic& f, const std::vector<std::vector<double>>& X, const std::vector<int>& y) {
  std::vector<double> p;
  for (auto& x : X) p.push_back(f.prob(x));
  double best = 0.5, best_f1 = -1;
  for (double t : p) {
    int tp = 0, fp = 0, fn = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      const bool flag = p[i] >= t;
      tp += flag && y[i], fp += flag && !y[i], fn += !flag && y[i];
    }
    const double f1 = 2.0 * tp / std::max(1, 2 * tp + fp + fn);
    if (f1 > best_f1 || (f1 == best_f1 && t > best)) best_f1 = f1, best = t;
  }
  return best;
}

std::string f3(double x) { return std::isnan(x) ? "—" : fmt::format("{:.3f}", x); }

}  // namespace

int fit(const FitOptions& o) {
  const auto examples = read_dataset(o.data);
  if (examples.empty()) throw InputError("the doctor's dataset '" + o.data + "' has no examples");
  const auto& names = signal_names();
  const std::set<int64_t> train_depths(o.train_depths.begin(), o.train_depths.end());
  const std::set<std::string> held(o.holdout_schemes.begin(), o.holdout_schemes.end());
  std::vector<Case> cases;
  int unreadable = 0;
  for (auto& e : examples) {
    Case c;
    c.ex = &e;
    c.horizon = std::max<int64_t>(2, static_cast<int64_t>(std::ceil(0.05 * static_cast<double>(e.steps))));
    c.observed = e.early.diverged_step && *e.early.diverged_step <= c.horizon;
    if (!c.observed) c.s = signals_at(e.early.lines, c.horizon, e.lr);
    if (!c.observed && !c.s) {
      ++unreadable;
      continue;
    }
    c.train = train_depths.count(e.depth) && !held.count(e.scheme);
    c.fails = doctor_class(e.label) != "trains", c.diverges = doctor_class(e.label) == "diverges";
    cases.push_back(c);
  }
  // Fit on the training runs that did not diverge within the probe.
  std::vector<std::vector<double>> X, Xf;
  std::vector<int> y, yd;
  for (auto& c : cases)
    if (c.train && !c.observed) {
      X.push_back(c.s->x), y.push_back(c.fails);
      if (c.fails) Xf.push_back(c.s->x), yd.push_back(c.diverges);
    }
  if (X.empty()) throw InputError("no training runs: no example at --train-depths outside the held-out schemes");
  std::vector<size_t> all(names.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  DoctorModel m;
  m.fail = fit_logistic(X, y, names, all, o.l2);
  m.threshold = o.threshold > 0 ? o.threshold : best_f1_threshold(m.fail, X, y);
  const auto ndiv = std::count(yd.begin(), yd.end(), 1);
  m.diverge_prior = yd.empty() ? 0.5 : static_cast<double>(ndiv) / static_cast<double>(yd.size());
  if (ndiv >= 3 && static_cast<size_t>(ndiv) + 3 <= yd.size()) {
    m.diverge = fit_logistic(Xf, yd, names, all, o.l2);
    m.diverge_fitted = true;
  }
  const auto loss_only = fit_logistic(X, y, names, {0}, o.l2);
  const auto grad_only = fit_logistic(X, y, names, {1}, o.l2);
  // Each baseline flags at its own best-F1 threshold on the fitted runs, as the doctor does.
  const double loss_threshold = best_f1_threshold(loss_only, X, y), grad_threshold = best_f1_threshold(grad_only, X, y);
  m.ranges.assign(names.size(), {});
  for (size_t i = 0; i < names.size(); ++i) {
    std::vector<double> tr, fa;
    bool any = false;
    for (size_t r = 0; r < X.size(); ++r) {
      const double v = X[r][i];
      if (v == kMissing) continue;
      m.ranges[i].lo = any ? std::min(m.ranges[i].lo, v) : v;
      m.ranges[i].hi = any ? std::max(m.ranges[i].hi, v) : v;
      any = true;
      (y[r] ? fa : tr).push_back(v);
    }
    m.ranges[i].trains_q = quantiles(tr), m.ranges[i].fails_q = quantiles(fa);
  }
  // The atlas cells of the fitted runs: rates that trained, the best (warm-up runs).
  std::map<std::pair<std::string, int64_t>, AtlasCell> cells;
  for (auto& c : cases) {
    if (!c.train || !c.ex->warmup) continue;
    auto& a = cells[{c.ex->scheme, c.ex->depth}];
    a.scheme = c.ex->scheme, a.depth = c.ex->depth;
    if (c.fails) continue;
    if (std::find(a.trained_lrs.begin(), a.trained_lrs.end(), c.ex->lr) == a.trained_lrs.end())
      a.trained_lrs.push_back(c.ex->lr);
    if (c.ex->final_bpb && (!a.best_bpb || *c.ex->final_bpb < *a.best_bpb))
      a.best_bpb = c.ex->final_bpb, a.best_lr = c.ex->lr;
  }
  for (auto& [k, a] : cells) {
    std::sort(a.trained_lrs.begin(), a.trained_lrs.end());
    m.atlas.push_back(a);
  }
  // The regime: what every fitted run shares (the atlas's base config).
  m.regime = nlohmann::json::object();
  bool first = true;
  for (auto& c : cases) {
    if (!c.train) continue;
    if (first) {
      m.regime = c.ex->regime, first = false;
      continue;
    }
    for (auto it = m.regime.begin(); it != m.regime.end();)
      it = c.ex->regime.contains(it.key()) && c.ex->regime[it.key()] == it.value() ? std::next(it) : m.regime.erase(it);
  }

  // Evaluation.
  struct Group {
    std::string name;
    std::vector<double> doc, doc_all, loss, grad;
    std::vector<int> y;
    std::vector<int64_t> lead;
    int observed = 0, outside = 0;
    std::map<std::string, std::map<std::string, int>> confusion;  // truth → predicted
    std::vector<std::pair<double, int>> calib;
    nlohmann::json misjudged = nlohmann::json::array();  // wrong or declined: name, truth, predicted, P
  };
  std::map<std::string, Group> groups;
  auto group_of = [&](const Case& c) -> std::string {
    if (c.train) return "fitted runs (in-sample)";
    if (!train_depths.count(c.ex->depth)) return fmt::format("held-out depth {}", c.ex->depth);
    return "held-out schemes";
  };
  for (auto& c : cases) {
    for (const std::string& gname : {group_of(c), c.train ? std::string() : std::string("all held-out runs")}) {
      if (gname.empty()) continue;
      auto& g = groups[gname];
      g.name = gname;
      g.y.push_back(c.fails);
      double p, pl, pg, pall;
      std::string predicted;
      if (c.observed) {
        p = pl = pg = pall = 1.0, ++g.observed, predicted = "diverges";
      } else {
        pall = m.fail.prob(c.s->x);
        const bool out = !signals_outside(m, c.s->x).empty();
        g.outside += out;
        p = out ? NAN : pall;
        pl = loss_only.prob(c.s->x), pg = grad_only.prob(c.s->x);
        const double pd = m.diverge_fitted ? m.diverge.prob(c.s->x) : m.diverge_prior;
        predicted = out ? "not judged" : pall < m.threshold ? "trains" : pd >= 0.5 ? "diverges" : "stalls";
      }
      g.doc.push_back(p), g.doc_all.push_back(pall), g.loss.push_back(pl), g.grad.push_back(pg);
      ++g.confusion[c.ex->label][predicted];
      if (predicted == "not judged" || (predicted != "trains") != c.fails)
        g.misjudged.push_back({{"name", c.ex->name},
                               {"truth", c.ex->label},
                               {"predicted", predicted},
                               {"p_fails", std::isnan(pall) ? nlohmann::json(nullptr) : nlohmann::json(pall)}});
      if (!std::isnan(p)) g.calib.push_back({p, c.fails});
      // Lead: how many updates before the failure the warning came; a run that failed at or
      // before K was not warned in advance and has none.
      if (c.fails && !std::isnan(p) && p >= m.threshold) {
        const int64_t fail_at = c.diverges && c.ex->failure_step ? *c.ex->failure_step : c.ex->steps;
        if (fail_at > c.horizon) g.lead.push_back(fail_at - c.horizon);
      }
    }
  }
  nlohmann::json report = {{"command", o.command},
                           {"dataset", o.data},
                           {"train_depths", o.train_depths},
                           {"holdout_schemes", o.holdout_schemes},
                           {"l2", o.l2},
                           {"threshold", m.threshold},
                           {"baseline_thresholds", {{"loss", loss_threshold}, {"grad_norm", grad_threshold}}},
                           {"horizon_fraction", 0.05},
                           {"examples", examples.size()},
                           {"unreadable", unreadable}};
  const auto in_probe = std::count_if(cases.begin(), cases.end(), [](const Case& c) { return c.train && c.observed; });
  std::string md = "# The doctor's held-out test (generated by `stx doctor fit`)\n\n";
  md += fmt::format(
      "Command: `{}`\n\nFitted on depths {} without the schemes {}; {} runs ({} failing) fitted{}. "
      "Signals at K = 5 % of the updates. Threshold P(fails) ≥ {}.\n\n",
      o.command, fmt::join(o.train_depths, ", "), fmt::join(o.holdout_schemes, ", "), X.size(),
      std::count(y.begin(), y.end(), 1),
      in_probe ? fmt::format(", besides {} that diverged within the probe (no signals to fit; counted as predicted "
                             "failures in the table)",
                             in_probe)
               : "",
      fmt::format("{:.3f}{}", m.threshold, o.threshold > 0 ? "" : " (best F1 on the fitted runs)"));
  md +=
      "| runs | n | failures | judged | AUROC doctor | AUROC doctor (all, incl. out of range) | AUROC loss at K "
      "| AUROC ‖g‖ at K | precision | recall | Brier | observed in probe | median lead (steps) |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  nlohmann::json gj = nlohmann::json::object();
  for (auto& [gname, g] : groups) {
    const auto sd = score(g.doc, g.y, m.threshold), sa = score(g.doc_all, g.y, m.threshold);
    const auto sl = score(g.loss, g.y, loss_threshold), sg = score(g.grad, g.y, grad_threshold);
    std::sort(g.lead.begin(), g.lead.end());
    const double lead = g.lead.empty() ? NAN : static_cast<double>(g.lead[g.lead.size() / 2]);
    // Calibration: five bins of P(fails).
    nlohmann::json calib = nlohmann::json::array();
    for (int b = 0; b < 5; ++b) {
      double sp = 0, sy = 0, k = 0;
      for (auto& [p, yy] : g.calib)
        if (std::min(static_cast<int>(p * 5), 4) == b) sp += p, sy += yy, ++k;
      calib.push_back({{"bin", fmt::format("{:.1f}–{:.1f}", b / 5.0, (b + 1) / 5.0)},
                       {"runs", k},
                       {"mean_p", k ? nlohmann::json(sp / k) : nlohmann::json(nullptr)},
                       {"observed_rate", k ? nlohmann::json(sy / k) : nlohmann::json(nullptr)}});
    }
    gj[gname] = {{"doctor", score_json(sd)},
                 {"doctor_all", score_json(sa)},
                 {"baseline_loss", score_json(sl)},
                 {"baseline_grad_norm", score_json(sg)},
                 {"observed_in_probe", g.observed},
                 {"outside_fitted_range", g.outside},
                 {"lead_steps", g.lead},
                 {"calibration", calib},
                 {"confusion", g.confusion},
                 {"misjudged", g.misjudged}};
    md += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", gname, sd.n, sd.positives,
                      sd.judged, f3(sd.auroc), f3(sa.auroc), f3(sl.auroc), f3(sg.auroc), f3(sd.precision),
                      f3(sd.recall), f3(sd.brier), g.observed, std::isnan(lead) ? "—" : fmt::format("{:.0f}", lead));
  }
  md += "\nConfusion (truth → predicted) and calibration per group: report.json.\n";
  // The held-out runs it got wrong or declined, by name (P: before the range check).
  for (auto& [gname, g] : groups) {
    if (gname == "all held-out runs" || gname == "fitted runs (in-sample)" || g.misjudged.empty()) continue;
    md += fmt::format("\nMisjudged, {} ({}):", gname, g.misjudged.size());
    for (auto& e : g.misjudged)
      md += fmt::format(" {} ({} → {}, P = {:.2f});", e["name"].get<std::string>(), e["truth"].get<std::string>(),
                        e["predicted"].get<std::string>(), e["p_fails"].is_number() ? e["p_fails"].get<double>() : NAN);
    md.back() = '\n';
  }
  // Figures of the held-out runs (all of them together).
  if (auto it = groups.find("all held-out runs"); it != groups.end()) {
    const auto& g = it->second;
    const auto fig = fs::path(o.report_dir) / "figures";
    fs::create_directories(fig);
    try {
      draw_roc((fig / "roc_heldout.png").string(),
               fmt::format("held-out runs ({}): will it fail? from the first 5 % of the updates", g.y.size()),
               {{"doctor", g.doc, g.y}, {"loss at K", g.loss, g.y}, {"gradient norm at K", g.grad, g.y}});
      draw_calibration((fig / "calibration_heldout.png").string(), "held-out runs: P(fails) against what happened",
                       {"doctor", g.doc, g.y});
      md += "\n![ROC](figures/roc_heldout.png)\n![calibration](figures/calibration_heldout.png)\n";
    } catch (const InputError& e) {
      std::cerr << "stx doctor fit: figures not drawn: " << e.what() << "\n";
    }
  }
  report["groups"] = gj;
  nlohmann::json coef = nlohmann::json::object();
  for (size_t i = 0; i < names.size(); ++i) coef[names[i]] = m.fail.w[i];
  report["fails_weights_standardized"] = coef;
  m.fitted_on = {{"command", o.command},
                 {"dataset", o.data},
                 {"train_depths", o.train_depths},
                 {"holdout_schemes", o.holdout_schemes},
                 {"runs", X.size()},
                 {"failing", std::count(y.begin(), y.end(), 1)}};
  md +=
      "\nStandardized weights of P(fails) (positive: pushes toward failure):\n\n| signal | weight | mean | scale "
      "|\n|---|---|---|---|\n";
  for (size_t i = 0; i < names.size(); ++i)
    md += fmt::format("| {} | {:+.3f} | {:.4g} | {:.4g} |\n", names[i], m.fail.w[i], m.fail.mean[i], m.fail.scale[i]);
  fs::create_directories(o.report_dir);
  if (auto parent = fs::path(o.model_out).parent_path(); !parent.empty()) fs::create_directories(parent);
  write_text_atomically(o.model_out, to_json(m).dump(1) + "\n");
  write_text_atomically((fs::path(o.report_dir) / "report.json").string(), report.dump(1) + "\n");
  write_text_atomically((fs::path(o.report_dir) / "report.md").string(), md);
  std::cout << md;
  return 0;
}

}  // namespace stx::doctor
