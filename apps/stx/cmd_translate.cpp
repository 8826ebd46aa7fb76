// stx translate — translate stdin to stdout, one sentence per line, with a trained run
// (greedy or beam search with length penalty; eval/decode.h).
#include <iostream>
#include <memory>

#include "command.h"
#include "stx/core/error.h"
#include "stx/eval/decode.h"
#include "stx/train/run_model.h"

namespace stx::cli {

void register_translate(Registry& reg) {
  struct Opts {
    std::string run, checkpoint = "best";
    int64_t beam = 4, batch = 32;
    double lenpen = 1.0;
  };
  auto o = std::make_shared<Opts>();
  auto* sub =
      reg.app.add_subcommand("translate", "translate stdin → stdout (one sentence per line) with a trained run");
  sub->add_option("--run", o->run, "run directory of `stx train` (data.task translation)")->required();
  sub->add_option("--checkpoint", o->checkpoint, "best | last");
  sub->add_option("--beam", o->beam, "beam size (1 = greedy)")->check(CLI::Range(1, 64));
  sub->add_option("--lenpen", o->lenpen, "length penalty α: score / length^α")->check(CLI::Range(0.0, 10.0));
  sub->add_option("--batch", o->batch, "sentences decoded together")->check(CLI::Range(1, 4096));
  reg.add(sub, [o] {
    auto r = open_run(o->run, o->checkpoint);
    if (r.config.data.task != Task::Translation) throw InputError(o->run + " is a language model; use `stx generate`");
    DecodeOptions d;
    d.beam = o->beam, d.length_penalty = o->lenpen;
    d.bos_id = r.vocab.bos_id, d.eos_id = r.vocab.eos_id, d.pad_id = r.vocab.pad_id;
    d.max_len_a = 2, d.max_len_b = 10;
    const int64_t max_src = r.config.model.max_len;
    std::vector<std::vector<int32_t>> pending;
    auto flush = [&] {
      for (auto& ids : translate(*r.model, pending, d))
        std::cout << r.vocab.tgt->decode(std::vector<int>(ids.begin(), ids.end())) << "\n";
      std::cout.flush();
      pending.clear();
    };
    for (std::string line; std::getline(std::cin, line);) {
      auto x = r.vocab.src->encode(line);
      std::vector<int32_t> src(x.begin(), x.end());
      if (static_cast<int64_t>(src.size()) + 1 > max_src) src.resize(max_src - 1);  // truncate to the model's max_len
      src.push_back(static_cast<int32_t>(r.vocab.eos_id));
      pending.push_back(std::move(src));
      if (static_cast<int64_t>(pending.size()) == o->batch) flush();
    }
    if (!pending.empty()) flush();
    return 0;
  });
}

}  // namespace stx::cli
