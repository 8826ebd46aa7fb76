// stx/core/host_record.h — what machine a process runs on, for the record a run keeps of every
// process that trained it (RUN/hosts.jsonl, core/run_dir.h): the CPU model (/proc/cpuinfo), the
// BLAS and the kernel it selected for this CPU (OpenBLAS's config string: e.g. "SkylakeX" or
// "Zen" — another kernel sums the products in another order, so float32 results differ in the
// last bits), LibTorch's threads and the versions. Resuming a run on another machine is allowed;
// this is how a reader knows it happened.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace stx {

std::string cpu_model();  // "model name" of /proc/cpuinfo; "unknown" when absent

// {"cpu", "blas", "threads", "stx", "libtorch", "host_threads"} of this process.
nlohmann::json host_record();

// Writes host_record() merged with `extra` as one line of `path` (RUN/hosts.jsonl): appended on a
// resume, the file started afresh on a fresh start (a reused directory's old lines are not this
// run's). InputError naming the path when the line cannot be written.
void record_host(const std::string& path, const nlohmann::json& extra, bool resume);

}  // namespace stx
