// stx/train/run_model.cpp — see run_model.h.
#include "stx/train/run_model.h"

#include "stx/core/error.h"
#include "stx/core/run_dir.h"
#include "stx/core/user_path.h"
#include "stx/io/model_io.h"
#include "stx/train/checkpoint.h"

namespace stx {

RunModel open_run(const std::string& run_dir, const std::string& which) {
  if (which != "best" && which != "last") throw InputError("--checkpoint '" + which + "' is not one of: best, last");
  require_directory(run_dir, "run directory");
  const RunDir dir(run_dir);
  for (const char* f : {RunDir::kBest, RunDir::kLast, "spm.src.model", "spm.tgt.model"})
    regular_file_if_present(dir.file(f), "run file");  // a loop or a FIFO in their place: named, before use
  auto path = which == "best" ? dir.best() : dir.last();
  if (which == "best" && inspect_path(path).kind == PathKind::Missing) path = dir.last();
  if (inspect_path(path).kind == PathKind::Missing)
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
