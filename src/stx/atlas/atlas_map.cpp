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

std::optional<std::string> draw_map(const std::string& dir, const AtlasPlan& p, const std::vector<Entry>& entries) {
  // Columns: per depth its rates, then the no-warm-up run where the plan has one, then a gap.
  std::map<std::pair<int64_t, int64_t>, int> col;  // (depth, lr index or −1 for no warm-up) → x
  std::string xtics, depth_labels;
  int x = 0;
  for (auto d : p.depths) {
    const int first = x;
    for (size_t i = 0; i < p.lrs.size(); ++i) {
      col[{d, static_cast<int64_t>(i)}] = x;
      xtics += fmt::format("{}\"{:g}\" {}", xtics.empty() ? "" : ", ", p.lrs[i], x++);
    }
    if (std::any_of(entries.begin(), entries.end(), [&](auto& e) { return e.run.depth == d && !e.run.warmup; })) {
      col[{d, -1}] = x;
      xtics += fmt::format(", \"no warm-up\" {}", x++);
    }
    depth_labels += fmt::format("set label \"{} layers\" at {:g},-1.2 center font ',12'\n", d, (first + x - 1) / 2.0);
    ++x;
  }
  const int n_cols = x - 1;
  std::map<std::string, int> row;
  std::string ytics;
  for (size_t i = 0; i < p.schemes.size(); ++i) {
    row[p.schemes[i]] = static_cast<int>(i);
    ytics += fmt::format("{}{} {}", i ? ", " : "", gnuplot_quoted(sweep::scheme_row(p.schemes[i]).title), i);
  }
  const auto cells = summarize(p, entries);
  const double unigram = unigram_entropy_bits(p.base);
  std::ostringstream trained, plateau, diverged, spiked, pending, best, labels;
  double lo = INFINITY;
  bool any = false;
  for (auto& e : entries) {
    if (e.run.seed != 0 || !e.skipped.empty() || !row.count(e.run.scheme)) continue;
    const auto c = col.find({e.run.depth, e.run.warmup ? static_cast<int64_t>(e.run.lr_index) : -1});
    if (c == col.end()) continue;
    const int cx = c->second, cy = row[e.run.scheme];
    if (!e.result.ended()) {
      pending << cx << " " << cy << "\n";
      continue;
    }
    any = true;
    if (e.result.outcome == grid::Outcome::Diverged) {
      diverged << cx << " " << cy << "\n";
      labels << cx << " " << cy << " \"div\"\n";
    } else if (e.reading.failure == "loss spike") {
      spiked << cx << " " << cy << "\n";
      labels << cx << " " << cy << " \"spike\"\n";
    } else if (on_plateau(p, e) || !e.reading.final_bpb) {
      plateau << cx << " " << cy << "\n";
    } else {
      const double l = *e.reading.final_bpb;
      lo = std::min(lo, l);
      trained << cx << " " << cy << " " << l << "\n";
      labels << cx << " " << cy << " \"" << fmt::format("{:.2f}", l) << "\"\n";
      const auto& cell = cells.at({e.run.scheme, e.run.depth});
      if (e.run.warmup && cell.best_lr && *cell.best_lr == e.run.lr) best << cx << " " << cy << "\n";
    }
  }
  if (!any) return std::nullopt;
  const double hi = std::isfinite(unigram) ? unigram - 0.1 : lo + 1.5;
  lo = std::isfinite(lo) ? std::floor(lo * 10) / 10 : hi - 1.5;
  fs::create_directories(fs::path(dir) / "figures");
  const auto png = (fs::path(dir) / "figures" / kMapFigure).string();
  const int width = 230 + 52 * (n_cols + 1) + 170, height = 150 + 30 * static_cast<int>(p.schemes.size());
  run_gnuplot(
      {{"trained.dat", trained.str()},
       {"plateau.dat", plateau.str()},
       {"diverged.dat", diverged.str()},
       {"spiked.dat", spiked.str()},
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
            p.schemes.size() - 0.5, n_cols + 0.6, ytics, xtics, lo, hi, depth_labels,
            gnuplot_quoted("Which scheme trains at which depth and learning rate — final loss of each run (grey: the "
                           "unigram plateau, red: diverged or loss spike, framed: the best of its depth, dot: still "
                           "to run)"));
        // gnuplot skips a plot element whose file is empty; keep every file non-empty.
        const auto opt = [&](const std::ostringstream& o, const std::string& el) {
          return o.str().empty() ? std::string() : ", " + el;
        };
        s += "plot " + box("trained.dat", "lc palette") + opt(plateau, box("plateau.dat", "lc rgb '#bdbdbd'")) +
             opt(diverged, box("diverged.dat", "lc rgb '#b2182b'")) +
             opt(spiked, box("spiked.dat", "lc rgb '#ef6548'")) +
             opt(best, fmt::format("'{}/best.dat' using 1:2:(0.46):(0.46) with boxxyerror lc rgb '#000000' "
                                   "lw 2.5 fs empty",
                                   data)) +
             opt(pending, fmt::format("'{}/pending.dat' using 1:2 with points pt 7 ps 0.4 lc rgb '#888888'", data)) +
             opt(labels, fmt::format("'{}/labels.dat' using 1:2:3 with labels font ',8'", data)) + "\n";
        return s;
      },
      png);
  return fs::exists(png) ? std::optional<std::string>("figures/" + std::string(kMapFigure)) : std::nullopt;
}

}  // namespace stx::atlas
