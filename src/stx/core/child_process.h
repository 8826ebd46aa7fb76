// stx/core/child_process.h — a child `stx` process (a run of `stx sweep`, a worker of
// `stx train --nproc`): started with fork + exec, its stdout and stderr appended to a log file
// (or inherited), extra environment variables set, in its own process group (a Ctrl-C on the
// terminal reaches only the parent, which forwards it once, so the child stops cleanly after a
// checkpoint instead of taking the "second signal" path), and sent SIGTERM by the kernel if the
// parent itself dies (PR_SET_PDEATHSIG), so an orphaned run still checkpoints and stops.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace stx {

class Child {
 public:
  // Starts exe with args (argv[1..]) and `env` ("NAME=value") added to this process's
  // environment; output to log_path ("" = inherit stdout/stderr). InputError if the log cannot be
  // opened or fork fails.
  Child(const std::string& exe, const std::vector<std::string>& args, const std::string& log_path,
        const std::vector<std::string>& env = {});
  // Exit status if it has ended (128 + signal when killed), else nullopt. Never blocks.
  std::optional<int> poll();
  void signal(int sig);  // no-op once it has ended
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// The last line of a text file that starts with `prefix` (searching its last 8 KiB), or "".
std::string last_line_with(const std::string& path, const std::string& prefix);

}  // namespace stx
