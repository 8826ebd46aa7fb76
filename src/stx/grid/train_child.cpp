// stx/grid/train_child.cpp — see train_child.h.
#include "stx/grid/train_child.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <thread>

#include "stx/core/child_process.h"
#include "stx/core/error.h"
#include "stx/core/run_dir.h"
#include "stx/core/signals.h"

namespace stx::grid {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

RunResult run_train_child(const TrainChild& c, const RunResult& before) {
  const auto log = (fs::path(c.dir) / "train.log").string();
  std::error_code ec;
  fs::create_directories(c.dir, ec);
  if (ec) throw InputError("cannot create " + c.dir + ": " + ec.message());
  const bool resume = RunDir(c.dir).holds_run();
  std::vector<std::string> args{"train", "--out", c.dir};
  if (resume) args.insert(args.end(), {"--resume", "--set", fmt::format("train.max_steps={}", c.steps)});
  else args.insert(args.end(), c.fresh_args.begin(), c.fresh_args.end());
  {
    std::ofstream l(log, std::ios::app);
    l << "# " << c.who << " " << c.tag << (resume ? fmt::format(": resuming after step {}", before.step) : ": fresh")
      << "\n# stx";
    for (auto& a : args) l << " " << a;
    l << "\n";
  }
  const bool tty = c.live && isatty(STDERR_FILENO);
  bool shown_line = false;
  auto clear = [&] {
    if (shown_line) std::cerr << "\r\033[K" << std::flush;
    shown_line = false;
  };
  const auto t0 = Clock::now();
  Child child(c.exe, args, log, c.env);
  bool forwarded = false;
  // Terminal: a live line. Otherwise (a log file): a line after 1 minute, then every 5.
  auto shown = t0 - std::chrono::hours(1), heartbeat = t0 - std::chrono::minutes(4);
  std::optional<int> code;
  while (!(code = child.poll())) {
    if (int sig = stop_signal(); sig && !forwarded) {
      child.signal(sig);
      forwarded = true;
      clear();
      std::cerr << fmt::format("{}: signal {}: waiting for {} to checkpoint and stop\n", c.who, sig, before.name);
    }
    const auto now = Clock::now();
    const double el = std::chrono::duration<double>(now - t0).count();
    if (!c.quiet && tty && now - shown > std::chrono::seconds(1)) {
      std::cerr << "\r\033[K" << c.tag << "  " << last_line_with(log, "step ") << "  [" << duration_text(el) << "]"
                << std::flush;
      shown = now, shown_line = true;
    } else if (!c.quiet && !tty && now - heartbeat > std::chrono::minutes(5)) {
      std::cerr << c.tag + "  " + last_line_with(log, "step ") + "  [" + duration_text(el) + "]\n"
                << std::flush;  // one write
      heartbeat = now;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  clear();
  const double seconds = before.seconds + std::chrono::duration<double>(Clock::now() - t0).count();
  if (*code == 2) {  // bad input: the child's one-line message
    auto msg = last_line_with(log, "stx: error: ");
    msg = msg.empty() ? "stx train exited 2 (bad input); see " + log : msg.substr(12);
    throw InputError("run " + before.name + ": " + msg);
  }
  RunResult r = read_run(c.dir, before.scheme, before.depth, c.steps);
  r.exit_code = *code, r.seconds = seconds;
  if (*code == 0) {
    if (!r.ended()) r.outcome = Outcome::Failed, r.cause = fmt::format("exited 0 at step {} < {}", r.step, c.steps);
  } else if (*code == 1) {
    r.outcome = Outcome::Diverges, r.guard_stop = true;
    if (r.last_event_step > 0) r.step = r.last_event_step;
    if (r.cause.empty()) r.cause = last_line_with(log, "diverged at step ");
  } else if (*code > 128 && forwarded) {
    r.outcome = RunDir(c.dir).holds_run() ? Outcome::Interrupted : Outcome::NotStarted;
  } else {
    r.outcome = Outcome::Failed;
    r.cause = *code > 128 ? fmt::format("killed by signal {}", *code - 128) : fmt::format("exit {}", *code);
  }
  write_status(c.dir, r);
  return r;
}

}  // namespace stx::grid
