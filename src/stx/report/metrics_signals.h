// stx/report/metrics_signals.h — the signals derived from one metrics line, each defined once
// here and in docs/metrics.md ("Derived signals"), for the atlas, the doctor, the entropy-collapse
// experiment and the live table.
#pragma once
#include <optional>

#include "stx/report/metrics_schema.h"

namespace stx::metrics {

// nats → bits (÷ ln 2): per byte with data.tokenizer: bytes.
double to_bits(double nats);

// Gradient reach (Xiong et al. 2020, Fig. 3): ‖g‖ of the bottom layer ÷ ‖g‖ of the top layer, from
// grad_norm_layer of the decoder (a decoder-only model; the target side of an encoder-decoder),
// or the encoder's where no decoder layer is logged (1 for a one-layer stack). nullopt when
// neither stack is logged, when the bottom or top norm is null, or with a top norm of 0.
struct GradReach {
  double bottom = 0, top = 0;
  double ratio() const { return bottom / top; }
  // log10 of the ratio with the bottom norm floored at the smallest normal float (2^-126): a
  // bottom gradient of exactly 0 has underflowed (denormals are flushed), so the reach is at
  // most that floor over the top norm — the strongest evidence of a stall, not a missing value.
  double log10_floored() const;
};
std::optional<GradReach> grad_reach(const Record& r);

// The lowest and highest layer attention entropy (nats): min and max over stacks, attention
// kinds and layers of attn_entropy.{stack}.{kind}.mean[l] (the head mean; Zhai et al. §3).
struct Range {
  double lo = 0, hi = 0;
};
std::optional<Range> layer_entropy_range(const Record& r);

// The lowest head attention entropy: min over stacks, kinds and layers of
// attn_entropy.{stack}.{kind}.min_head[l] (Zhai et al. Fig. 1).
std::optional<double> lowest_head_entropy(const Record& r);

// The largest attention logit: max over stacks, kinds and layers of attn_max_logit (Dehghani
// et al. 2023; Wortsman et al. 2023).
std::optional<double> max_attn_logit(const Record& r);

// The largest norm input ‖z‖/√d: max over stacks, norms and layers of ln_input_norm (Xiong et
// al. Lemma 2).
std::optional<double> max_ln_input(const Record& r);

}  // namespace stx::metrics
