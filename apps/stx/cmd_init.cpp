// stx init — initialize a model from a config and write it as safetensors (docs/model.md).
#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <memory>

#include "command.h"
#include "stx/config/config_io.h"
#include "stx/io/model_io.h"
#include "stx/model/init.h"
#include "stx/model/transformer.h"

namespace stx::cli {

void register_init(Registry& reg) {
  struct Opts {
    ConfigOptions cfg;
    int64_t seed = 1;
    std::string out;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = reg.app.add_subcommand("init", "initialize a model (scheme, init, σReparam) and write model.safetensors");
  o->cfg.add_to(sub, /*config_required=*/true);
  sub->add_option("--seed", o->seed, "random seed (same seed and config: bit-identical weights)");
  sub->add_option("--out", o->out, "output .safetensors file")->required();
  reg.add(sub, [o] {
    Config cfg = resolve_config(o->cfg.config, o->cfg.overrides);
    cfg.train.seed = o->seed;
    Transformer model(cfg.model);
    initialize(*model, static_cast<uint64_t>(o->seed));
    save_model(o->out, *model, cfg);
    int64_t n = 0;
    for (auto& p : model->parameters()) n += p.numel();
    std::cout << "wrote " << o->out << ": " << to_string(cfg.model.arch) << ", scheme " << to_string(cfg.model.scheme)
              << (cfg.model.sigma_reparam ? " + σReparam" : "") << ", " << n << " parameters\n";
    if (cfg.model.scheme == Scheme::Admin) {  // the profiled ω (model/admin.h), stored in the file
      std::cout << "Admin ω, profiled on " << kAdminProfileBatch << " × "
                << std::min(kAdminProfileLen, cfg.model.max_len) << " random tokens:";
      for (auto& p : model->named_parameters(true))
        if (p.key().find("ratio_change") != std::string::npos)
          std::cout << " " << p.key().substr(0, p.key().find('.')) << "." << p.key().substr(p.key().find("layers.") + 7)
                    << "=" << fmt::format("{:.4g}", p.value()[0].item<double>());
      std::cout << "\n";
    }
    return 0;
  });
}

}  // namespace stx::cli
