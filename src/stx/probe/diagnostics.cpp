// stx/probe/diagnostics.cpp — see diagnostics.h.
#include "stx/probe/diagnostics.h"

#include <cmath>
#include <map>
#include <sstream>

#include "stx/probe/attention_entropy.h"

namespace stx::probe {

namespace {

// "encoder.layers.3.self_attn_layer_norm.weight" → {"encoder", 3, "self_attn_layer_norm"}; layer -1
// for parameters outside the layers (embeddings, final norm, head).
struct ParamPlace {
  std::string stack;
  int64_t layer = -1;
  std::string module;
};
ParamPlace place(const std::string& name) {
  std::vector<std::string> parts;
  std::stringstream ss(name);
  for (std::string p; std::getline(ss, p, '.');) parts.push_back(p);
  ParamPlace out;
  if (parts.size() >= 4 && parts[1] == "layers") out = {parts[0], std::stoll(parts[2]), parts[3]};
  return out;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// The sub-layer a module belongs to (its linears and its norm).
std::string sublayer(const std::string& module) {
  if (module.rfind("self_attn", 0) == 0) return "self_attn";
  if (module.rfind("encoder_attn", 0) == 0) return "encoder_attn";
  // LayerScale's λ, Admin's ω, NormFormer's attention-side parameters (layer.h)
  if (module == "gamma_1" || module == "attention_ratio_change" || module == "self_ratio_change" ||
      module == "attn_ln" || module == "c_attn")
    return "self_attn";
  if (module == "gamma_cross" || module == "encoder_ratio_change") return "encoder_attn";
  return "ffn";  // ffn, final_layer_norm, ffn_out_layer_norm, gamma_2, ffn_resweight, fc_ratio_change,
                 // ffn_layernorm, w_resid
}

// Σ g² per key, in double.
using SquareSums = std::map<std::string, std::vector<double>>;
void add(SquareSums& m, const std::string& key, int64_t layer, double v) {
  auto& vec = m[key];
  if (static_cast<int64_t>(vec.size()) <= layer) vec.resize(layer + 1, 0.0);
  vec[layer] += v;
}
nlohmann::json roots(const std::vector<double>& v) {
  auto j = nlohmann::json::array();
  for (double x : v) j.push_back(std::sqrt(x));
  return j;
}

}  // namespace

double global_grad_norm(TransformerImpl& model) {
  std::vector<torch::Tensor> sq;
  for (auto& p : model.parameters())
    if (p.grad().defined()) sq.push_back(p.grad().pow(2).sum());
  if (sq.empty()) return 0.0;
  return std::sqrt(torch::stack(sq).sum().item<double>());
}

nlohmann::json gradient_norms(TransformerImpl& model) {
  // One batched reduction: the squared norm of every gradient, then sums on the host.
  std::vector<std::string> names;
  std::vector<torch::Tensor> sq;
  for (auto& p : model.named_parameters(true))
    if (p.value().grad().defined()) names.push_back(p.key()), sq.push_back(p.value().grad().pow(2).sum());
  nlohmann::json out;
  if (sq.empty()) return out;
  auto all = torch::stack(sq).to(torch::kCPU, torch::kFloat64);  // read on the host below (cuda too)
  auto a = all.accessor<double, 1>();
  double total = 0;
  SquareSums layer, w2;
  std::map<std::string, SquareSums> sub;
  for (size_t i = 0; i < names.size(); ++i) {
    total += a[i];
    auto pl = place(names[i]);
    if (pl.layer < 0) continue;
    add(layer, pl.stack, pl.layer, a[i]);
    add(sub[pl.stack], sublayer(pl.module), pl.layer, a[i]);
    if (ends_with(names[i], ".ffn.fc2.weight")) add(w2, pl.stack, pl.layer, a[i]);
  }
  out["grad_norm"] = std::sqrt(total);
  for (auto& [stack, v] : layer) out["grad_norm_layer"][stack] = roots(v);
  for (auto& [stack, m] : sub)
    for (auto& [key, v] : m) out["grad_norm_sublayer"][stack][key] = roots(v);
  for (auto& [stack, v] : w2) out["grad_norm_w2"][stack] = roots(v);
  return out;
}

Taps probe_taps() { return Taps({"layer_norm.input", ".scores", ".probs", ".queries_in", ".keys_in", "logits"}); }

nlohmann::json norm_and_entropy(const Taps& taps, int64_t d_model, const torch::Tensor& src_mask,
                                const torch::Tensor& tgt_mask) {
  nlohmann::json out = nlohmann::json::object();
  const double sqrt_d = std::sqrt(static_cast<double>(d_model));
  for (auto& [name, t] : taps.values()) {
    if (name == "logits") {  // [B, T, V]: the output side's real positions
      const auto& m = tgt_mask.defined() && t.size(1) == tgt_mask.size(1) ? tgt_mask : src_mask;
      auto lz = torch::logsumexp(t.detach().to(torch::kFloat64), -1).masked_select(m.to(torch::kBool));
      if (lz.numel()) out["log_z"] = {{"mean", lz.mean().item<double>()}, {"max", lz.max().item<double>()}};
      continue;
    }
    auto pl = place(name);
    if (pl.layer < 0) continue;
    const auto& mask = pl.stack == "encoder" ? src_mask : tgt_mask;  // the queries' side
    auto w = mask.to(torch::kFloat64);
    const double n = std::max(1.0, w.sum().item<double>());
    if (ends_with(name, ".input")) {
      auto norms = t.detach().to(torch::kFloat64).norm(2, -1) / sqrt_d;  // [B, T]
      auto& vec = out["ln_input_norm"][pl.stack][pl.module];
      if (vec.is_null()) vec = nlohmann::json::array();
      while (static_cast<int64_t>(vec.size()) <= pl.layer) vec.push_back(nullptr);
      vec[pl.layer] = (norms * w).sum().item<double>() / n;
    } else if (ends_with(name, ".scores")) {  // [B, H, Tq, Tk]
      const bool cross = pl.module == "encoder_attn", causal = pl.stack == "decoder" && !cross;
      const auto& kmask = cross ? src_mask : mask;
      auto ok =
          mask.to(torch::kBool).view({mask.size(0), 1, -1, 1}) & kmask.to(torch::kBool).view({kmask.size(0), 1, 1, -1});
      if (causal) ok = ok & torch::ones({t.size(2), t.size(3)}, ok.options()).tril();
      auto s = t.detach().to(torch::kFloat64).masked_select(ok.expand(t.sizes()));
      if (s.numel() == 0) continue;
      auto& vec = out["attn_max_logit"][pl.stack][pl.module];
      if (vec.is_null()) vec = nlohmann::json::array();
      while (static_cast<int64_t>(vec.size()) <= pl.layer) vec.push_back(nullptr);
      vec[pl.layer] = s.max().item<double>();
    } else if (ends_with(name, ".probs")) {
      auto ent = row_entropy(t.detach().to(torch::kFloat64));                             // [B, H, Tq]
      torch::Tensor per_head = (ent * w.unsqueeze(1)).sum(torch::IntArrayRef{0, 2}) / n;  // [H]
      auto& e = out["attn_entropy"][pl.stack][pl.module];
      for (const char* k : {"mean", "min_head"}) {
        if (e[k].is_null()) e[k] = nlohmann::json::array();
        while (static_cast<int64_t>(e[k].size()) <= pl.layer) e[k].push_back(nullptr);
      }
      e["mean"][pl.layer] = per_head.mean().item<double>();
      e["min_head"][pl.layer] = per_head.min().item<double>();
    }
  }
  return out;
}

nlohmann::json weight_stats(TransformerImpl& model) {
  torch::NoGradGuard ng;
  nlohmann::json out;
  out["sigma"] = nlohmann::json::object();
  out["gamma"] = nlohmann::json::object();
  std::map<std::string, torch::Tensor> u, v, w, g;
  double sq = 0;
  for (auto& p : model.named_parameters(true)) {
    sq += p.value().pow(2).sum().item<double>();
    const auto& k = p.key();
    auto dot = k.rfind('.');
    const std::string owner = k.substr(0, dot), leaf = k.substr(dot + 1);
    if (leaf == "weight") w[owner] = p.value();
    if (leaf == "gamma") g[owner] = p.value();
  }
  for (auto& b : model.named_buffers(true)) {
    const auto& k = b.key();
    auto dot = k.rfind('.');
    if (k.substr(dot + 1) == "u") u[k.substr(0, dot)] = b.value();
    if (k.substr(dot + 1) == "v") v[k.substr(0, dot)] = b.value();
  }
  for (auto& [owner, gamma] : g) {
    if (!u.count(owner) || !v.count(owner) || !w.count(owner)) continue;
    out["sigma"][owner] = torch::dot(u[owner], torch::mv(w[owner], v[owner])).item<double>();
    out["gamma"][owner] = gamma.item<double>();
  }
  out["param_norm"] = std::sqrt(sq);
  return out;
}

}  // namespace stx::probe
