// stx plot — figures of training runs (report/run_plots.h), several runs overlaid.
#include <filesystem>
#include <iostream>
#include <memory>

#include "command.h"
#include "stx/core/user_path.h"
#include "stx/report/metrics_schema.h"
#include "stx/report/run_plots.h"

namespace stx::cli {

void register_plot(Registry& reg) {
  struct Opts {
    std::vector<std::string> runs;
    std::string out;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = reg.app.add_subcommand("plot", "PNG figures of one or more runs' metrics.jsonl (overlaid)");
  sub->add_option("runs", o->runs, "run directories of `stx train`")->required();
  sub->add_option("--out", o->out, "output directory for the PNGs")->required();
  reg.add(sub, [o] {
    for (auto& d : o->runs) {  // named problems before anything opens a path (a FIFO would block)
      require_directory(d, "run directory");
      regular_file_if_present(metrics::path_in(d), "run file");
    }
    require_directory_or_missing(o->out, "--out");
    for (auto& f : plot_runs(o->runs, o->out)) std::cout << "wrote " << f << "\n";
    return 0;
  });
}

}  // namespace stx::cli
