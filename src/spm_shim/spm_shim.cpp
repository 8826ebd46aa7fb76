// src/spm_shim/spm_shim.cpp — a plain C interface around SentencePiece, built as its own shared
// library (libstx_spm.so) and loaded by stx with dlmopen(LM_ID_NEWLM) into a separate link-map
// namespace: Debian's libsentencepiece carries protobuf 3.14-lite, Debian's LibTorch loads
// protobuf 3.21, and the two crash when linked into one namespace (docs/design.md).
// Every function reports failure by return value and a message in the caller's buffer.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <cstring>
#include <string>
#include <vector>

namespace {
void set_err(char* err, int len, const std::string& msg) {
  if (!err || len <= 0) return;
  std::strncpy(err, msg.c_str(), static_cast<size_t>(len - 1));
  err[len - 1] = '\0';
}
}  // namespace

extern "C" {

// Trains a model; `args` in spm_train's flag syntax ("--input=… --model_prefix=… …").
// --vocab_size is a soft limit by default (--hard_vocab_limit=false): a corpus too small for
// the requested size gives a smaller model instead of an error (the model's vocab_size says
// how many pieces it has). A --hard_vocab_limit in `args` overrides this (later flags win).
int stx_spm_train(const char* args, char* err, int errlen) {
  const std::string all = std::string("--hard_vocab_limit=false ") + args;
  auto st = sentencepiece::SentencePieceTrainer::Train(all);
  if (!st.ok()) {
    set_err(err, errlen, st.ToString());
    return 1;
  }
  return 0;
}

void* stx_spm_load(const char* path, char* err, int errlen) {
  auto* sp = new sentencepiece::SentencePieceProcessor();
  auto st = sp->Load(path);
  if (!st.ok()) {
    set_err(err, errlen, st.ToString());
    delete sp;
    return nullptr;
  }
  return sp;
}

void stx_spm_free(void* h) { delete static_cast<sentencepiece::SentencePieceProcessor*>(h); }

int stx_spm_vocab_size(void* h) { return static_cast<sentencepiece::SentencePieceProcessor*>(h)->GetPieceSize(); }

// Special ids (−1 when the model has none).
int stx_spm_special(void* h, int which) {
  auto* sp = static_cast<sentencepiece::SentencePieceProcessor*>(h);
  switch (which) {
    case 0: return sp->pad_id();
    case 1: return sp->bos_id();
    case 2: return sp->eos_id();
    case 3: return sp->unk_id();
  }
  return -1;
}

// Encodes UTF-8 `text` into ids. Returns the number of ids; when it exceeds `cap`, only
// `cap` are written and the caller retries with a larger buffer. −1 on error.
int stx_spm_encode(void* h, const char* text, int* ids, int cap) {
  std::vector<int> out;
  if (!static_cast<sentencepiece::SentencePieceProcessor*>(h)->Encode(text, &out).ok()) return -1;
  const int n = static_cast<int>(out.size());
  std::memcpy(ids, out.data(), sizeof(int) * static_cast<size_t>(n < cap ? n : cap));
  return n;
}

// Decodes ids into UTF-8. Returns the byte length; when ≥ cap, the caller retries. −1 on error.
int stx_spm_decode(void* h, const int* ids, int n, char* out, int cap) {
  std::string text;
  std::vector<int> v(ids, ids + n);
  if (!static_cast<sentencepiece::SentencePieceProcessor*>(h)->Decode(v, &text).ok()) return -1;
  const int len = static_cast<int>(text.size());
  if (len < cap) std::memcpy(out, text.c_str(), static_cast<size_t>(len) + 1);
  return len;
}

}  // extern "C"
