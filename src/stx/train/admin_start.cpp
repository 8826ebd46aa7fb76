// stx/train/admin_start.cpp — see admin_start.h.
#include "stx/train/admin_start.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>

#include "stx/core/atomic_file.h"
#include "stx/model/admin_pass.h"
#include "stx/model/transformer.h"

namespace stx {

void profile_admin_at_start(TransformerImpl& model, Batcher& train, const std::string& run_dir, bool record,
                            bool quiet) {
  const auto pos = train.position();
  Batch b = train.next();
  train.seek(pos);
  const auto records = admin_profile(model, b.src, b.tgt_in);
  if (!record) return;
  auto j = nlohmann::json::object();
  j["paper"] = "Liu et al. 2020, Admin: omega_i = sqrt(sum_{j<i} Var f_j), accumulated as sqrt(Var[omega x] + Var[f])";
  j["batch"] = {{"sentences", b.sentences}, {"src_tokens", b.src_tokens}, {"tgt_tokens", b.tgt_tokens}};
  for (auto& r : records)
    j["sublayers"].push_back(
        {{"name", r.name}, {"omega", r.omega}, {"var_skip", r.var_skip}, {"var_branch", r.var_branch}});
  const auto path = run_dir + "/admin_profile.json";
  write_text_atomically(path, j.dump(1) + "\n");
  if (!quiet && !records.empty())
    std::cerr << fmt::format(
        "Admin profiling on the first training batch ({} sentences): ω from {:.3g} to {:.3g} over {} sub-layers → "
        "{}\n",
        b.sentences, records.front().omega, records.back().omega, records.size(), path);
}

}  // namespace stx
