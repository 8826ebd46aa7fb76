// The OpenBLAS kernel-family correction (stx/core/blas_coretype.h): only a fallback below the
// CPU's SIMD is overridden, never a modern family OpenBLAS chose itself.
#include <gtest/gtest.h>

#include "stx/core/blas_coretype.h"

namespace {

constexpr stx::CpuSimd kAvx512{true, true}, kAvx2{false, true}, kSse{false, false};

TEST(BlasCoretype, FallbackOnAnAvx512CpuBecomesSkylakeX) {
  EXPECT_EQ(stx::openblas_coretype_override("Prescott", kAvx512), "SkylakeX");
  EXPECT_EQ(stx::openblas_coretype_override("Sandybridge", kAvx512), "SkylakeX");
}

TEST(BlasCoretype, FallbackOnAnAvx2CpuBecomesHaswell) {
  EXPECT_EQ(stx::openblas_coretype_override("Prescott", kAvx2), "Haswell");
  EXPECT_EQ(stx::openblas_coretype_override("Nehalem", kAvx2), "Haswell");
}

TEST(BlasCoretype, ModernFamiliesAndOldCpusAreLeftAlone) {
  for (const char* core : {"SkylakeX", "Cooperlake", "SapphireRapids", "Haswell", "Zen", "excavator"}) {
    EXPECT_EQ(stx::openblas_coretype_override(core, kAvx512), "") << core;
    EXPECT_EQ(stx::openblas_coretype_override(core, kAvx2), "") << core;
  }
  EXPECT_EQ(stx::openblas_coretype_override("Prescott", kSse), "");  // the fallback is right there
  EXPECT_EQ(stx::openblas_coretype_override("", kAvx512), "");       // not OpenBLAS
}

}  // namespace
