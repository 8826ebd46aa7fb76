// stx generate — continue a prompt with a trained language model (sampling with temperature
// and top-k; eval/decode.h).
#include <iostream>
#include <memory>

#include "command.h"
#include "stx/core/error.h"
#include "stx/eval/decode.h"
#include "stx/train/run_model.h"

namespace stx::cli {

void register_generate(Registry& reg) {
  struct Opts {
    std::string run, checkpoint = "best", prompt;
    int64_t max_new = 100, top_k = 0, seed = 1, samples = 1;
    double temperature = 1.0;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = reg.app.add_subcommand("generate", "continue a prompt with a trained language model");
  sub->add_option("--run", o->run, "run directory of `stx train` (data.task lm)")->required();
  sub->add_option("--prompt", o->prompt, "text to continue")->required();
  sub->add_option("--checkpoint", o->checkpoint, "best | last");
  sub->add_option("--max-new-tokens", o->max_new, "pieces to generate at most")->check(CLI::Range(1, 100000));
  sub->add_option("--temperature", o->temperature, "softmax temperature (0 = greedy)")->check(CLI::Range(0.0, 100.0));
  sub->add_option("--top-k", o->top_k, "sample from the k most likely pieces (0 = all)")->check(CLI::Range(0, 1000000));
  sub->add_option("--samples", o->samples, "independent continuations")->check(CLI::Range(1, 1000));
  sub->add_option("--seed", o->seed, "sampling seed");
  reg.add(sub, [o] {
    auto r = open_run(o->run, o->checkpoint);
    if (r.config.data.task != Task::LM) throw InputError(o->run + " is a translation model; use `stx translate`");
    auto p = r.vocab.tgt->encode(o->prompt);
    std::vector<int32_t> prompt(p.begin(), p.end());
    const int64_t room = r.config.model.max_len - 1 - static_cast<int64_t>(prompt.size());
    if (room < 1)
      throw InputError("--prompt has " + std::to_string(prompt.size()) + " pieces; the model's max_len " +
                       std::to_string(r.config.model.max_len) + " leaves no room to generate");
    for (int64_t s = 0; s < o->samples; ++s) {
      SampleOptions so;
      so.max_new_tokens = std::min(o->max_new, room);
      so.temperature = o->temperature, so.top_k = o->top_k, so.seed = static_cast<uint64_t>(o->seed + s);
      so.bos_id = r.vocab.bos_id, so.eos_id = r.vocab.eos_id;
      auto ids = sample(*r.model, prompt, so);
      std::vector<int> all(prompt.begin(), prompt.end());
      all.insert(all.end(), ids.begin(), ids.end());
      std::cout << r.vocab.tgt->decode(all) << "\n";
    }
    return 0;
  });
}

}  // namespace stx::cli
