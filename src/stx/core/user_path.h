// stx/core/user_path.h — a path the user named (--config, --out, --run, a corpus file), looked at
// with stat(2) before anything opens it: never throws a std::filesystem error, never blocks (a
// FIFO is refused before it is opened), and each problem has its own one-line InputError:
// "not found" only when nothing is there; a directory, FIFO, device or socket where a file is
// needed; a dangling symbolic link, a symbolic link loop, a file name too long, permission denied.
#pragma once
#include <string>

namespace stx {

enum class PathKind { Missing, Regular, Directory, Fifo, CharDevice, BlockDevice, Socket, DanglingLink, Error };

struct PathInfo {
  PathKind kind = PathKind::Missing;
  int err = 0;         // errno of stat(2) when kind is Error (ELOOP, ENAMETOOLONG, EACCES, ENOTDIR, …)
  std::string target;  // where a dangling symbolic link points
};

// What is at `path`, symbolic links followed.
PathInfo inspect_path(const std::string& path);

// The problem in words: "not found", "is a directory, not a regular file", "is a FIFO, not a
// regular file", "symbolic link loop", "file name too long", "permission denied", …
// `want_dir`: the words say a directory was needed.
std::string path_problem(const PathInfo& info, bool want_dir = false);

// A regular file that can be read; otherwise InputError "cannot open WHAT 'PATH': PROBLEM; HINT".
void require_regular_file(const std::string& path, const std::string& what, const std::string& hint = "");

// Nothing there or a regular file (a run directory's files); otherwise InputError as above.
// Returns whether the file is there.
bool regular_file_if_present(const std::string& path, const std::string& what);

// An existing directory; otherwise InputError "cannot use WHAT 'PATH': PROBLEM".
void require_directory(const std::string& path, const std::string& what);

// An existing directory or nothing (an output directory to be created); otherwise InputError.
void require_directory_or_missing(const std::string& path, const std::string& what);

}  // namespace stx
