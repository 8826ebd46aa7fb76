#include "stx/kernels/kernels.h"

#include <atomic>

namespace stx {
namespace {
std::atomic<Kernels> current{Kernels::Fused};
std::atomic<AttentionCore> attention{AttentionCore::Auto};
std::atomic<HeadProducts> head{HeadProducts::Band};
}  // namespace

void set_kernels(Kernels k) { current.store(k); }
Kernels kernels() { return current.load(); }
void set_attention_core(AttentionCore a) { attention.store(a); }
AttentionCore attention_core_choice() { return attention.load(); }
void set_head_products(HeadProducts h) { head.store(h); }
HeadProducts head_products() { return head.load(); }

}  // namespace stx
