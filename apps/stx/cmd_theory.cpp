// stx theory — check the source papers' claims (Xiong et al. 2020, DeepNet, σReparam) against measurement: `stx theory
// NAME` or `stx theory all --out DIR` (report.md with every table and figure).
#include <fmt/format.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "command.h"
#include "stx/core/atomic_file.h"
#include "stx/core/error.h"
#include "stx/report/plot.h"
#include "stx/theory/claims_table.h"
#include "stx/theory/experiment.h"

namespace stx::cli {

namespace {

struct TheoryOpts {
  std::string name, json, plot, out;
  bool strict = false;
  theory::Options o;
  int64_t d = 0, layers = 0, d_ff = 0, seeds = 0, tokens = 0, steps = 0;
  double lr = 0;
  std::vector<int64_t> depths;
  uint64_t seed = 0;
};

void write_text(const std::string& path, const std::string& text) { write_text_atomically(path, text); }

std::string experiment_names() {
  std::string s;
  for (auto& e : theory::experiments()) s += (s.empty() ? "" : ", ") + e.name;
  return s + ", all";
}

theory::Result run_one(const theory::Experiment& e, const theory::Options& o) {
  std::cerr << "stx theory " << e.name << ": " << e.summary << (o.full ? " [full]" : " [quick]") << "\n";
  auto t0 = std::chrono::steady_clock::now();
  auto r = e.run(o);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.config["seconds"] = std::round(s * 10) / 10;
  std::cout << "\n" << e.name << " — " << e.summary << "\n" << claims_table_text(r);
  for (auto& f : r.findings) std::cout << "  • " << f << "\n";
  std::cout << fmt::format("  ({:.1f} s)\n", s);
  return r;
}

void plot_if(const theory::Result& r, const std::string& png) {
  if (png.empty() || !r.plot) return;
  run_gnuplot(r.data_files, r.plot, png);
}

}  // namespace

void register_theory(Registry& reg) {
  auto t = std::make_shared<TheoryOpts>();
  auto* sub = reg.app.add_subcommand(
      "theory", "check the source papers' claims against measurement (prints predicted vs measured)");
  sub->add_option("experiment", t->name,
                  "lemma2 | lemma3 | theorem1 | grad-profile | deepnet-update | sigma-toy | entropy-bound | "
                  "stabilizers-init | all")
      ->required();
  sub->add_flag("--full", t->o.full, "paper-sized settings (slow) instead of the quick defaults");
  sub->add_option("--seed", t->seed, "base random seed");
  sub->add_option("--d", t->d, "model width d")->check(CLI::Range(int64_t{2}, int64_t{65536}));
  sub->add_option("--layers", t->layers, "number of layers")->check(CLI::Range(int64_t{1}, int64_t{100000}));
  sub->add_option("--d-ff", t->d_ff, "FFN width d_F")->check(CLI::Range(int64_t{1}, int64_t{262144}));
  sub->add_option("--seeds", t->seeds, "independent seeds to average over")
      ->check(CLI::Range(int64_t{2}, int64_t{100000}));
  sub->add_option("--tokens", t->tokens, "tokens per sequence")->check(CLI::Range(int64_t{2}, int64_t{100000}));
  sub->add_option("--steps", t->steps, "training steps (deepnet-update)")
      ->check(CLI::Range(int64_t{1}, int64_t{1000000}));
  sub->add_option("--depths", t->depths, "depth grid, e.g. 6,18,50")
      ->delimiter(',')
      ->check(CLI::Range(int64_t{1}, int64_t{100000}));
  sub->add_option("--lr", t->lr, "learning rate (deepnet-update)")->check(CLI::PositiveNumber);
  sub->add_option("--json", t->json, "write the result as JSON (claims schema: docs/design.md)");
  sub->add_option("--plot", t->plot, "write the figure as PNG");
  sub->add_option("--out", t->out, "with 'all': directory for report.md, JSON and figures");
  sub->add_flag("--strict", t->strict, "exit 1 when a theory claim fails");
  reg.add(sub, [t, sub] {
    auto& o = t->o;
    o.seed = t->seed;
    if (sub->count("--d")) o.d = t->d;
    if (sub->count("--layers")) o.layers = t->layers;
    if (sub->count("--d-ff")) o.d_ff = t->d_ff;
    if (sub->count("--seeds")) o.seeds = t->seeds;
    if (sub->count("--tokens")) o.tokens = t->tokens;
    if (sub->count("--steps")) o.steps = t->steps;
    if (sub->count("--depths")) o.depths = t->depths;
    if (sub->count("--lr")) o.lr = t->lr;
    if (t->name != "all") {
      auto* e = theory::find_experiment(t->name);
      if (!e) throw InputError("unknown experiment '" + t->name + "' (allowed: " + experiment_names() + ")");
      if (!t->out.empty()) throw InputError("--out is for 'stx theory all'; use --json and --plot for one experiment");
      auto r = run_one(*e, o);
      if (!t->json.empty()) write_text(t->json, r.to_json().dump(2) + "\n");
      plot_if(r, t->plot);
      return t->strict && !r.all_theory_claims_hold() ? 1 : 0;
    }
    if (t->out.empty()) throw InputError("'stx theory all' needs --out DIR (report.md, JSON and figures go there)");
    if (!t->json.empty() || !t->plot.empty()) throw InputError("with 'all', use --out DIR instead of --json/--plot");
    std::filesystem::create_directories(t->out);
    std::ostringstream md;
    md << "# stx theory report\n\nGenerated by `stx theory all --out " << t->out << (o.full ? " --full" : "")
       << "` (stx " << STX_VERSION << "). Each table: the claim, what the theory predicts, what was measured, the "
       << "tolerance (derived from the sampling error unless stated), and whether it holds. Rows marked "
       << "*observation* compare with a paper's description or probe outside the theorem's assumptions; they are "
       << "reported, not required.\n\n";
    int failed = 0, total = 0, observations_off = 0;
    for (auto& e : theory::experiments()) {
      auto r = run_one(e, o);
      write_text(t->out + "/" + e.name + ".json", r.to_json().dump(2) + "\n");
      std::string png;
      if (r.plot) {
        png = e.name + ".png";
        plot_if(r, t->out + "/" + png);
      }
      md << claims_markdown(r, e.summary, png);
      for (auto& c : r.claims) {
        if (c.theory) ++total, failed += !c.holds;
        else observations_off += !c.holds;
      }
    }
    md << "---\n\nSummary: " << total - failed << " of " << total << " theory claims hold; " << observations_off
       << " observations differ from the papers' descriptions (see the findings above).\n";
    write_text(t->out + "/report.md", md.str());
    std::cout << fmt::format(
        "\n{} of {} theory claims hold; {} observations differ from the papers. Report: {}/report.md\n", total - failed,
        total, observations_off, t->out);
    return t->strict && failed ? 1 : 0;
  });
}

}  // namespace stx::cli
