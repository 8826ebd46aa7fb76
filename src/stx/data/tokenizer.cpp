#include "stx/data/tokenizer.h"

#include <dlfcn.h>
#include <link.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>

#include "stx/core/error.h"
#include "stx/core/runtime.h"
#include "stx/core/user_path.h"

namespace stx {

namespace {

// The shim's C functions, resolved once from a private link-map namespace.
struct Shim {
  int (*train)(const char*, char*, int);
  void* (*load)(const char*, char*, int);
  void (*free)(void*);
  int (*vocab_size)(void*);
  int (*special)(void*, int);
  int (*encode)(void*, const char*, int*, int);
  int (*decode)(void*, const int*, int, char*, int);
};

const Shim& shim() {
  static Shim s;
  static std::once_flag once;
  static std::string error;
  std::call_once(once, [] {
    const std::string path = SentencePiece::shim_path();
    void* lib = ::dlmopen(LM_ID_NEWLM, path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      error = "cannot load the SentencePiece shim " + path + ": " + ::dlerror() +
              " (build it with `make build`; it needs libsentencepiece-dev)";
      return;
    }
    auto sym = [&](const char* name) {
      void* p = ::dlsym(lib, name);
      if (!p && error.empty()) error = std::string("SentencePiece shim lacks symbol ") + name;
      return p;
    };
    s.train = reinterpret_cast<decltype(s.train)>(sym("stx_spm_train"));
    s.load = reinterpret_cast<decltype(s.load)>(sym("stx_spm_load"));
    s.free = reinterpret_cast<decltype(s.free)>(sym("stx_spm_free"));
    s.vocab_size = reinterpret_cast<decltype(s.vocab_size)>(sym("stx_spm_vocab_size"));
    s.special = reinterpret_cast<decltype(s.special)>(sym("stx_spm_special"));
    s.encode = reinterpret_cast<decltype(s.encode)>(sym("stx_spm_encode"));
    s.decode = reinterpret_cast<decltype(s.decode)>(sym("stx_spm_decode"));
  });
  if (!error.empty()) throw InputError(error);
  return s;
}

}  // namespace

struct SentencePiece::Handle {
  void* p = nullptr;
  ~Handle() {
    if (p) shim().free(p);
  }
};

std::string SentencePiece::shim_path() {
  if (const char* env = std::getenv("STX_SPM_SHIM")) return env;
  char exe[4096];
  const ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (n > 0) {
    exe[n] = '\0';
    auto beside = std::filesystem::path(exe).parent_path() / "libstx_spm.so";
    if (std::filesystem::exists(beside)) return beside.string();
    auto above = std::filesystem::path(exe).parent_path().parent_path() / "libstx_spm.so";  // build/tests/…
    if (std::filesystem::exists(above)) return above.string();
  }
  return STX_SPM_SHIM_PATH;
}

SentencePiece SentencePiece::load(const std::string& model_path) {
  require_regular_file(model_path, "SentencePiece model");
  char err[512] = {0};
  void* p = shim().load(model_path.c_str(), err, sizeof(err));
  if (!p) throw InputError("SentencePiece model '" + model_path + "' is invalid: " + err);
  SentencePiece sp;
  sp.h_ = std::make_shared<Handle>();
  sp.h_->p = p;
  return sp;
}

void SentencePiece::train(const std::vector<std::string>& inputs, const std::string& model_prefix, int vocab_size,
                          const std::string& model_type, double character_coverage) {
  std::string files;
  for (auto& f : inputs) {
    if (!std::filesystem::exists(f)) throw InputError("SentencePiece training input '" + f + "' not found");
    files += (files.empty() ? "" : ",") + f;
  }
  const std::string args = "--input=" + files + " --model_prefix=" + model_prefix +
                           " --vocab_size=" + std::to_string(vocab_size) + " --model_type=" + model_type +
                           " --character_coverage=" + std::to_string(character_coverage) +
                           " --pad_id=0 --unk_id=1 --bos_id=2 --eos_id=3 --input_sentence_size=2000000"
                           " --shuffle_input_sentence=true --minloglevel=2 --num_threads=" +
                           std::to_string(physical_cores());  // its default, 16, thrashes a small machine
  char err[1024] = {0};
  if (shim().train(args.c_str(), err, sizeof(err)) != 0)
    throw InputError("SentencePiece training failed: " + std::string(err));
}

std::vector<int> SentencePiece::encode(const std::string& text) const {
  std::vector<int> ids(text.size() + 16);
  int n = shim().encode(h_->p, text.c_str(), ids.data(), static_cast<int>(ids.size()));
  if (n < 0) throw InputError("SentencePiece could not encode a line");
  if (n > static_cast<int>(ids.size())) {
    ids.resize(n);
    n = shim().encode(h_->p, text.c_str(), ids.data(), n);
  }
  ids.resize(n);
  return ids;
}

std::string SentencePiece::decode(const std::vector<int>& ids) const {
  std::string out(ids.size() * 8 + 64, '\0');
  int n = shim().decode(h_->p, ids.data(), static_cast<int>(ids.size()), out.data(), static_cast<int>(out.size()));
  if (n < 0) throw InputError("SentencePiece could not decode ids");
  if (n >= static_cast<int>(out.size())) {
    out.resize(n + 1);
    n = shim().decode(h_->p, ids.data(), static_cast<int>(ids.size()), out.data(), n + 1);
  }
  out.resize(n);
  return out;
}

int SentencePiece::vocab_size() const { return shim().vocab_size(h_->p); }
int SentencePiece::pad_id() const { return shim().special(h_->p, 0); }
int SentencePiece::bos_id() const { return shim().special(h_->p, 1); }
int SentencePiece::eos_id() const { return shim().special(h_->p, 2); }
int SentencePiece::unk_id() const { return shim().special(h_->p, 3); }

}  // namespace stx
