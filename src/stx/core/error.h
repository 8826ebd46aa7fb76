// stx/core/error.h — the error types that map to the CLI's exit codes.
// InputError: bad input from the user (config, file, argument) → exit 2, one line.
#pragma once
#include <stdexcept>
#include <string>

namespace stx {

// Bad input: the message names the problem and what is allowed. The CLI prints it on one
// line and exits with status 2, having written no output file.
struct InputError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

}  // namespace stx
