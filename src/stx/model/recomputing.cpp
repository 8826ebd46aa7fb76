#include "stx/model/recomputing.h"

namespace stx {
namespace {
thread_local bool recomputing = false;
}  // namespace

bool recomputing_activations() { return recomputing; }
RecomputingScope::RecomputingScope() { recomputing = true; }
RecomputingScope::~RecomputingScope() { recomputing = false; }

}  // namespace stx
