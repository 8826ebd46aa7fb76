// stx/grid/grid_dir.cpp — see grid_dir.h.
#include "stx/grid/grid_dir.h"

#include <filesystem>
#include <fstream>

#include "stx/core/atomic_file.h"
#include "stx/core/error.h"
#include "stx/core/run_dir.h"

namespace stx::grid {

namespace fs = std::filesystem;

std::shared_ptr<DirLock> prepare_grid_dir(const GridDir& g, const nlohmann::json& plan,
                                          const std::function<std::string(const nlohmann::json&)>& mismatch) {
  const fs::path dir(g.out), plan_file = dir / g.plan_file;
  std::error_code ec;
  const auto st = fs::status(dir, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) throw InputError("--out " + g.out + ": " + ec.message());
  if (fs::exists(st) && !fs::is_directory(st)) throw InputError("--out " + g.out + " exists and is not a directory");
  bool empty = true;  // but for a lock file
  for (auto& e : fs::directory_iterator(dir, ec)) empty &= e.path().filename() == DirLock::kFile;
  const bool made = fs::create_directories(dir, ec);
  if (ec) throw InputError("cannot create --out " + g.out + ": " + ec.message());
  auto lock = std::make_shared<DirLock>(g.out, g.kind.substr(g.kind.find(' ') + 1) + " directory");
  try {
    if (fs::exists(plan_file)) {
      nlohmann::json stored;
      try {
        std::ifstream(plan_file) >> stored;
      } catch (const std::exception&) {
        throw InputError(plan_file.string() + " is not valid JSON; is --out " + g.out + " " + g.kind + " directory?");
      }
      bool trained = false;
      for (auto& e : fs::directory_iterator(dir, ec))
        trained |= e.is_directory() && RunDir(e.path().string()).holds_run();
      const auto why = mismatch(stored);
      if (!why.empty() && trained)
        throw InputError("--out " + g.out + " holds " + g.kind + " with a different setup: " + why +
                         "; rerun it with the same " + g.options + " or choose another --out");
    } else if (!empty) {
      throw InputError("--out " + g.out + " exists and is not " + g.kind + " directory (no " + g.plan_file +
                       "); choose a new or empty directory");
    }
    write_text_atomically(plan_file.string(), plan.dump(2) + "\n");
  } catch (const InputError&) {
    if (made) fs::remove_all(dir, ec);  // nothing but the lock file was written
    throw;
  }
  return lock;
}

}  // namespace stx::grid
