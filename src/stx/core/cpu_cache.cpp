#include "stx/core/cpu_cache.h"

#include <malloc.h>

#include <c10/core/CPUAllocator.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <iterator>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

namespace stx {
namespace {

constexpr size_t kAlign = 64, kHeader = 64;  // the block's rounded size lives in the 64 bytes before it

size_t rounded(size_t n) {
  const size_t step = n <= 65536 ? kAlign : ((n / 64 + kAlign - 1) / kAlign) * kAlign;
  return ((std::max<size_t>(n, 1) + step - 1) / step) * step;
}

size_t limit_bytes() {
  const char* env = std::getenv("STX_CPU_CACHE_MB");
  const long mb = env ? std::strtol(env, nullptr, 10) : 8192;
  return static_cast<size_t>(mb > 0 ? mb : 0) << 20;
}

class CachingCPUAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t n) override {
    if (!enabled.load(std::memory_order_relaxed)) return c10::GetDefaultCPUAllocator()->allocate(n);
    const size_t size = rounded(n);
    void* data = take(size);
    if (!data) {
      void* base = nullptr;
      if (posix_memalign(&base, kAlign, size + kHeader) != 0 || !base) throw std::bad_alloc();
      *static_cast<size_t*>(base) = size;
      data = static_cast<char*>(base) + kHeader;
      misses.fetch_add(1, std::memory_order_relaxed);
    } else {
      hits.fetch_add(1, std::memory_order_relaxed);
    }
    return {data, data, &release, c10::Device(c10::DeviceType::CPU)};
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release; }
  void copy_data(void* dest, const void* src, std::size_t count) const override { default_copy_data(dest, src, count); }

  static void release(void* data);

  std::atomic<bool> enabled{true};
  std::atomic<int64_t> hits{0}, misses{0};
  std::mutex mutex;
  struct Cached {
    void* data;
    int64_t step;  // the step it was freed in
  };
  std::unordered_map<size_t, std::vector<Cached>> free_lists;  // newest last
  size_t cached = 0, limit = limit_bytes();
  int64_t step = 0, returned = 0;

 private:
  void* take(size_t size) {
    std::lock_guard<std::mutex> lock(mutex);
    auto it = free_lists.find(size);
    if (it == free_lists.end() || it->second.empty()) return nullptr;
    void* data = it->second.back().data;
    it->second.pop_back();
    cached -= size;
    return data;
  }
};

CachingCPUAllocator& cache() {
  static auto* a = new CachingCPUAllocator();  // never destroyed: tensors may outlive main()
  return *a;
}

void CachingCPUAllocator::release(void* data) {
  if (!data) return;
  void* base = static_cast<char*>(data) - kHeader;
  const size_t size = *static_cast<size_t*>(base);
  auto& c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.cached + size <= c.limit) {
      c.free_lists[size].push_back({data, c.step});
      c.cached += size;
      return;
    }
  }
  std::free(base);
}

}  // namespace

void install_cpu_cache() {
  static std::once_flag once;
  std::call_once(once, [] {
    const char* env = std::getenv("STX_CPU_CACHE");
    if (env && std::string(env) == "0") return;
    c10::SetCPUAllocator(&cache(), /*priority=*/1);  // above LibTorch's default (0)
  });
}

void set_cpu_cache_enabled(bool on) { cache().enabled.store(on); }
bool cpu_cache_enabled() { return c10::GetCPUAllocator() == &cache() && cache().enabled.load(); }

void end_cpu_cache_step() {
  auto& c = cache();
  std::vector<void*> stale;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    for (auto it = c.free_lists.begin(); it != c.free_lists.end();) {
      auto& blocks = it->second;
      size_t k = 0;  // blocks[0, k): freed before the step that has just ended, and not taken in it
      while (k < blocks.size() && blocks[k].step < c.step) stale.push_back(blocks[k++].data);
      c.cached -= k * it->first;
      blocks.erase(blocks.begin(), blocks.begin() + static_cast<std::ptrdiff_t>(k));
      it = blocks.empty() ? c.free_lists.erase(it) : std::next(it);
    }
    ++c.step, c.returned += static_cast<int64_t>(stale.size());
  }
  for (void* d : stale) std::free(static_cast<char*>(d) - kHeader);
  // The heap keeps what it is given back (runtime.h's thresholds), and blocks of sizes that do
  // not come back leave holes the next shapes do not fit. A bound, not a habit: once the heap's
  // free part exceeds twice what is in use (and 1 GB), its free pages go back to the system.
  // Trimming at every such step cost ~8 % on the atlas's runs for 1.4 → 1.1 GB
  // (docs/performance.md); at this bound it does not fire in them.
  if (stale.empty()) return;
  const auto m = ::mallinfo2();
  if (m.fordblks > std::max<size_t>(size_t{1} << 30, 2 * m.uordblks)) ::malloc_trim(0);
}

CpuCacheStats cpu_cache_stats() {
  auto& c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  return {c.hits.load(), c.misses.load(), static_cast<int64_t>(c.cached), c.returned};
}

}  // namespace stx
