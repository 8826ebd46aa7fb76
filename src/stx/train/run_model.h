// stx/train/run_model.h — a trained run opened for use (`stx eval`, `translate`, `generate`):
// the config and weights of RUN/checkpoint_{best,last}.safetensors and the run's tokenizers.
#pragma once
#include <string>

#include "stx/config/config.h"
#include "stx/model/transformer.h"
#include "stx/train/run_data.h"

namespace stx {

struct RunModel {
  Config config;
  Transformer model{nullptr};  // eval mode
  RunVocab vocab;
  int64_t step = 0;        // updates done when the checkpoint was written
  std::string checkpoint;  // its path
};

// which: "best" (lowest validation loss; falls back to "last" when absent) or "last".
// InputError when the directory is not a run, the checkpoint is missing or corrupt.
RunModel open_run(const std::string& run_dir, const std::string& which = "best");

}  // namespace stx
