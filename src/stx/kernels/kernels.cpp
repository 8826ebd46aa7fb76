#include "stx/kernels/kernels.h"

#include <atomic>

namespace stx {
namespace {
std::atomic<Kernels> current{Kernels::Fused};
}

void set_kernels(Kernels k) { current.store(k); }
Kernels kernels() { return current.load(); }

}  // namespace stx
