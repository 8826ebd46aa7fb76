// stx/io/safetensors.cpp — save_safetensors (atomic) and load_safetensors (validates every field
// of the header before touching the data; every problem is a one-line InputError).
#include "stx/io/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <set>
#include <tuple>

#include <nlohmann/json.hpp>

#include "stx/core/atomic_file.h"
#include "stx/core/error.h"
#include "stx/io/crc32c.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian; this host is not");

namespace stx {
namespace {

using json = nlohmann::json;
constexpr uint64_t kMaxHeader = 100'000'000;  // bytes of JSON header we are willing to parse
constexpr size_t kMaxDims = 64;
// Checksums in __metadata__ (safetensors.h; files without them load unchecked).
constexpr const char* kTensorCrcKey = "stx.crc32c";
constexpr const char* kMetaCrcKey = "stx.metadata_crc32c";

const std::vector<std::pair<std::string, c10::ScalarType>> kDtypes = {
    {"F64", torch::kFloat64}, {"F32", torch::kFloat32}, {"F16", torch::kFloat16}, {"BF16", torch::kBFloat16},
    {"I64", torch::kInt64},   {"I32", torch::kInt32},   {"I16", torch::kInt16},   {"I8", torch::kInt8},
    {"U8", torch::kUInt8},    {"BOOL", torch::kBool}};

std::string supported_dtypes() {
  std::string s;
  for (const auto& d : kDtypes) s += (s.empty() ? "" : ", ") + d.first;
  return s;
}

// Throws InputError("PATH: PROBLEM") on one line: control characters (from tensor names or
// parser messages) become spaces.
[[noreturn]] void fail(const std::string& path, const std::string& problem) {
  std::string msg = path + ": " + problem;
  for (char& c : msg)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  throw InputError(msg);
}

std::string dtype_name(c10::ScalarType t) {
  for (const auto& d : kDtypes)
    if (d.second == t) return d.first;
  return "";
}

std::string range(uint64_t begin, uint64_t end) { return std::to_string(begin) + ".." + std::to_string(end); }

// A non-negative JSON integer (nlohmann parses non-negative literals as unsigned).
bool as_u64(const json& j, uint64_t& out) {
  if (!j.is_number_unsigned()) return false;
  out = j.get<uint64_t>();
  return true;
}

struct Entry {
  std::string name;
  c10::ScalarType dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

Entry parse_entry(const std::string& path, const std::string& name, const json& v, uint64_t data_size) {
  const std::string what = "tensor '" + name + "'";
  if (!v.is_object()) fail(path, what + ": entry is not a JSON object");
  for (const char* key : {"dtype", "shape", "data_offsets"})
    if (!v.contains(key)) fail(path, what + ": missing \"" + key + "\"");
  const json& dtype = v.at("dtype");
  const json& shape = v.at("shape");
  const json& offsets = v.at("data_offsets");

  if (!dtype.is_string()) fail(path, what + ": \"dtype\" must be a string");
  const std::string dname = dtype.get<std::string>();
  auto dt = std::find_if(kDtypes.begin(), kDtypes.end(), [&](const auto& d) { return d.first == dname; });
  if (dt == kDtypes.end()) fail(path, what + ": unknown dtype '" + dname + "' (supported: " + supported_dtypes() + ")");
  Entry e{name, dt->second, {}, 0, 0};

  if (!shape.is_array()) fail(path, what + ": \"shape\" must be an array of integers");
  if (shape.size() > kMaxDims)
    fail(path, what + ": \"shape\" has " + std::to_string(shape.size()) + " dimensions (at most " +
                   std::to_string(kMaxDims) + ")");
  uint64_t numel = 1;
  bool zero = false, overflow = false;
  for (const json& d : shape) {
    uint64_t dim = 0;
    if (!d.is_number_integer()) fail(path, what + ": \"shape\" must be an array of integers");
    if (!as_u64(d, dim)) fail(path, what + ": negative dimension in \"shape\" " + shape.dump());
    if (dim > static_cast<uint64_t>(INT64_MAX)) fail(path, what + ": dimension too large in \"shape\" " + shape.dump());
    zero = zero || dim == 0;
    overflow = __builtin_mul_overflow(numel, dim, &numel) || overflow;
    e.shape.push_back(static_cast<int64_t>(dim));
  }
  uint64_t nbytes = 0;  // stays 0 when a dimension is 0
  if (!zero && (overflow || __builtin_mul_overflow(numel, c10::elementSize(e.dtype), &nbytes)))
    fail(path, what + ": \"shape\" " + shape.dump() + " is too large");

  if (!offsets.is_array() || offsets.size() != 2 || !as_u64(offsets[0], e.begin) || !as_u64(offsets[1], e.end))
    fail(path, what + ": \"data_offsets\" must be [begin, end], two non-negative integers");
  if (e.begin > e.end) fail(path, what + ": \"data_offsets\" " + offsets.dump() + " has begin > end");
  if (e.end > data_size)
    fail(path, "truncated: " + what + " needs bytes " + range(e.begin, e.end) + " but the data section has " +
                   std::to_string(data_size));
  if (e.end - e.begin != nbytes)
    fail(path, what + ": \"data_offsets\" " + offsets.dump() + " span " + std::to_string(e.end - e.begin) +
                   " bytes but shape " + shape.dump() + " of " + dt->first + " needs " + std::to_string(nbytes));
  return e;
}

// Closes the descriptor on every exit path.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

// Reads exactly n bytes at offset off; false on an I/O error or a file that ends early.
bool read_at(int fd, void* dst, uint64_t n, uint64_t off) {
  char* p = static_cast<char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd, p, std::min<uint64_t>(n, 1u << 30), static_cast<off_t>(off));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    p += got, n -= got, off += got;
  }
  return true;
}

// The CRC-32C of the metadata's canonical JSON (sorted keys) without kMetaCrcKey.
std::string metadata_crc(json metadata) {
  metadata.erase(kMetaCrcKey);
  const std::string text = metadata.dump();
  return crc32c_hex(crc32c(text.data(), text.size()));
}

// What a checksum failure may also mean.
constexpr const char* kRewriteHint =
    "the file is corrupt, or another tool rewrote its tensors and kept stx's checksums (drop the metadata keys "
    "stx.crc32c and stx.metadata_crc32c to load it unchecked)";

// The tensor's recorded CRC when its record has the tensor's dtype and shape, else nullptr.
const json* recorded_crc(const json& crcs, const std::string& name, const std::string& dtype,
                         const std::vector<int64_t>& shape) {
  if (!crcs.contains(name)) return nullptr;
  const json& r = crcs.at(name);
  if (!r.is_array() || r.size() != 3 || !r[0].is_string() || r[1] != dtype || r[2] != json(shape)) return nullptr;
  return &r[0];
}

}  // namespace

