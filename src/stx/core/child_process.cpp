// stx/core/child_process.cpp — see child_process.h. Between fork and exec the child calls only
// async-signal-safe functions (the parent may have threads).
#include "stx/core/child_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <fstream>

#include "stx/core/error.h"

namespace stx {

extern "C" char** environ;

Child::Child(const std::string& exe, const std::vector<std::string>& args, const std::string& log_path,
             const std::vector<std::string>& env) {
  const int log = log_path.empty() ? -1 : ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (!log_path.empty() && log < 0) throw InputError("cannot open " + log_path + ": " + std::strerror(errno));
  // The child's environment, built before fork (no allocation after it): ours, minus the names
  // `env` sets, plus `env`.
  std::vector<std::string> env_storage;
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    bool replaced = false;
    for (auto& x : env) replaced |= kv.compare(0, x.find('=') + 1, x, 0, x.find('=') + 1) == 0;
    if (!replaced) env_storage.push_back(kv);
  }
  env_storage.insert(env_storage.end(), env.begin(), env.end());
  std::vector<char*> envp;
  for (auto& s : env_storage) envp.push_back(s.data());
  envp.push_back(nullptr);
  const int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::vector<std::string> storage{exe};
  storage.insert(storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& s : storage) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != parent) ::_exit(128 + SIGTERM);  // the sweep died before prctl
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(SIGINT, &dfl, nullptr);
    ::sigaction(SIGTERM, &dfl, nullptr);
    if (null_in >= 0) ::dup2(null_in, 0);
    if (log >= 0) ::dup2(log, 1), ::dup2(log, 2);
    ::execve(exe.c_str(), argv.data(), envp.data());
    const char msg[] = "stx: cannot execute the stx binary\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  const int err = errno;
  if (log >= 0) ::close(log);
  if (null_in >= 0) ::close(null_in);
  if (pid < 0) throw InputError(std::string("cannot start a child stx process: ") + std::strerror(err));
  pid_ = pid;
}

std::optional<int> Child::poll() {
  if (status_) return status_;
  int st = 0;
  const pid_t r = ::waitpid(pid_, &st, WNOHANG);
  if (r == pid_) {
    if (WIFEXITED(st)) status_ = WEXITSTATUS(st);
    else if (WIFSIGNALED(st)) status_ = 128 + WTERMSIG(st);
  } else if (r < 0 && errno != EINTR) {
    status_ = 127;  // not our child any more (cannot happen)
  }
  return status_;
}

void Child::signal(int sig) {
  if (!status_ && pid_ > 0) ::kill(pid_, sig);
}

std::string last_line_with(const std::string& path, const std::string& prefix) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  in.seekg(0, std::ios::end);
  const std::streamoff size = in.tellg();
  const std::streamoff from = size > 8192 ? size - 8192 : 0;
  in.seekg(from);
  std::string text(static_cast<size_t>(size - from), '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  std::string found;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find_first_of("\r\n", start);
    if (end == std::string::npos) end = text.size();
    if (text.compare(start, prefix.size(), prefix) == 0 && end > start) found = text.substr(start, end - start);
    start = end + 1;
  }
  return found;
}

}  // namespace stx
