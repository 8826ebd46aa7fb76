#!/usr/bin/env bash
# Checks that no row loop calls an out-of-line copy of the kernels' vector helpers
# (src/stx/kernels/vec_math.h). The loops are compiled as target_clones (AVX-512, AVX2, baseline);
# a helper GCC declines to inline is compiled once, for the baseline ISA, so the AVX-512 clone of
# the loop would call SSE2 code (seen once: a pairwise lane fold made vec::sum too big to inline).
#   scripts/check-inlined.sh BINARY     exit 1 and list the calls if there are any
set -euo pipefail
bin=${1:?usage: scripts/check-inlined.sh BINARY}
[[ -f $bin ]] || { echo "check-inlined: $bin not found" >&2; exit 2; }
command -v objdump >/dev/null || { echo "check-inlined: objdump not found (binutils)" >&2; exit 2; }
calls=$(objdump -d --no-show-raw-insn -C "$bin" | grep -E 'call[q]? +[0-9a-f]+ <[^>]*stx::vec::' || true)
if [[ -n $calls ]]; then
  echo "check-inlined: $(wc -l <<< "$calls") call(s) to out-of-line stx::vec helpers in $bin:" >&2
  sed -E 's/.*<(.*)>$/\1/' <<< "$calls" | sort | uniq -c | sort -rn | head -20 >&2
  exit 1
fi
echo "check-inlined: every stx::vec helper is inlined in $bin"
