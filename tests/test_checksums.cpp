// tests/test_checksums.cpp — stx/io/crc32c against the standard check value and a bitwise
// reference, and safetensors files written with Checksums::On: a flipped data byte, a flipped
// metadata byte, a wrong stored checksum, a renamed, reshaped or dropped tensor and half of the
// checksum keys are InputErrors naming what failed; files without checksums load unchecked.
#include "stx/io/crc32c.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>

#include <torch/torch.h>
#include <nlohmann/json.hpp>

#include "stx/core/error.h"
#include "stx/io/safetensors.h"

namespace fs = std::filesystem;
using stx::Checksums;
using stx::InputError;

namespace {

// Bit by bit, as RFC 3720 §12.1 defines it.
uint32_t crc32c_bitwise(const std::string& s) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
  }
  return ~c;
}

std::string temp_path(const std::string& name) {
  static int counter = 0;
  auto dir = fs::path(::testing::TempDir()) /
             ("stx_checksums_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::create_directories(dir);
  return (dir / name).string();
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// The InputError message of loading `path` ("" if it loads).
std::string load_error(const std::string& path) {
  try {
    stx::load_safetensors(path);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

std::string written(const std::string& name) {
  const auto path = temp_path(name);
  stx::save_safetensors(path, {{"w", torch::arange(64, torch::kFloat32)}, {"b", torch::ones({3}, torch::kInt64)}},
                        {{"stx.config", R"({"model":{"d_model":32}})"}}, Checksums::On);
  return path;
}

}  // namespace

TEST(Crc32c, CheckValueAndBitwiseReference) {
  EXPECT_EQ(stx::crc32c("123456789", 9), 0xE3069283u);  // RFC 3720 / iSCSI check value
  EXPECT_EQ(stx::crc32c("", 0), 0u);
  std::mt19937 rng(7);
  for (size_t n : {1, 7, 8, 9, 63, 64, 65, 1000, 4097}) {
    std::string s(n, '\0');
    for (auto& c : s) c = static_cast<char>(rng());
    EXPECT_EQ(stx::crc32c(s.data(), s.size()), crc32c_bitwise(s)) << n << " bytes";
    // Continuing a CRC over a split gives the CRC of the whole.
    const size_t h = n / 3;
    EXPECT_EQ(stx::crc32c(s.data() + h, n - h, stx::crc32c(s.data(), h)), crc32c_bitwise(s)) << n << " bytes, split";
  }
  EXPECT_EQ(stx::crc32c_hex(0xE3069283u), "e3069283");
}

TEST(Checksums, IntactFileLoadsWithItsOwnMetadataOnly) {
  const auto path = written("ok.safetensors");
  const auto f = stx::load_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 2u);
  EXPECT_TRUE(torch::equal(*f.find("w"), torch::arange(64, torch::kFloat32)));
  EXPECT_EQ(f.metadata.size(), 1u);  // the checksum keys are checked, not returned
  EXPECT_EQ(f.metadata.count("stx.config"), 1u);
  EXPECT_NE(slurp(path).find("stx.crc32c"), std::string::npos);
}

TEST(Checksums, FlippedDataByteNamesTheTensor) {
  const auto path = written("data.safetensors");
  auto bytes = slurp(path);
  bytes[bytes.size() - 24 - 100] ^= 0x10;  // inside "w" (256 bytes, before b's 24)
  spit(path, bytes);
  const auto e = load_error(path);
  EXPECT_NE(e.find("tensor 'w' fails its CRC-32C check"), std::string::npos) << e;
  EXPECT_NE(e.find("corrupt"), std::string::npos) << e;
  EXPECT_EQ(e.find('\n'), std::string::npos);
}

TEST(Checksums, FlippedMetadataByte) {
  const auto path = written("meta.safetensors");
  auto bytes = slurp(path);
  const auto at = bytes.find("d_model\\\":32");
  ASSERT_NE(at, std::string::npos);
  bytes[at + 10] = '4';  // 32 → 42: still valid JSON, a different model
  spit(path, bytes);
  const auto e = load_error(path);
  EXPECT_NE(e.find("the metadata fails its CRC-32C check"), std::string::npos) << e;
}

TEST(Checksums, WrongStoredChecksum) {
  const auto path = written("crc.safetensors");
  auto bytes = slurp(path);
  const auto crc = stx::crc32c_hex(stx::crc32c(torch::arange(64, torch::kFloat32).data_ptr(), 256));
  const auto at = bytes.find(crc);
  ASSERT_NE(at, std::string::npos);
  bytes[at] = bytes[at] == '0' ? '1' : '0';
  spit(path, bytes);
  EXPECT_NE(load_error(path).find("CRC-32C"), std::string::npos) << load_error(path);
}

TEST(Checksums, TruncatedAndEmptyFiles) {
  const auto path = written("trunc.safetensors");
  const auto bytes = slurp(path);
  spit(path, bytes.substr(0, bytes.size() - 10));
  EXPECT_NE(load_error(path).find("truncated"), std::string::npos) << load_error(path);
  spit(path, "");
  EXPECT_NE(load_error(path).find("0 bytes"), std::string::npos) << load_error(path);
}

// A file of tensors {name: tensor} written by hand with the given metadata (as another tool would).
static std::string hand_written(const std::string& file, const nlohmann::json& metadata,
                                const std::vector<std::pair<std::string, torch::Tensor>>& tensors) {
  nlohmann::ordered_json hdr;
  if (!metadata.is_null()) hdr["__metadata__"] = metadata;
  std::string data;
  for (auto& [name, t] : tensors) {
    const auto nbytes = static_cast<size_t>(t.numel() * t.element_size());
    hdr[name] = {{"dtype", t.scalar_type() == torch::kFloat32 ? "F32" : "I64"},
                 {"shape", t.sizes().vec()},
                 {"data_offsets", {data.size(), data.size() + nbytes}}};
    data += std::string(static_cast<const char*>(t.data_ptr()), nbytes);
  }
  std::string text = hdr.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  std::string len(8, '\0');
  for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  const auto path = temp_path(file);
  spit(path, len + text + data);
  return path;
}

TEST(Checksums, FilesWithoutChecksumsAndRewrittenFiles) {
  const auto plain = temp_path("plain.safetensors");
  stx::save_safetensors(plain, {{"w", torch::ones({4})}});
  EXPECT_EQ(slurp(plain).find("crc32c"), std::string::npos);  // Checksums::Off writes none
  EXPECT_EQ(load_error(plain), "");
  // stx's metadata (with its checksums) as another tool would carry it over.
  const auto bytes = slurp(written("source.safetensors"));
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  const auto meta = nlohmann::json::parse(bytes.substr(8, n))["__metadata__"];
  const auto w = torch::arange(64, torch::kFloat32), b = torch::ones({3}, torch::kInt64);
  EXPECT_EQ(load_error(hand_written("same.safetensors", meta, {{"w", w}, {"b", b}})), "");  // the same tensors
  auto e = load_error(hand_written("b.safetensors", meta, {{"w", w}, {"b", b * 2}}));
  EXPECT_NE(e.find("tensor 'b' fails its CRC-32C check"), std::string::npos) << e;
  EXPECT_NE(e.find("another tool"), std::string::npos) << e;
  e = load_error(hand_written("shape.safetensors", meta, {{"w", torch::zeros({2})}, {"b", b}}));
  EXPECT_NE(e.find("tensor 'w' has no checksum record with its dtype and shape"), std::string::npos) << e;
  e = load_error(hand_written("renamed.safetensors", meta, {{"x", w}, {"b", b}}));  // a flipped byte in a name
  EXPECT_NE(e.find("tensor 'x' has no checksum record"), std::string::npos) << e;
  e = load_error(hand_written("dropped.safetensors", meta, {{"b", b}}));
  EXPECT_NE(e.find("records tensor 'w', which the file lacks"), std::string::npos) << e;
  auto half = meta;
  half.erase("stx.metadata_crc32c");  // e.g. a flipped byte in that key's name
  e = load_error(hand_written("half.safetensors", half, {{"w", w}, {"b", b}}));
  EXPECT_NE(e.find("but not 'stx.metadata_crc32c'"), std::string::npos) << e;
  // Without stx's two keys the rewritten file loads unchecked (the caller's checks remain).
  auto bare = meta;
  bare.erase("stx.crc32c"), bare.erase("stx.metadata_crc32c");
  EXPECT_EQ(load_error(hand_written("bare.safetensors", bare, {{"w", torch::zeros({2})}, {"b", b}})), "");
}

TEST(Checksums, ReservedKeysRefused) {
  EXPECT_THROW(stx::save_safetensors(temp_path("r.safetensors"), {}, {{"stx.crc32c", "{}"}}, Checksums::On),
               InputError);
}
