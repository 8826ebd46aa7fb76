// stx/core/atomic_file.h — write a file under a temporary name, fsync, then rename, so a
// reader never sees a half-written output (docs/design.md#atomic-outputs).
#pragma once
#include <functional>
#include <string>

namespace stx {

// Calls write(tmp_path) and, if it returns without throwing, fsyncs and renames tmp_path to
// path. On any exception the temporary file is removed and the exception propagates.
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

// write_atomically for a whole text; throws InputError when the file cannot be written.
void write_text_atomically(const std::string& path, const std::string& text);

}  // namespace stx
