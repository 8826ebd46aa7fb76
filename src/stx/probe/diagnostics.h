// stx/probe/diagnostics.h — the stability diagnostics the papers talk about, measured on a
// training model (docs/metrics.md lists every key):
//   gradient norms (global, per layer, per sub-layer; Xiong et al. Fig. 3, DeepNet Fig. 5),
//   LN input norms ‖x‖/√d per layer (Xiong et al. Lemma 2–3; DeepNet Fig. 5),
//   attention entropy per layer, mean and min over heads (Zhai et al. §3),
//   σ(W) and γ of σReparam linears (Zhai et al. Eq. 3), and the parameter norm.
#pragma once
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "stx/model/taps.h"
#include "stx/model/transformer.h"

namespace stx::probe {

// From the parameters' .grad() after backward:
//   grad_norm            ‖g‖₂ over all parameters
//   grad_norm_layer      {"encoder": [per layer], "decoder": [...]}: ‖g‖ of each layer's parameters
//   grad_norm_sublayer   {"encoder": {"self_attn": [...], "ffn": [...]}, "decoder": {…, "encoder_attn"}}
//                        (a sub-layer = its linears and its norm)
//   grad_norm_w2         {"encoder": [...], ...}: ‖∂L/∂W^{2,l}‖_F (ffn.fc2.weight), Xiong et al.'s measure
nlohmann::json gradient_norms(TransformerImpl& model);

// Global gradient norm only (cheap; what clipping uses).
double global_grad_norm(TransformerImpl& model);

// The taps a probe forward must record for norm_and_entropy() and logit_bound(): norm inputs,
// attention scores, probabilities and inputs, and the output logits.
Taps probe_taps();
// From a probe forward's taps (batch mask [B, T] of real tokens for each side):
//   ln_input_norm  {"encoder": {"self_attn_layer_norm": [...], "final_layer_norm": [...]}, ...}:
//                  mean over real tokens of ‖z‖/√d of each norm's input z
//   attn_entropy   {"encoder": {"self_attn": {"mean": [...], "min_head": [...]}}, "decoder": {…}}:
//                  entropy of each query's attention row (nats), averaged over real queries, per
//                  head; "mean" over heads, "min_head" the lowest head
//   attn_max_logit {"encoder": {"self_attn": [...]}, …}: the largest attention score q·k/√d_h
//                  (after soft-capping) over heads, real queries and the keys each may see
//   log_z          {"mean": m, "max": x}: log Σ_v exp z_v of the output logits over real positions
//                  (what z-loss penalizes; PaLM)
nlohmann::json norm_and_entropy(const Taps& taps, int64_t d_model, const torch::Tensor& src_mask,
                                const torch::Tensor& tgt_mask);

// σReparam: {"sigma": {linear name: σ = uᵀWv}, "gamma": {name: γ}} (empty objects without σReparam),
// and "param_norm": ‖θ‖₂ over all parameters.
nlohmann::json weight_stats(TransformerImpl& model);

}  // namespace stx::probe
