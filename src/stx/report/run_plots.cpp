// stx/report/run_plots.cpp — see run_plots.h.
#include "stx/report/run_plots.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "stx/core/error.h"
#include "stx/report/metrics_schema.h"
#include "stx/report/metrics_signals.h"
#include "stx/report/plot.h"

namespace stx {

namespace fs = std::filesystem;

namespace {

constexpr const char* kLowestHead = " lowest head entropy";  // a name no metrics key has

struct Run {
  std::string name;
  std::vector<nlohmann::json> records;
};

// "step value" rows of every record holding `key` (a JSON pointer), as a data file.
std::string series(const Run& r, const nlohmann::json::json_pointer& key) {
  std::ostringstream s;
  for (auto& j : r.records)
    if (j.contains(key) && j[key].is_number()) s << j["step"].get<int64_t>() << " " << j[key].get<double>() << "\n";
  return s.str();
}

std::string quoted(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return "\"" + out + "\"";
}

// Overlays one curve per run and key on a shared x axis (step).
void overlay(const std::vector<Run>& runs, const std::vector<std::pair<std::string, std::string>>& keys,
             const std::string& title, const std::string& ylabel, bool logy, const std::string& png) {
  std::vector<std::pair<std::string, std::string>> data;
  std::string plots;
  for (size_t i = 0; i < runs.size(); ++i)
    for (size_t k = 0; k < keys.size(); ++k) {
      auto text = series(runs[i], nlohmann::json::json_pointer(keys[k].first));
      if (text.empty()) continue;
      const auto file = fmt::format("r{}_{}.dat", i, k);
      data.emplace_back(file, text);
      const std::string label =
          runs.size() > 1 ? runs[i].name + (keys.size() > 1 ? " " + keys[k].second : "") : keys[k].second;
      plots += fmt::format("{}DATA/{}' using 1:2 with lines lw 2 dt {} lc {} title {}", plots.empty() ? "'" : ", '",
                           file, k + 1, i + 1, quoted(label));
    }
  if (data.empty()) return;
  run_gnuplot(
      data,
      [&](const std::string& dir, const std::string& tmp) {
        std::string p = plots;
        for (size_t pos; (pos = p.find("DATA/")) != std::string::npos;) p.replace(pos, 5, dir + "/");
        return gnuplot_preamble(tmp) +
               fmt::format(
                   "set title {}\nset xlabel 'step'\nset ylabel {}\nset grid\nset key outside right\n{}plot {}\n",
                   quoted(title), quoted(ylabel), logy ? "set logscale y\n" : "", p);
      },
      png);
}

// Heatmap of a per-layer array over time: x = step, y = layer, colour = log10 value.
void heatmap(const Run& r, const nlohmann::json::json_pointer& key, const std::string& title, const std::string& png) {
  std::ostringstream s;
  int64_t layers = 0;
  for (auto& j : r.records) {
    if (!j.contains(key) || !j[key].is_array()) continue;
    const auto& a = j[key];
    layers = static_cast<int64_t>(a.size());
    for (size_t l = 0; l < a.size(); ++l)
      s << j["step"].get<int64_t>() << " " << l + 1 << " "
        << (a[l].is_number() && a[l].get<double>() > 0 ? std::log10(a[l].get<double>()) : NAN) << "\n";
    s << "\n";
  }
  if (layers == 0) return;
  run_gnuplot(
      {{"h.dat", s.str()}},
      [&](const std::string& dir, const std::string& tmp) {
        return gnuplot_preamble(tmp) +
               fmt::format(
                   "set title {}\nset xlabel 'step'\nset ylabel 'layer'\nset cblabel 'log10 norm'\nset view map\n"
                   "set palette rgbformulae 33,13,10\nset yrange [0.5:{}.5]\n"
                   "{}plot '{}/h.dat' using 1:2:3 with image notitle\n",
                   quoted(title), layers, layers <= 24 ? "set ytics 1\n" : "", dir);
      },
      png);
}

// Per-layer profile at the last record that has `key`: one curve per run.
void last_profile(const std::vector<Run>& runs, const nlohmann::json::json_pointer& key, const std::string& title,
                  const std::string& ylabel, const std::string& png) {
  std::vector<std::pair<std::string, std::string>> data;
  std::string plots;
  for (size_t i = 0; i < runs.size(); ++i) {
    const nlohmann::json* last = nullptr;
    for (auto& j : runs[i].records)
      if (j.contains(key) && j[key].is_array()) last = &j;
    if (!last) continue;
    std::ostringstream s;
    const auto& a = (*last)[key];
    for (size_t l = 0; l < a.size(); ++l)
      if (a[l].is_number()) s << l + 1 << " " << a[l].get<double>() << "\n";
    const auto file = fmt::format("p{}.dat", i);
    data.emplace_back(file, s.str());
    plots += fmt::format("{}DATA/{}' using 1:2 with linespoints lw 2 lc {} title {}", plots.empty() ? "'" : ", '", file,
                         i + 1, quoted(fmt::format("{} (step {})", runs[i].name, (*last)["step"].get<int64_t>())));
  }
  if (data.empty()) return;
  run_gnuplot(
      data,
      [&](const std::string& dir, const std::string& tmp) {
        std::string p = plots;
        for (size_t pos; (pos = p.find("DATA/")) != std::string::npos;) p.replace(pos, 5, dir + "/");
        return gnuplot_preamble(tmp) +
               fmt::format(
                   "set title {}\nset xlabel 'layer'\nset ylabel {}\nset grid\nset key outside right\nplot {}\n",
                   quoted(title), quoted(ylabel), p);
      },
      png);
}

}  // namespace

std::vector<std::string> plot_runs(const std::vector<std::string>& run_dirs, const std::string& out_dir) {
  std::vector<Run> runs;
  for (auto& d : run_dirs) {
    const auto m = metrics::path_in(d);
    if (!fs::exists(m)) throw InputError(d + " has no metrics.jsonl; is it a run directory of `stx train`?");
    runs.push_back({fs::path(d).lexically_normal().filename().string(), {}});
    for (auto& r : metrics::read_metrics(m).records) {
      if (auto h = metrics::lowest_head_entropy(r)) r.json[kLowestHead] = *h;  // drawn below, not a logged key
      runs.back().records.push_back(std::move(r.json));
    }
    if (runs.back().name.empty()) runs.back().name = d;
  }
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) throw InputError("cannot create " + out_dir + ": " + ec.message());
  const auto out = [&](const std::string& f) { return (fs::path(out_dir) / f).string(); };
  using P = nlohmann::json::json_pointer;
  namespace key = metrics::key;
  const auto at = [](std::initializer_list<const char*> path) {
    std::string s;
    for (const char* k : path) s += '/', s += k;
    return s;
  };
  overlay(runs, {{at({key::loss}), "train loss"}, {at({key::valid_loss}), "valid loss"}},
          "loss (label-smoothed, per token)", "loss", false, out("loss.png"));
  overlay(runs, {{at({key::valid_bleu}), "valid BLEU"}}, "validation BLEU (greedy)", "BLEU", false, out("bleu.png"));
  overlay(runs, {{at({key::grad_norm}), "‖g‖"}}, "global gradient norm (before clipping)", "‖g‖₂", true,
          out("grad_norm.png"));
  overlay(runs, {{at({key::delta_f}), "‖ΔF‖ from θ₀"}, {at({key::delta_f_step}), "‖ΔF‖ per log interval"}},
          "model update ‖F(x,θ_t) − F(x,θ₀)‖ on the probe batch (DeepNet Fig. 4)", "mean token ‖ΔF‖₂", true,
          out("delta_f.png"));
  overlay(runs, {{at({key::lr}), "lr"}}, "learning rate", "lr", false, out("lr.png"));
  // Lowest attention entropy over all layers and heads, over time (entropy collapse).
  overlay(runs, {{at({kLowestHead}), "lowest head entropy"}},
          "attention entropy of the lowest layer and head (Zhai et al.)", "entropy (nats)", false,
          out("entropy_lowest.png"));
  for (auto& r : runs)
    for (const char* stack : {metrics::kEncoder, metrics::kDecoder}) {
      heatmap(r, P(at({key::grad_norm_layer, stack})), fmt::format("{}: {} gradient norm per layer", r.name, stack),
              out(fmt::format("grad_heatmap_{}_{}.png", r.name, stack)));
    }
  for (const char* stack : {metrics::kEncoder, metrics::kDecoder}) {
    last_profile(runs, P(at({key::ln_input_norm, stack, "final_layer_norm"})),
                 fmt::format("{}: ‖input of the FFN norm‖/√d per layer", stack), "‖z‖/√d",
                 out(fmt::format("ln_input_{}.png", stack)));
    last_profile(runs, P(at({key::attn_entropy, stack, "self_attn", metrics::kMinHead})),
                 fmt::format("{}: self-attention entropy per layer (lowest head)", stack), "entropy (nats)",
                 out(fmt::format("entropy_{}.png", stack)));
  }
  std::vector<std::string> written;
  for (auto& e : fs::directory_iterator(out_dir))
    if (e.path().extension() == ".png") written.push_back(e.path().string());
  std::sort(written.begin(), written.end());
  return written;
}

}  // namespace stx
