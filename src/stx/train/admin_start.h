// stx/train/admin_start.h — Admin's profiling pass at the start of a fresh `stx train` run
// (model.scheme: admin; Liu et al. 2020, model/admin.h): on the first training batch, peeked so
// the data stream does not advance; its ω replace initialize()'s, and the pass is recorded as
// RUN/admin_profile.json (per sub-layer: ω, Var[ω ⊙ x], Var[f(x)]).
#pragma once
#include <string>

#include "stx/data/batcher.h"

namespace stx {

class TransformerImpl;

// `record`: write the file and, unless quiet, one line to stderr (rank 0 of a data-parallel job).
void profile_admin_at_start(TransformerImpl& model, Batcher& train, const std::string& run_dir, bool record,
                            bool quiet);

}  // namespace stx
