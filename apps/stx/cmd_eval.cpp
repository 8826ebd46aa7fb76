// stx eval — score a trained run on a split: loss and perplexity per target token, and for
// translation corpus BLEU (sacreBLEU 13a, eval/bleu.h) of greedy or beam-search outputs.
// --baseline copy scores the source sentences themselves as translations (the copy baseline).
#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "command.h"
#include "stx/core/atomic_file.h"
#include "stx/core/error.h"
#include "stx/data/corpus.h"
#include "stx/eval/bleu.h"
#include "stx/train/run_model.h"
#include "stx/train/validate.h"

namespace stx::cli {

void register_eval(Registry& reg) {
  struct Opts {
    std::string run, split = "test", checkpoint = "best", json, hyps, baseline;
    int64_t beam = 4, sentences = 0, max_tokens = 0;
    double lenpen = 1.0;
  };
  auto o = std::make_shared<Opts>();
  auto* sub = reg.app.add_subcommand("eval", "loss, perplexity and (translation) BLEU of a trained run on a split");
  sub->add_option("--run", o->run, "run directory of `stx train`")->required();
  sub->add_option("--split", o->split, "split name: valid, test, or another file stem of the corpus (e.g. test-ding)");
  sub->add_option("--checkpoint", o->checkpoint, "best | last");
  sub->add_option("--beam", o->beam, "beam size for BLEU (1 = greedy)")->check(CLI::Range(1, 64));
  sub->add_option("--lenpen", o->lenpen, "length penalty α: score / length^α")->check(CLI::Range(0.0, 10.0));
  sub->add_option("--sentences", o->sentences, "decode only the first N sentences for BLEU (0 = all)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 40));
  sub->add_option("--max-tokens", o->max_tokens, "batch budget for the loss (default: train.max_tokens)")
      ->check(CLI::Range(int64_t(0), int64_t(1) << 40));
  sub->add_option("--hyps", o->hyps, "write the decoded sentences to this file");
  sub->add_option("--json", o->json, "write the scores as JSON");
  sub->add_option("--baseline", o->baseline, "copy: score the source sentences as translations (no model)")
      ->check(CLI::IsMember({"copy"}));
  reg.add(sub, [o] {
    auto r = open_run(o->run, o->checkpoint);
    const auto& cfg = r.config;
    nlohmann::json out = {{"run", o->run}, {"split", o->split}, {"checkpoint", r.checkpoint}, {"step", r.step}};
    if (o->baseline == "copy") {
      if (cfg.data.task != Task::Translation) throw InputError("--baseline copy needs a translation run");
      auto c = load_corpus(cfg.data, o->split);
      const auto s = corpus_bleu(c.src, c.tgt);
      out["baseline"] = "copy";
      out["bleu"] = s.score;
      std::cout << fmt::format("{} {}: copy-the-source BLEU {:.2f} ({} sentences)\n", o->run, o->split, s.score,
                               c.tgt.size());
    } else {
      std::vector<std::string> refs;
      auto examples = tokenize_split(r.vocab, cfg.data, o->split, cfg.model.max_len, &refs);
      BatcherOptions bo;  // a fixed order
      bo.max_tokens = o->max_tokens > 0 ? o->max_tokens : cfg.train.max_tokens, bo.max_len = cfg.model.max_len;
      bo.pad_id = r.vocab.pad_id, bo.bos_id = r.vocab.bos_id, bo.eos_id = r.vocab.eos_id;
      Batcher batches(examples, bo);
      auto v = evaluate_loss(*r.model, batches, cfg.train.label_smoothing, r.vocab.pad_id);
      out.update({{"loss", v.loss},
                  {"nll", v.nll},
                  {"ppl", std::exp(v.nll)},
                  {"tokens", v.tokens},
                  {"dropped", batches.dropped()}});
      std::string line = fmt::format("{} {} (step {}): loss {:.4f}  nll {:.4f}  ppl {:.2f}  ({} tokens)", o->run,
                                     o->split, r.step, v.loss, v.nll, std::exp(v.nll), v.tokens);
      if (cfg.data.task == Task::Translation) {
        DecodeOptions d;
        d.beam = o->beam, d.length_penalty = o->lenpen;
        d.bos_id = r.vocab.bos_id, d.eos_id = r.vocab.eos_id, d.pad_id = r.vocab.pad_id;
        d.max_len_a = 2, d.max_len_b = 10;
        const size_t n = o->sentences > 0 ? std::min<size_t>(o->sentences, examples.size()) : examples.size();
        std::vector<Example> src(examples.begin(), examples.begin() + static_cast<long>(n));
        std::vector<std::string> hyps;
        const double bleu = bleu_of(*r.model, r.vocab, src, refs, d, &hyps);
        out.update({{"bleu", bleu}, {"bleu_sentences", n}, {"beam", o->beam}, {"lenpen", o->lenpen}});
        line += fmt::format("  BLEU {:.2f} ({} sentences, beam {})", bleu, n, o->beam);
        if (!o->hyps.empty())
          write_atomically(o->hyps, [&](const std::string& tmp) {
            std::ofstream f(tmp);
            for (auto& h : hyps) f << h << "\n";
          });
      }
      std::cout << line << "\n";
    }
    if (!o->json.empty())
      write_atomically(o->json, [&](const std::string& tmp) { std::ofstream(tmp) << out.dump(2) << "\n"; });
    return 0;
  });
}

}  // namespace stx::cli
