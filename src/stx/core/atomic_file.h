// stx/core/atomic_file.h — write a file under a temporary name, fsync, then rename, so a
// reader never sees a half-written output (docs/design.md#atomic-outputs). Every write is
// checked: a full disk or an I/O error is an EnvError (exit 5), a path the user cannot write
// an InputError (core/error.h, throw_write_error).
#pragma once
#include <cstddef>
#include <functional>
#include <string>

namespace stx {

// Calls write(tmp_path) and, if it returns without throwing, fsyncs and renames tmp_path to
// path. On any exception the temporary file is removed and the exception propagates. The
// temporary name is path + ".tmp." + pid (core/dir_lock.h removes those of dead processes).
void write_atomically(const std::string& path, const std::function<void(const std::string&)>& write);

// write_atomically for a whole text, written with checked write(2) calls.
void write_text_atomically(const std::string& path, const std::string& text);

// Writes (or, with append, appends) text to path in place with checked write(2) calls.
void write_file(const std::string& path, const std::string& text, bool append);

// Writes all n bytes to fd (retrying short writes and EINTR); on failure throws the error of
// throw_write_error for `path`.
void write_all(int fd, const void* data, size_t n, const std::string& path);

}  // namespace stx
