// stx/train/run_model.cpp — see run_model.h.
#include "stx/train/run_model.h"

#include <filesystem>

#include "stx/core/error.h"
#include "stx/core/run_dir.h"
#include "stx/io/model_io.h"
#include "stx/train/checkpoint.h"

namespace stx {

namespace fs = std::filesystem;

RunModel open_run(const std::string& run_dir, const std::string& which) {
  if (which != "best" && which != "last") throw InputError("--checkpoint '" + which + "' is not one of: best, last");
  if (!fs::is_directory(run_dir)) throw InputError("run directory " + run_dir + " does not exist");
  const RunDir dir(run_dir);
  auto path = which == "best" ? dir.best() : dir.last();
  if (which == "best" && !fs::exists(path)) path = dir.last();
  if (!fs::exists(path))
    throw InputError(run_dir + " has no checkpoint (" + (which == "best" ? RunDir::kBest : RunDir::kLast) +
                     "); is it a run directory of `stx train`?");
  auto ck = read_checkpoint(path);
  RunModel r;
  r.config = ck.config;
  r.checkpoint = path;
  r.step = checkpoint_step(ck);
  r.vocab = open_run_vocab(run_dir, r.config.data);
  if (r.vocab.vocab_size != r.config.model.vocab_size)
    throw InputError(path + ": model.vocab_size " + std::to_string(r.config.model.vocab_size) +
                     " does not match the run's SentencePiece model(s) (" + std::to_string(r.vocab.vocab_size) +
                     " pieces)");
  r.model = Transformer(r.config.model);
  load_state(*r.model, ck.model, path);
  r.model->eval();
  return r;
}

}  // namespace stx
