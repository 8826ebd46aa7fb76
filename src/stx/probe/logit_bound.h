// stx/probe/logit_bound.h — Zhai et al. (ICML 2023) Theorem 3.1 applied to a model's own
// attention layers on the probe batch: the spectral norm of each head's logit map and the lower
// bound on attention entropy it implies, beside the measured entropy (docs/metrics.md).
//
// Head h of a layer computes logits a_ij = (x_i W_Q,hᵀ + b_Q,h)(x_j W_K,hᵀ + b_K,h)ᵀ / √d_h
// = x'_i M_h x'_jᵀ with x' = [x, 1] and M_h = [W_Q,h b_Q,h]ᵀ [W_K,h b_K,h] / √d_h (the bias as
// a weight on a constant input; σReparam's effective weights γW/σ(W)). Then
//   σ_h = ‖M_h‖₂  (the paper's ‖W_K W_Qᵀ‖₂ for one head, with the 1/√d_h and the biases),
//   ‖a_i‖ ≤ σ_h ‖X'_q‖₂ ‖X'_k‖₂ = 𝛔   (self-attention: σ_h ‖X'X'ᵀ‖₂, the theorem's σσ_x),
// with X' the sentence's real tokens only, so every query row i has Ent ≥ bound(𝛔, n_i), n_i the
// keys it can see (causal: i+1; padding excluded). A query with a single key has entropy 0.
#pragma once
#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "stx/model/taps.h"
#include "stx/model/transformer.h"

namespace stx::probe {

// From a probe forward's taps (probe_taps(): each attention's "queries_in" / "keys_in") (masks [B, T] float, 1 on real
// tokens; undefined for a missing side):
//   attn_sigma_kq       {"decoder": {"self_attn": {"mean": [...], "max_head": [...]}}, ...}: σ_h over heads
//   attn_entropy_bound  {"decoder": {"self_attn": {"mean": [...], "min_head": [...]}}, ...}: the bound
//                       averaged over real queries like attn_entropy, mean over heads and lowest head
// (min over heads of per-head mean bounds ≤ the lowest head's entropy, so both compare directly).
nlohmann::json logit_bound(TransformerImpl& model, const Taps& taps, const torch::Tensor& src_mask,
                           const torch::Tensor& tgt_mask);

// Per-head σ_h = ‖M_h‖₂ [H] (float64) of an attention module, from its effective weights
// (‖A_qᵀA_k‖₂ = ‖R_q R_kᵀ‖₂ with A_qᵀ = Q_q R_q, A_kᵀ = Q_k R_k reduced QR: d_h × d_h SVDs only).
torch::Tensor head_logit_norms(AttentionImpl& attn, int64_t heads);

// Theorem 3.1's bound elementwise: sigma, keys broadcastable float64 tensors (keys ≥ 1; 0 where keys = 1).
torch::Tensor entropy_lower_bound(const torch::Tensor& sigma, const torch::Tensor& keys);

}  // namespace stx::probe
