// stx/doctor/doctor_figures.cpp — see doctor_figures.h.
#include "stx/doctor/doctor_figures.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <sstream>

#include "stx/doctor/logistic.h"
#include "stx/report/plot.h"

namespace stx::doctor {

namespace {

// (FPR, TPR) points, thresholds from the highest score down; ties step together.
std::string roc_points(const Curve& c) {
  std::vector<size_t> idx;
  double pos = 0, neg = 0;
  for (size_t i = 0; i < c.score.size(); ++i)
    if (!std::isnan(c.score[i])) idx.push_back(i), (c.y[i] ? pos : neg) += 1;
  std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return c.score[a] > c.score[b]; });
  std::ostringstream s;
  s << "0 0\n";
  double tp = 0, fp = 0;
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j < idx.size() && c.score[idx[j]] == c.score[idx[i]]) (c.y[idx[j]] ? tp : fp) += 1, ++j;
    s << (neg > 0 ? fp / neg : 0) << " " << (pos > 0 ? tp / pos : 0) << "\n";
    i = j;
  }
  return s.str();
}

std::string quoted(const std::string& t) {
  std::string q = "'";
  for (char ch : t) q += ch == '\'' ? std::string("''") : std::string(1, ch);
  return q + "'";
}

}  // namespace

void draw_roc(const std::string& png, const std::string& title, const std::vector<Curve>& curves) {
  std::vector<std::pair<std::string, std::string>> data;
  std::string plots;
  for (size_t k = 0; k < curves.size(); ++k) {
    const auto& c = curves[k];
    std::vector<double> s;
    std::vector<int> y;
    for (size_t i = 0; i < c.score.size(); ++i)
      if (!std::isnan(c.score[i])) s.push_back(c.score[i]), y.push_back(c.y[i]);
    const double a = auroc(s, y);
    const auto file = fmt::format("roc{}.dat", k);
    data.emplace_back(file, roc_points(c));
    plots += fmt::format("{}DATA/{}' using 1:2 with lines lw {} lc {} title {}", plots.empty() ? "'" : ", '", file,
                         k == 0 ? 3 : 2, k + 1, quoted(fmt::format("{} (AUROC {:.3f})", c.label, a)));
  }
  run_gnuplot(
      data,
      [&](const std::string& dir, const std::string& tmp) {
        std::string p = plots;
        for (size_t pos; (pos = p.find("DATA/")) != std::string::npos;) p.replace(pos, 5, dir + "/");
        return gnuplot_preamble(tmp, 800, 700) +
               fmt::format(
                   "set title {}\nset xlabel 'false-positive rate (runs that trained, flagged)'\n"
                   "set ylabel 'true-positive rate (failures flagged)'\nset grid\nset key inside bottom right\n"
                   "set xrange [0:1]\nset yrange [0:1.02]\nset size square\n"
                   "plot {}, x with lines dt 2 lc rgb 'gray' notitle\n",
                   quoted(title), p);
      },
      png);
}

void draw_calibration(const std::string& png, const std::string& title, const Curve& c, int bins) {
  std::ostringstream s;
  for (int b = 0; b < bins; ++b) {
    double sp = 0, sy = 0, k = 0;
    for (size_t i = 0; i < c.score.size(); ++i) {
      if (std::isnan(c.score[i])) continue;
      if (std::min(static_cast<int>(c.score[i] * bins), bins - 1) == b) sp += c.score[i], sy += c.y[i], ++k;
    }
    if (k > 0) s << sp / k << " " << sy / k << " " << k << "\n";
  }
  run_gnuplot(
      {{"cal.dat", s.str()}},
      [&](const std::string& dir, const std::string& tmp) {
        return gnuplot_preamble(tmp, 800, 700) +
               fmt::format(
                   "set title {}\nset xlabel 'predicted P(fails), mean of the bin'\n"
                   "set ylabel 'observed failure rate'\nset grid\nset key inside top left\nset xrange [0:1]\n"
                   "set yrange [0:1.05]\nset size square\n"
                   "plot '{}/cal.dat' using 1:2 with linespoints pt 7 ps 1.5 lw 2 title 'doctor', "
                   "'{}/cal.dat' using 1:2:(sprintf('%d', $3)) with labels offset 1.5,0.8 notitle, "
                   "x with lines dt 2 lc rgb 'gray' title 'calibrated'\n",
                   quoted(title), dir, dir);
      },
      png);
}

}  // namespace stx::doctor
