// stx/core/shape_text.h — a tensor shape as text for error messages, e.g. "[4, 64]".
#pragma once
#include <c10/util/ArrayRef.h>

#include <sstream>
#include <string>

namespace stx {

inline std::string shape_str(c10::IntArrayRef s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

}  // namespace stx