const torch::Tensor* SafetensorsFile::find(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return &t;
  return nullptr;
}

void save_safetensors(const std::string& path, const std::vector<std::pair<std::string, torch::Tensor>>& tensors,
                      const std::map<std::string, std::string>& metadata, Checksums checksums) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty() || checksums == Checksums::On) header["__metadata__"] = metadata;
  for (const char* key : {kTensorCrcKey, kMetaCrcKey})
    if (metadata.count(key)) fail(path, std::string("metadata key '") + key + "' is reserved for stx's checksums");
  std::set<std::string> names;
  std::vector<torch::Tensor> data;  // contiguous CPU copies, in order
  json crcs = json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const std::string what = "tensor '" + name + "'";
    if (name == "__metadata__") fail(path, "\"__metadata__\" cannot be a tensor name");
    if (!names.insert(name).second) fail(path, "duplicate tensor name '" + name + "'");
    if (!t.defined()) fail(path, what + " is undefined");
    auto dt = std::find_if(kDtypes.begin(), kDtypes.end(), [&](const auto& d) { return d.second == t.scalar_type(); });
    if (dt == kDtypes.end())
      fail(path, what + " has unsupported dtype " + c10::toString(t.scalar_type()) +
                     " (supported: " + supported_dtypes() + ")");
    const uint64_t nbytes = t.numel() * t.element_size();
    header[name] = {{"dtype", dt->first}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + nbytes}}};
    offset += nbytes;
    data.push_back(t.detach().to(torch::kCPU).contiguous());
    if (checksums == Checksums::On)
      crcs[name] = json::array({crc32c_hex(crc32c(data.back().data_ptr(), nbytes)), dt->first, t.sizes().vec()});
  }
  std::string text;
  try {
    if (checksums == Checksums::On) {
      header["__metadata__"][kTensorCrcKey] = crcs.dump();
      header["__metadata__"][kMetaCrcKey] = metadata_crc(json::parse(header["__metadata__"].dump()));
    }
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {  // e.g. a name that is not valid UTF-8
    fail(path, std::string("cannot encode the header: ") + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  if (text.size() > kMaxHeader) fail(path, "header would exceed 100 MB (too many tensors)");

  write_atomically(path, [&](const std::string& tmp) {
    Fd out{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
    if (out.fd < 0) throw_write_error(tmp, errno);
    const uint64_t n = text.size();
    write_all(out.fd, &n, 8, tmp);  // little-endian host (static_assert above)
    write_all(out.fd, text.data(), n, tmp);
    for (const auto& c : data)
      if (c.numel() > 0) write_all(out.fd, c.data_ptr(), static_cast<size_t>(c.numel() * c.element_size()), tmp);
    const int fd = out.fd;
    out.fd = -1;
    if (::close(fd) != 0) throw_write_error(tmp, errno);
  });
}

SafetensorsFile load_safetensors(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not hang; it then fails the regular-file check.
  Fd f{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
  if (f.fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(f.fd, &st) != 0 || !S_ISREG(st.st_mode)) fail(path, "not a regular file");
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) fail(path, "file is " + std::to_string(size) + " bytes, too short for the 8-byte header length");

  uint64_t n = 0;
  unsigned char len[8];
  if (!read_at(f.fd, len, 8, 0)) fail(path, "cannot read the header length");
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  if (n == 0) fail(path, "header length is 0");
  if (n > kMaxHeader) fail(path, "header length " + std::to_string(n) + " exceeds the 100 MB limit");
  if (n > size - 8)
    fail(path, "truncated: header length is " + std::to_string(n) + " but only " + std::to_string(size - 8) +
                   " bytes follow the length field");
  std::string text(n, '\0');
  if (!read_at(f.fd, text.data(), n, 8)) fail(path, "cannot read the header");

  // nlohmann stops at a NUL byte as at the end of input; in JSON text it is never valid.
  if (text.find('\0') != std::string::npos) fail(path, "header is not valid JSON: it contains a NUL byte");
  // Parse, noting a repeated top-level key (nlohmann would silently keep the last one).
  std::string duplicate;
  std::set<std::string> seen;
  json header;
  try {
    header = json::parse(text, [&](int depth, json::parse_event_t event, json& parsed) {
      if (event == json::parse_event_t::key && depth == 1 && !seen.insert(parsed.get<std::string>()).second &&
          duplicate.empty())
        duplicate = parsed.get<std::string>();
      return true;
    });
  } catch (const json::exception& e) {
    fail(path, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) fail(path, "header is not a JSON object");
  if (!duplicate.empty()) fail(path, "header names '" + duplicate + "' twice");
  json crcs;  // name → [crc, dtype, shape], when the file has checksums
  if (header.contains("__metadata__") && header["__metadata__"].is_object()) {
    const json& m = header["__metadata__"];
    const bool meta_crc = m.contains(kMetaCrcKey), tensor_crcs = m.contains(kTensorCrcKey);
    if (meta_crc != tensor_crcs)
      fail(path, std::string("metadata has '") + (meta_crc ? kMetaCrcKey : kTensorCrcKey) + "' but not '" +
                     (meta_crc ? kTensorCrcKey : kMetaCrcKey) + "': " + kRewriteHint);
    if (meta_crc) {
      const auto now = metadata_crc(m);
      if (m[kMetaCrcKey] != now)
        fail(path, "the metadata fails its CRC-32C check (stored " + m[kMetaCrcKey].dump() + ", computed \"" + now +
                       "\"): the file is corrupt");
      try {
        crcs = json::parse(m[kTensorCrcKey].get<std::string>());
      } catch (const json::exception&) {
        fail(path, "metadata 'stx.crc32c' is not a JSON string of checksums");
      }
      if (!crcs.is_object()) fail(path, "metadata 'stx.crc32c' is not a JSON object of checksums");
    }
  }

  SafetensorsFile out;
  std::vector<Entry> entries;
  const uint64_t data_start = 8 + n, data_size = size - data_start;
  for (const auto& [key, value] : header.items()) {
    if (key != "__metadata__") {
      entries.push_back(parse_entry(path, key, value, data_size));
      continue;
    }
    if (!value.is_object()) fail(path, "\"__metadata__\" must be an object of strings");
    for (const auto& [k, v] : value.items()) {
      if (!v.is_string()) fail(path, "\"__metadata__\" value for '" + k + "' is not a string");
      if (k != kTensorCrcKey && k != kMetaCrcKey) out.metadata[k] = v.get<std::string>();  // checked here, not returned
    }
  }

  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  const Entry* prev = nullptr;  // the last non-empty range; ranges before it end no later
  for (const Entry& e : entries) {
    if (e.begin == e.end) continue;  // zero bytes overlap nothing
    if (prev && e.begin < prev->end)
      fail(path, "tensors '" + prev->name + "' and '" + e.name + "' overlap (bytes " + range(prev->begin, prev->end) +
                     " and " + range(e.begin, e.end) + ")");
    prev = &e;
  }

  for (const Entry& e : entries) {
    torch::Tensor t;
    try {
      t = torch::empty(e.shape, torch::TensorOptions().dtype(e.dtype));
    } catch (const c10::Error&) {  // e.g. shape [0, 2^62]: no bytes, yet too large for torch
      fail(path, "tensor '" + e.name + "': torch cannot allocate shape " + json(e.shape).dump());
    }
    if (e.end > e.begin && !read_at(f.fd, t.data_ptr(), e.end - e.begin, data_start + e.begin))
      fail(path, "cannot read the data of tensor '" + e.name + "'");
    if (crcs.is_object()) {
      const json* want = recorded_crc(crcs, e.name, dtype_name(e.dtype), e.shape);
      if (!want) fail(path, "tensor '" + e.name + "' has no checksum record with its dtype and shape: " + kRewriteHint);
      const auto now = crc32c_hex(crc32c(t.data_ptr(), e.end - e.begin));
      if (*want != now)
        fail(path, "tensor '" + e.name + "' fails its CRC-32C check (stored " + want->dump() + ", computed \"" + now +
                       "\"): " + kRewriteHint);
    }
    if (e.dtype == torch::kBool) {
      const auto* b = static_cast<const unsigned char*>(t.data_ptr());
      if (std::any_of(b, b + (e.end - e.begin), [](unsigned char c) { return c > 1; }))
        fail(path, "tensor '" + e.name + "': BOOL data holds a byte other than 0 or 1");
    }
    out.tensors.emplace_back(e.name, std::move(t));
  }
  if (crcs.is_object() && crcs.size() != out.tensors.size())
    for (const auto& [name, rec] : crcs.items())
      if (!out.find(name))
        fail(path, "'stx.crc32c' records tensor '" + name + "', which the file lacks: " + kRewriteHint);
  return out;
}

}  // namespace stx
