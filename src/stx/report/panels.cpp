// stx/report/panels.cpp — see panels.h.
#include "stx/report/panels.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "stx/report/plot.h"

namespace stx {

namespace {

// max/min of the values (second column) of a panel's curves.
double value_span(const Panel& p) {
  double lo = INFINITY, hi = 0;
  for (auto& c : p.curves) {
    std::istringstream in(c.data);
    double x, y;
    while (in >> x >> y) lo = std::min(lo, y), hi = std::max(hi, y);
  }
  return lo > 0 && std::isfinite(lo) ? hi / lo : 0;
}

}  // namespace

std::string gnuplot_quoted(const std::string& s) {
  std::string out;
  for (char ch : s) out += (ch == '"' || ch == '\\') ? std::string("\\") + ch : std::string(1, ch);
  return "\"" + out + "\"";
}

void draw_panels(const std::string& png, std::vector<Panel> panels, const std::string& suptitle, int width, int height,
                 int rows) {
  std::vector<std::pair<std::string, std::string>> data;
  for (auto& p : panels)
    p.curves.erase(std::remove_if(p.curves.begin(), p.curves.end(), [](auto& c) { return c.data.empty(); }),
                   p.curves.end());
  panels.erase(std::remove_if(panels.begin(), panels.end(), [](auto& p) { return p.curves.empty(); }), panels.end());
  if (panels.empty()) return;
  for (auto& p : panels) p.logy = p.logy && value_span(p) > 20;
  for (size_t i = 0; i < panels.size(); ++i)
    for (size_t k = 0; k < panels[i].curves.size(); ++k)
      data.emplace_back(fmt::format("p{}c{}.dat", i, k), panels[i].curves[k].data);
  run_gnuplot(
      data,
      [&](const std::string& dir, const std::string& tmp) {
        std::string s = gnuplot_preamble(tmp, width, height) + "set key top right font ',9'\n";
        const size_t r = std::max<size_t>(1, std::min<size_t>(rows, panels.size())), cols = (panels.size() + r - 1) / r;
        if (panels.size() > 1)
          s += fmt::format("set multiplot layout {},{} title {}\n", r, cols, gnuplot_quoted(suptitle));
        for (size_t i = 0; i < panels.size(); ++i) {
          const auto& p = panels[i];
          s += fmt::format("unset logscale\nset title {}\nset xlabel {}\nset ylabel {}\n{}{}", gnuplot_quoted(p.title),
                           gnuplot_quoted(p.xlabel), gnuplot_quoted(p.ylabel), p.logx ? "set logscale x\n" : "",
                           p.logy ? "set logscale y\n" : "");
          s += p.extra;
          std::string plot;
          for (size_t k = 0; k < p.curves.size(); ++k) {
            const auto& c = p.curves[k];
            plot += fmt::format("{}'{}/p{}c{}.dat' using 1:2 with {} lc rgb '{}' {}", plot.empty() ? "" : ", ", dir, i,
                                k, c.style, c.color, c.title.empty() ? "notitle" : "title " + gnuplot_quoted(c.title));
          }
          s += "plot " + plot + "\n";
        }
        if (panels.size() > 1) s += "unset multiplot\n";
        return s;
      },
      png);
}

}  // namespace stx
