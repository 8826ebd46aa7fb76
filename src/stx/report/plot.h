// stx/report/plot.h — figures through gnuplot (gnuplot-nox): write data tables to a temporary
// directory, run a script, produce a PNG atomically.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace stx {

using GnuplotScript = std::function<std::string(const std::string& data_dir, const std::string& png)>;

// Writes each (name, text) of `data` into a fresh temporary directory, runs gnuplot on
// script(data_dir, tmp_png) and renames the PNG to `png` on success. Throws InputError when
// gnuplot is missing or fails (the message carries gnuplot's first error line).
void run_gnuplot(const std::vector<std::pair<std::string, std::string>>& data, const GnuplotScript& script,
                 const std::string& png);

// Common preamble: PNG terminal (pngcairo when available) of the given size.
std::string gnuplot_preamble(const std::string& png, int width = 1000, int height = 600);

}  // namespace stx
