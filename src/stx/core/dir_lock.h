// stx/core/dir_lock.h — one owner per output directory. A process that writes a run or grid
// directory holds an exclusive flock(2) on DIR/.stx.lock for as long as it runs; a second
// process is refused (InputError naming the directory and the holder's pid). The kernel drops
// the lock when its process dies, kill -9 included, so no stale lock outlives a crash; and
// since no one else writes while it is held, the temporary files of earlier, dead writers
// (`NAME.tmp.PID`, core/atomic_file.h; `NAME.tmp`) are removed when the lock is taken.
#pragma once
#include <string>

namespace stx {

class DirLock {
 public:
  static constexpr const char* kFile = ".stx.lock";

  // `dir` must exist. `what` names it in messages ("run directory", "sweep directory").
  DirLock(const std::string& dir, const std::string& what);
  ~DirLock();
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

  // Temporary files of dead writers removed when the lock was taken, and their bytes.
  int stale_removed() const { return stale_; }
  double stale_mb() const { return stale_mb_; }

  // Refuses (InputError) when another process holds `dir`'s lock now; takes nothing. For a
  // launcher that checks before it starts the processes that will take the lock.
  static void check_free(const std::string& dir, const std::string& what);

 private:
  int fd_ = -1;
  int stale_ = 0;
  double stale_mb_ = 0;
};

}  // namespace stx
