// apps/stx/command.h — how subcommands plug into the CLI: each cmd_*.cpp defines one
// register function that adds a CLI11 subcommand and the action it runs after parsing.
#pragma once
#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

namespace stx::cli {

// The action of the chosen subcommand; returns the process exit code.
using Action = std::function<int()>;

struct Registry {
  CLI::App& app;
  std::vector<std::pair<CLI::App*, Action>> commands;
  void add(CLI::App* sub, Action run) { commands.emplace_back(sub, std::move(run)); }
};

void register_init(Registry&);
void register_forward(Registry&);
void register_demo(Registry&);
void register_theory(Registry&);
void register_train(Registry&);
void register_eval(Registry&);
void register_translate(Registry&);
void register_generate(Registry&);
void register_plot(Registry&);
void register_sweep(Registry&);
void register_bench(Registry&);
void register_experiment(Registry&);
void register_doctor(Registry&);

// The command line as typed (from /proc/self/cmdline), shell-quoted where needed — for reports;
// the program named as typed when relative, else "stx" (main.cpp).
std::string command_line();

// Common options: --config FILE and repeated --set section.key=value.
struct ConfigOptions {
  std::string config;
  std::vector<std::string> overrides;
  void add_to(CLI::App* sub, bool config_required);
};

}  // namespace stx::cli
