// apps/stx/main.cpp — the stx command line: parses, dispatches to a subcommand, and maps
// errors to exit codes (0 ok, 1 a check the user asked to enforce failed, 2 bad input, 3 a bug,
// 4 a peer of a data-parallel job failed, 5 the machine failed: disk full or I/O error).
#include <torch/torch.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "command.h"
#include "stx/core/cpu_cache.h"
#include "stx/core/error.h"
#include "stx/core/runtime.h"

namespace stx::cli {

// The program as a report should name it: a relative path as typed (build/stx; "./" dropped),
// else just "stx" — an absolute path (a copy in /tmp, an install prefix) is not a fact of the
// result, and a bare name was found on PATH.
static std::string program_name(const std::string& argv0) {
  if (argv0.empty() || argv0.front() == '/' || argv0.find('/') == std::string::npos) return "stx";
  return std::filesystem::path(argv0).lexically_normal().string();
}

std::string command_line() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>()), out, arg;
  bool first = true;
  for (char c : all) {
    if (c != '\0') {
      arg += c;
      continue;
    }
    if (first) arg = program_name(arg), first = false;
    const bool plain = !arg.empty() && std::all_of(arg.begin(), arg.end(), [](char ch) {
      return std::isalnum(static_cast<unsigned char>(ch)) || std::string("-_./=,:+@%").find(ch) != std::string::npos;
    });
    std::string q = "'";
    for (char ch : arg) q += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    out += (out.empty() ? "" : " ") + (plain ? arg : q + "'");
    arg.clear();
  }
  return out;
}

void ConfigOptions::add_to(CLI::App* sub, bool config_required) {
  auto* c = sub->add_option("--config", config, "YAML config file (configs/*.yaml)");
  if (config_required) c->required();
  sub->add_option("--set", overrides, "override a config key: --set section.key=value (repeatable)")
      ->type_name("KEY=VALUE")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}
}  // namespace stx::cli

int main(int argc, char** argv) {
  stx::reexec_with_runtime_env(argc, argv);
  stx::install_cpu_cache();
  CLI::App app{
      "stx — stable transformers: train and study very deep Transformers (Post-LN, Pre-LN, DeepNorm, σReparam)"};
  app.set_version_flag("--version", stx::build_info());
  app.require_subcommand(1);
  stx::cli::Registry reg{app, {}};
  stx::cli::register_init(reg);
  stx::cli::register_forward(reg);
  stx::cli::register_demo(reg);
  stx::cli::register_theory(reg);
  stx::cli::register_train(reg);
  stx::cli::register_eval(reg);
  stx::cli::register_translate(reg);
  stx::cli::register_generate(reg);
  stx::cli::register_plot(reg);
  stx::cli::register_sweep(reg);
  stx::cli::register_bench(reg);
  stx::cli::register_experiment(reg);
  stx::cli::register_doctor(reg);
  if (argc > 1 && argv[1][0] != '-') {  // name the unknown subcommand instead of "a subcommand is required"
    std::string names;
    bool known = false;
    for (auto& [sub, _] : reg.commands) {
      names += (names.empty() ? "" : ", ") + sub->get_name();
      known |= sub->get_name() == argv[1];
    }
    if (!known) {
      std::cerr << "stx: error: unknown command '" << argv[1] << "' (allowed: " << names << ")\n";
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "stx: error: " << e.what() << " (see stx --help)\n";
    return 2;
  }
  try {
    stx::init_runtime();
    for (auto& [sub, run] : reg.commands)
      if (sub->parsed()) return run();
    return 2;
  } catch (const stx::InputError& e) {
    std::cerr << "stx: error: " << e.what() << "\n";
    return 2;
  } catch (const stx::DistError& e) {
    std::cerr << "stx: error: " << e.what() << "\n";
    return 4;
  } catch (const stx::EnvError& e) {
    std::cerr << "stx: error: " << e.what() << "\n";
    return 5;
  } catch (const std::filesystem::filesystem_error& e) {
    // A net: user paths are checked before use (core/user_path.h). A full disk or an I/O error
    // is the machine's failure (exit 5, as EnvError); any other is a path the user gave.
    const int err = e.code().value();
    const bool env = err == ENOSPC || err == EDQUOT || err == EIO || err == EFBIG;
    std::cerr << "stx: error: " << e.what() << "\n";
    return env ? 5 : 2;
  } catch (const c10::Error& e) {
    std::cerr << "stx: internal error: " << e.what_without_backtrace() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "stx: internal error: " << e.what() << "\n";
    return 3;
  }
}
