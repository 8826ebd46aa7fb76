// stx/theory/experiments.h — one entry point per experiment (one file each).
#pragma once
#include "stx/theory/experiment.h"

namespace stx::theory {

Result run_lemma2(const Options&);            // lemma2.cpp — Xiong et al. Lemma 2
Result run_lemma3(const Options&);            // lemma3.cpp — Xiong et al. Lemma 3, LN/RMSNorm Jacobian
Result run_theorem1(const Options&);          // theorem1.cpp — Xiong et al. Theorem 1
Result run_grad_profile(const Options&);      // grad_profile.cpp — Xiong et al. Figure 3
Result run_deepnet_update(const Options&);    // deepnet_update.cpp — DeepNet Figures 4–5
Result run_sigma_toy(const Options&);         // sigma_toy.cpp — the σReparam article's toy table
Result run_entropy_bound(const Options&);     // entropy_bound.cpp — Zhai et al. Theorem 3.1
Result run_stabilizers_init(const Options&);  // stabilizers_init.cpp — the later stabilizers at init

}  // namespace stx::theory
