// stx/sweep/child_process.h — one `stx train` child of `stx sweep`: started with fork + exec,
// its stdout and stderr appended to a log file, in its own process group (a Ctrl-C on the
// terminal reaches only the sweep, which forwards it once, so the child stops cleanly after a
// checkpoint instead of taking the "second signal" path), and sent SIGTERM by the kernel if the
// sweep itself dies (PR_SET_PDEATHSIG), so an orphaned run still checkpoints and stops.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace stx::sweep {

class Child {
 public:
  // Starts exe with args (argv[1..]); InputError if the log cannot be opened or fork fails.
  Child(const std::string& exe, const std::vector<std::string>& args, const std::string& log_path);
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

}  // namespace stx::sweep
