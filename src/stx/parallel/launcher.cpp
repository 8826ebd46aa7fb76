// stx/parallel/launcher.cpp — see launcher.h.
#include "stx/parallel/launcher.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <optional>
#include <thread>

#include "stx/core/child_process.h"
#include "stx/core/error.h"
#include "stx/core/run_dir.h"
#include "stx/core/runtime.h"
#include "stx/core/signals.h"

namespace stx::parallel {
namespace {

// A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0 and ask which one).
int free_port() {
  const int s = ::socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) throw InputError("cannot open a socket to find a free port for the workers' TCPStore");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  const bool ok = ::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  ::close(s);
  if (!ok) throw InputError("cannot bind a loopback port for the workers' TCPStore");
  return ntohs(a.sin_port);
}

std::string status_text(int st) {
  return st > 128 ? "was killed by signal " + std::to_string(st - 128) + " (" + strsignal(st - 128) + ")"
                  : "exited with status " + std::to_string(st);
}

}  // namespace

int launch_local(const LaunchOptions& o) {
  namespace fs = std::filesystem;
  const int port = free_port();
  const int threads = std::max(1, physical_cores() / o.nproc);
  std::error_code ec;
  fs::create_directories(o.run_dir, ec);
  if (ec) throw InputError("cannot create the run directory " + o.run_dir + ": " + ec.message());
  auto log_of = [&](int r) { return (fs::path(o.run_dir) / ("worker-" + std::to_string(r) + ".log")).string(); };
  auto checkpoint_note = [&]() -> std::string {
    return RunDir(o.run_dir).holds_run() ? "the last checkpoint in " + o.run_dir + " is intact (resume with --resume)"
                                         : "no checkpoint had been written";
  };

  install_stop_handlers();
  std::vector<Child> workers;
  for (int r = 0; r < o.nproc; ++r) {
    std::vector<std::string> env{"RANK=" + std::to_string(r),       "WORLD_SIZE=" + std::to_string(o.nproc),
                                 "LOCAL_RANK=" + std::to_string(r), "LOCAL_WORLD_SIZE=" + std::to_string(o.nproc),
                                 "MASTER_ADDR=127.0.0.1",           "MASTER_PORT=" + std::to_string(port)};
    if (!std::getenv("STX_THREADS"))  // the cores shared out, unless the user chose
      env.insert(env.end(), {"STX_THREADS=" + std::to_string(threads)});
    workers.emplace_back(o.exe, o.args, r == 0 ? "" : log_of(r), env);
  }

  std::vector<std::optional<int>> status(workers.size());
  std::vector<int> failed;                      // ranks in the order their failure was seen
  std::vector<char> killed(workers.size(), 0);  // by us, still running `grace` after a failure
  std::optional<std::chrono::steady_clock::time_point> kill_at;
  bool forwarded = false;
  for (;;) {
    if (int sig = stop_signal(); sig && !forwarded) {
      for (auto& w : workers) w.signal(sig);
      forwarded = true;
    }
    bool running = false;
    for (size_t r = 0; r < workers.size(); ++r) {
      if (status[r]) continue;
      status[r] = workers[r].poll();
      if (!status[r]) running = true;
      else if (*status[r] != 0) failed.push_back(static_cast<int>(r));
    }
    if (!failed.empty() && !kill_at) kill_at = std::chrono::steady_clock::now() + o.grace;
    if (!running) break;
    if (kill_at && std::chrono::steady_clock::now() > *kill_at)
      for (size_t r = 0; r < workers.size(); ++r)
        if (!status[r] && !killed[r]) workers[r].signal(SIGKILL), killed[r] = 1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }

  if (failed.empty()) return 0;
  if (forwarded) {
    for (auto& s : status)
      if (*s != 0) return *s;
  }
  // The cause is the first failure that is not "a peer failed" (status 4): a worker that fails
  // closes its connections while it unwinds, so its peers may exit before it does.
  std::optional<int> root;
  for (int r : failed)
    if (*status[r] != 4 && !killed[r]) {
      root = r;
      break;
    }
  if (!root)
    for (int r : failed)
      if (killed[r]) {
        std::cerr << "stx: error: worker rank " << r << " hung (no answer within train.dist_timeout_s) and was killed"
                  << (r ? "; see " + log_of(r) : "") << "; the job stopped; " << checkpoint_note() << "\n";
        return 4;
      }
  if (!root) root = failed.front();
  const int st = *status[*root];
  // Rank 0 prints its own error line on the terminal; a worker's line is in its log.
  if (st == 1 || st == 2 || st == 3 || st == 5) {
    if (*root != 0)
      std::cerr << "stx: error: worker rank " << *root << " " << status_text(st) << "; see " << log_of(*root) << "\n";
    return st;
  }
  std::cerr << "stx: error: worker rank " << *root << " " << status_text(st) << (*root ? "; see " + log_of(*root) : "")
            << "; the job stopped; " << checkpoint_note() << "\n";
  return 4;
}

}  // namespace stx::parallel
