#include "stx/report/plot.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "stx/core/error.h"

namespace stx {

namespace fs = std::filesystem;

std::string gnuplot_preamble(const std::string& png, int width, int height) {
  std::ostringstream os;
  os << "set terminal pngcairo size " << width << "," << height << " enhanced font 'DejaVu Sans,11'\n"
     << "set output '" << png << "'\n"
     << "set grid lc rgb '#dddddd'\nset key outside right top\nset encoding utf8\n";
  return os.str();
}

void run_gnuplot(const std::vector<std::pair<std::string, std::string>>& data, const GnuplotScript& script,
                 const std::string& png) {
  char tmpl[] = "/tmp/stx-plot-XXXXXX";
  if (!::mkdtemp(tmpl)) throw InputError("cannot create a temporary directory for plotting");
  const std::string dir = tmpl;
  struct Cleanup {
    std::string d;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(d, ec);
    }
  } cleanup{dir};
  for (auto& [name, text] : data) std::ofstream(dir + "/" + name) << text;
  const std::string tmp_png = dir + "/out.png";
  std::ofstream(dir + "/plot.gp") << script(dir, tmp_png);
  const std::string cmd = "gnuplot " + dir + "/plot.gp 2> " + dir + "/err.txt";
  const int rc = std::system(cmd.c_str());
  if (rc != 0 || !fs::exists(tmp_png) || fs::file_size(tmp_png) == 0) {
    std::ifstream err(dir + "/err.txt");
    std::string first, line;
    while (std::getline(err, line))
      if (!line.empty() && line.find_first_not_of(" ^") != std::string::npos) {
        first = line;
        break;
      }
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 127)
      throw InputError("gnuplot not found: install gnuplot-nox (scripts/setup.sh) to draw " + png);
    throw InputError("gnuplot failed drawing " + png + (first.empty() ? "" : ": " + first));
  }
  fs::copy_file(tmp_png, png + ".tmp", fs::copy_options::overwrite_existing);
  fs::rename(png + ".tmp", png);
}

}  // namespace stx
