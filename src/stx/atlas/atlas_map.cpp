// stx/atlas/atlas_map.cpp — see atlas_map.h.
#include "stx/atlas/atlas_map.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <sstream>

#include "stx/report/panels.h"
#include "stx/report/plot.h"
#include "stx/sweep/sweep_plan.h"

namespace stx::atlas {

namespace fs = std::filesystem;

namespace {

// Columns: per depth its rates, then the no-warm-up run where the plan has one, then a gap.
struct Layout {
  std::map<std::pair<int64_t, int64_t>, int> col;  // (depth, lr index or −1 for no warm-up) → x
  std::map<std::string, int> row;                  // scheme → y
  std::string xtics, ytics, depth_labels;
  int n_cols = 0;
};

Layout layout(const AtlasPlan& p, const std::vector<Entry>& entries) {
  Layout l;
  int x = 0;
  for (auto d : p.depths) {
    const int first = x;
    for (size_t i = 0; i < p.lrs.size(); ++i) {
      l.col[{d, static_cast<int64_t>(i)}] = x;
      l.xtics += fmt::format("{}\"{:g}\" {}", l.xtics.empty() ? "" : ", ", p.lrs[i], x++);
    }
    if (std::any_of(entries.begin(), entries.end(), [&](auto& e) { return e.run.depth == d && !e.run.warmup; })) {
      l.col[{d, -1}] = x;
      l.xtics += fmt::format(", \"no warm-up\" {}", x++);
    }
    l.depth_labels += fmt::format("set label \"{} layers\" at {:g},-1.2 center font ',12'\n", d, (first + x - 1) / 2.0);
    ++x;
  }
  l.n_cols = x - 1;
  for (size_t i = 0; i < p.schemes.size(); ++i) {
    l.row[p.schemes[i]] = static_cast<int>(i);
    l.ytics += fmt::format("{}{} {}", i ? ", " : "", gnuplot_quoted(sweep::scheme_row(p.schemes[i]).title), i);
  }
  return l;
}

}  // namespace

std::vector<MapCell> map_cells(const AtlasPlan& p, const std::vector<Entry>& entries, double unigram_bits) {
  const auto l = layout(p, entries);
  std::vector<MapCell> cells;
  std::map<std::pair<std::string, int64_t>, size_t> best;  // (scheme, depth) → index into cells
  for (auto& e : entries) {
    if (e.run.seed != 0 || (!e.skipped.empty() && !is_waiting(e)) || !l.row.count(e.run.scheme)) continue;
    const auto c = l.col.find({e.run.depth, e.run.warmup ? static_cast<int64_t>(e.run.lr_index) : -1});
    if (c == l.col.end()) continue;
    MapCell m{c->second, l.row.at(e.run.scheme)};
    if (!e.result.ended()) m.mark = Mark::Pending;
    else if (e.result.guard_stop) m.mark = Mark::Diverged;
    else if (e.reading.failure == "loss spike") m.mark = Mark::Spiked;
    else if (on_plateau(unigram_bits, e)) m.mark = Mark::Plateau;
    // Without a validation line: a stall (or too slow) did not learn; anything else has no reading to show.
    else if (!e.reading.final_bpb)
      m.mark = e.result.outcome == grid::Outcome::Stalls || e.result.outcome == grid::Outcome::TooSlow
                   ? Mark::Plateau
                   : Mark::NoReading;
    else m.mark = Mark::Learned, m.bpb = e.reading.final_bpb;
    cells.push_back(m);
    if (m.mark == Mark::Learned && e.run.warmup) {
      auto [it, fresh] = best.try_emplace({e.run.scheme, e.run.depth}, cells.size() - 1);
      if (!fresh && *m.bpb < *cells[it->second].bpb) it->second = cells.size() - 1;
    }
  }
  for (auto& [_, i] : best) cells[i].best = true;
  return cells;
}

std::optional<std::string> draw_map(const std::string& dir, const AtlasPlan& p, const std::vector<Entry>& entries) {
  const auto L = layout(p, entries);
  const double unigram = unigram_entropy_bits(p);
  std::ostringstream trained, plateau, diverged, spiked, noreading, pending, best, labels;
  double lo = INFINITY;
  bool any = false;
  for (auto& m : map_cells(p, entries, unigram)) {
    const auto at = fmt::format("{} {}", m.x, m.y);
    any = any || m.mark != Mark::Pending;
    switch (m.mark) {
      case Mark::Pending: pending << at << "\n"; break;
      case Mark::Diverged: diverged << at << "\n", labels << at << " \"div\"\n"; break;
      case Mark::Spiked: spiked << at << "\n", labels << at << " \"spike\"\n"; break;
      case Mark::Plateau: plateau << at << "\n"; break;
      case Mark::NoReading: noreading << at << "\n", labels << at << " \"n/a\"\n"; break;
      case Mark::Learned:
        lo = std::min(lo, *m.bpb);
        trained << at << " " << *m.bpb << "\n";
        labels << at << " \"" << fmt::format("{:.2f}", *m.bpb) << "\"\n";
        if (m.best) best << at << "\n";
        break;
    }
  }
  if (!any) return std::nullopt;
  // The colour scale: from the best run (rounded down) to the plateau line; with no run learned,
  // or no plateau line (pieces), 1.5 bits wide.
  double hi = std::isfinite(unigram) ? unigram - 0.1 : (std::isfinite(lo) ? lo + 1.5 : 10.0);
  lo = std::isfinite(lo) ? std::floor(lo * 10) / 10 : hi - 1.5;
  if (!(lo < hi)) lo = hi - 1.5;
  fs::create_directories(fs::path(dir) / "figures");
  const auto png = (fs::path(dir) / "figures" / kMapFigure).string();
  const int width = 230 + 52 * (L.n_cols + 1) + 170, height = 150 + 30 * static_cast<int>(p.schemes.size());
  run_gnuplot(
      {{"trained.dat", trained.str()},
       {"plateau.dat", plateau.str()},
       {"diverged.dat", diverged.str()},
       {"spiked.dat", spiked.str()},
       {"noreading.dat", noreading.str()},
       {"pending.dat", pending.str()},
       {"best.dat", best.str()},
       {"labels.dat", labels.str()}},
      [&](const std::string& data, const std::string& out) {
        const auto box = [&](const std::string& f, const std::string& fill) {
          return fmt::format("'{}/{}' using 1:2:(0.48):(0.48){} with boxxyerror fs solid 1.0 noborder {}", data, f,
                             f == "trained.dat" ? ":3" : "", fill);
        };
        std::string s = gnuplot_preamble(out, width, height);
        s += fmt::format(
            "unset key\nunset grid\nset yrange [{}:-1.9]\nset xrange [-0.6:{}]\nset ytics ({}) font ',10' nomirror\n"
            "set xtics ({}) rotate by 90 right font ',9' nomirror\nset tics scale 0\n"
            "set palette defined (0 '#1a9850', 0.5 '#d9ef8b', 1 '#fee08b')\nset cbrange [{:g}:{:g}]\n"
            "set cblabel 'final bits per byte (learned)'\n{}"
            "set title {} font ',12'\n",
            p.schemes.size() - 0.5, L.n_cols + 0.6, L.ytics, L.xtics, lo, hi, L.depth_labels,
            gnuplot_quoted("Which scheme trains at which depth and learning rate — final loss of each run (grey: "
                           "did not learn, red: diverged or loss spike, framed: the scheme's best at that depth, "
                           "dot: still to run)"));
        // An element whose file is empty is left out (gnuplot warns on an empty file).
        std::string plot;
        const auto add = [&](const std::ostringstream& o, const std::string& el) {
          if (!o.str().empty()) plot += (plot.empty() ? "plot " : ", ") + el;
        };
        add(trained, box("trained.dat", "lc palette"));
        add(plateau, box("plateau.dat", "lc rgb '#bdbdbd'"));
        add(diverged, box("diverged.dat", "lc rgb '#b2182b'"));
        add(spiked, box("spiked.dat", "lc rgb '#ef6548'"));
        add(noreading, box("noreading.dat", "lc rgb '#ffffff'"));
        add(best, fmt::format("'{}/best.dat' using 1:2:(0.46):(0.46) with boxxyerror lc rgb '#000000' lw 2.5 fs empty",
                              data));
        add(pending, fmt::format("'{}/pending.dat' using 1:2 with points pt 7 ps 0.4 lc rgb '#888888'", data));
        add(labels, fmt::format("'{}/labels.dat' using 1:2:3 with labels font ',8'", data));
        s += plot + "\n";
        return s;
      },
      png);
  return fs::exists(png) ? std::optional<std::string>("figures/" + std::string(kMapFigure)) : std::nullopt;
}

}  // namespace stx::atlas
