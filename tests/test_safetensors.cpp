// tests/test_safetensors.cpp — stx/io/safetensors: round trips of every dtype, the exact byte
// layout of a tiny file, an InputError for every kind of malformed file, and failed saves.
#include "stx/io/safetensors.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <torch/torch.h>

#include "stx/core/error.h"

namespace fs = std::filesystem;
using stx::InputError;
using stx::load_safetensors;
using stx::save_safetensors;

namespace {

// A fresh, empty directory per call.
std::string fresh_dir() {
  static int counter = 0;
  fs::path dir = fs::path(::testing::TempDir()) /
                 ("stx_safetensors_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

std::string write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string le64(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A file: length field, header as given (no padding), data.
std::string st_file(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

std::string bytes_of(const torch::Tensor& t) {
  torch::Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), c.numel() * c.element_size());
}

}  // namespace

TEST(Safetensors, RoundTripEveryDtype) {
  const std::string path = fresh_dir() + "/all.safetensors";
  torch::manual_seed(0);
  std::vector<std::pair<std::string, torch::Tensor>> in;
  for (auto dt : {torch::kFloat64, torch::kFloat32, torch::kFloat16, torch::kBFloat16, torch::kInt64, torch::kInt32,
                  torch::kInt16, torch::kInt8, torch::kUInt8, torch::kBool}) {
    const std::string n = c10::toString(dt);
    torch::Tensor full = dt == torch::kBool          ? torch::randint(0, 2, {2, 3}).to(dt)
                         : dt == torch::kUInt8       ? torch::randint(0, 256, {2, 3}).to(dt)
                         : torch::isFloatingType(dt) ? torch::randn({2, 3}).to(dt)
                                                     : torch::randint(-100, 100, {2, 3}).to(dt);
    in.emplace_back(n, full);
    in.emplace_back(n + ".scalar", full.flatten()[1].clone());  // 0-d
    in.emplace_back(n + ".empty", torch::empty({0, 5}, dt));
  }
  in.emplace_back("transposed", torch::randn({3, 4}).t());  // non-contiguous
  const std::map<std::string, std::string> meta = {{"format", "pt"}, {"config", "{\"a\": [1, 2]}\n"}, {"ü", "ß"}};
  save_safetensors(path, in, meta);

  const stx::SafetensorsFile f = load_safetensors(path);
  EXPECT_EQ(f.metadata, meta);
  ASSERT_EQ(f.tensors.size(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    SCOPED_TRACE(in[i].first);
    const torch::Tensor& got = f.tensors[i].second;  // written in order, so file order = input order
    EXPECT_EQ(f.tensors[i].first, in[i].first);
    EXPECT_EQ(got.scalar_type(), in[i].second.scalar_type());
    EXPECT_EQ(got.sizes(), in[i].second.sizes());
    EXPECT_TRUE(got.is_contiguous());
    EXPECT_EQ(bytes_of(got), bytes_of(in[i].second));
  }
  ASSERT_NE(f.find("Float.scalar"), nullptr);  // names are c10::toString(dtype)
  EXPECT_EQ(f.find("Float.scalar")->dim(), 0);
  ASSERT_NE(f.find("Bool.empty"), nullptr);
  EXPECT_EQ(f.find("Bool.empty")->numel(), 0);
  EXPECT_EQ(f.find("nope"), nullptr);
}

TEST(Safetensors, EmptyFileRoundTrip) {
  const std::string path = fresh_dir() + "/empty.safetensors";
  save_safetensors(path, {});
  EXPECT_EQ(read_file(path), le64(8) + "{}      ");
  const stx::SafetensorsFile f = load_safetensors(path);
  EXPECT_TRUE(f.tensors.empty());
  EXPECT_TRUE(f.metadata.empty());
}

TEST(Safetensors, ByteLayout) {
  const std::string path = fresh_dir() + "/tiny.safetensors";
  save_safetensors(path, {{"a", torch::tensor({1.0f, 2.0f})}, {"b", torch::tensor({7, 8, 9}, torch::kUInt8)}},
                   {{"k", "v"}});
  // 132 bytes of JSON, padded with 4 spaces to 136 (8 + 136 = 144, a multiple of 8).
  const std::string json = R"({"__metadata__":{"k":"v"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"U8","shape":[3],"data_offsets":[8,11]}})";
  ASSERT_EQ(json.size(), 132u);
  const std::string data("\x00\x00\x80\x3f\x00\x00\x00\x40\x07\x08\x09", 11);  // 1.0f, 2.0f LE; 7 8 9
  const std::string expected = std::string("\x88\0\0\0\0\0\0\0", 8) + json + "    " + data;
  EXPECT_EQ(read_file(path), expected);
  EXPECT_EQ(expected.size(), 155u);
}

TEST(Safetensors, ValidHandWrittenFiles) {
  const std::string dir = fresh_dir();
  // Unpadded header, file order by data offset (not by name), an empty tensor sharing an
  // offset with a non-empty one, a 0-element tensor with a huge dimension, an unused gap and trailing bytes, no
  // __metadata__.
  const std::string path = write_file(
      dir + "/ok.safetensors", st_file(R"({"a":{"dtype":"I32","shape":[],"data_offsets":[6,10]},)"
                                       R"("b":{"dtype":"U8","shape":[2],"data_offsets":[0,2]},)"
                                       R"("c":{"dtype":"F16","shape":[3,0],"data_offsets":[6,6]},)"
                                       R"("z":{"dtype":"BOOL","shape":[0,9223372036854775807],"data_offsets":[0,0]}})",
                                       "\x05\x06????" + std::string("\x2a\0\0\0", 4) + "trailing"));
  const stx::SafetensorsFile f = load_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 4u);
  ASSERT_TRUE(f.find("a") && f.find("b") && f.find("c") && f.find("z"));
  EXPECT_EQ(f.tensors[0].first, "z");  // sorted by (begin, end)
  EXPECT_EQ(f.tensors[1].first, "b");
  EXPECT_EQ(f.tensors[2].first, "c");
  EXPECT_EQ(f.tensors[3].first, "a");
  EXPECT_EQ(f.find("z")->size(1), INT64_MAX);
  EXPECT_EQ(f.find("a")->dim(), 0);
  EXPECT_EQ(f.find("a")->item<int32_t>(), 42);
  EXPECT_EQ(f.find("b")->sum().item<int64_t>(), 11);
  EXPECT_EQ(f.find("c")->sizes(), (std::vector<int64_t>{3, 0}));
  // Loaded tensors own their memory (from_blob views would have non-resizable storage).
  EXPECT_TRUE(f.find("a")->storage().resizable());
  fs::remove(path);
  EXPECT_EQ(f.find("a")->item<int32_t>(), 42);
}

TEST(Safetensors, MalformedFilesAreInputErrors) {
  const std::string dir = fresh_dir();
  const std::string f32x2 = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  auto entry = [](const std::string& fields) { return R"({"x":{)" + fields + "}}"; };
  const std::string ok_dtype = R"("dtype":"F32",)", ok_shape = R"("shape":[2],)";
  const std::string ok_off = R"("data_offsets":[0,8])";
  const std::string eight(8, '\0');
  std::string dims65 = "1";
  for (int i = 1; i < 65; ++i) dims65 += ",1";
  struct Case {
    std::string name, bytes, needle;
  };
  const std::vector<Case> cases = {
      {"short", "abc", "too short"},
      {"zero_len", le64(0) + "{}", "header length is 0"},
      {"len_past_end", le64(100) + "{}", "truncated: header length is 100"},
      {"len_over_100mb", le64(200'000'000) + "{}", "100 MB"},
      {"len_max", le64(UINT64_MAX) + "{}", "100 MB"},
      {"bad_json", st_file(R"({"x":)"), "not valid JSON"},
      {"nul_padding", st_file(std::string("{}\0\0", 4)), "not valid JSON"},
      {"bad_utf8", st_file("{\"\xff\":1}"), "not valid JSON"},
      {"not_object", st_file("[1,2]"), "not a JSON object"},
      {"duplicate", st_file(R"({"x":)" + f32x2 + R"(,"x":)" + f32x2 + "}", eight), "names 'x' twice"},
      {"entry_not_object", st_file(R"({"x":[1]})"), "tensor 'x': entry is not a JSON object"},
      {"newline_name", st_file("{\"x\\ny\":5}"), "tensor 'x y'"},
      {"no_dtype", st_file(entry(ok_shape + ok_off), eight), "missing \"dtype\""},
      {"no_shape", st_file(entry(ok_dtype + ok_off), eight), "missing \"shape\""},
      {"no_offsets", st_file(entry(ok_dtype + R"("shape":[2])"), eight), "missing \"data_offsets\""},
      {"dtype_number", st_file(entry(R"("dtype":5,)" + ok_shape + ok_off), eight), "\"dtype\" must be a string"},
      {"unknown_dtype", st_file(entry(R"("dtype":"F8_E4M3",)" + ok_shape + ok_off), eight),
       "unknown dtype 'F8_E4M3' (supported: F64, F32, F16, BF16, I64, I32, I16, I8, U8, BOOL)"},
      {"shape_number", st_file(entry(ok_dtype + R"("shape":2,)" + ok_off), eight), "\"shape\" must be an array"},
      {"shape_float", st_file(entry(ok_dtype + R"("shape":[2.0],)" + ok_off), eight), "\"shape\" must be an array"},
      {"shape_string", st_file(entry(ok_dtype + R"("shape":["2"],)" + ok_off), eight), "\"shape\" must be an array"},
      {"shape_nested", st_file(entry(ok_dtype + R"("shape":[[2]],)" + ok_off), eight), "\"shape\" must be an array"},
      {"shape_negative", st_file(entry(ok_dtype + R"("shape":[-2],)" + ok_off), eight), "negative dimension"},
      {"shape_huge_dim", st_file(entry(ok_dtype + R"("shape":[18446744073709551615],)" + ok_off), eight),
       "dimension too large"},
      {"shape_too_many_elems", st_file(entry(ok_dtype + R"("shape":[4294967296,4294967296,16],)" + ok_off), eight),
       "is too large"},
      {"shape_bytes_overflow", st_file(entry(ok_dtype + R"("shape":[4611686018427387904],)" + ok_off), eight),
       "is too large"},
      {"shape_too_many_dims", st_file(entry(ok_dtype + R"("shape":[)" + dims65 + R"(],"data_offsets":[0,4])"), eight),
       "\"shape\" has 65 dimensions (at most 64)"},
      {"offsets_number", st_file(entry(ok_dtype + ok_shape + R"("data_offsets":8)"), eight),
       "\"data_offsets\" must be"},
      {"offsets_one", st_file(entry(ok_dtype + ok_shape + R"("data_offsets":[8])"), eight), "\"data_offsets\" must be"},
      {"offsets_three", st_file(entry(ok_dtype + ok_shape + R"("data_offsets":[0,8,8])"), eight),
       "\"data_offsets\" must be"},
      {"offsets_negative", st_file(entry(ok_dtype + ok_shape + R"("data_offsets":[-1,7])"), eight),
       "\"data_offsets\" must be"},
      {"offsets_float", st_file(entry(ok_dtype + ok_shape + R"("data_offsets":[0,8.0])"), eight),
       "\"data_offsets\" must be"},
      {"offsets_reversed", st_file(entry(ok_dtype + R"("shape":[0],"data_offsets":[8,0])"), eight), "begin > end"},
      {"truncated", st_file(entry(ok_dtype + R"("shape":[1024],"data_offsets":[0,4096])"), std::string(1000, 'x')),
       "truncated: tensor 'x' needs bytes 0..4096 but the data section has 1000"},
      {"size_mismatch", st_file(entry(ok_dtype + ok_shape + R"("data_offsets":[0,4])"), eight),
       "span 4 bytes but shape [2] of F32 needs 8"},
      {"overlap",
       st_file(R"({"x":)" + f32x2 + R"(,"y":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
               std::string(12, '\0')),
       "tensors 'x' and 'y' overlap (bytes 0..8 and 4..12)"},
      {"same_range", st_file(R"({"x":)" + f32x2 + R"(,"y":)" + f32x2 + "}", eight), "overlap"},
      {"bool_byte", st_file(R"({"x":{"dtype":"BOOL","shape":[2],"data_offsets":[0,2]}})", "\x01\x02"),
       "byte other than 0 or 1"},
      {"metadata_array", st_file(R"({"__metadata__":["a"]})"), "\"__metadata__\" must be an object of strings"},
      {"metadata_number", st_file(R"({"__metadata__":{"k":1}})"), "\"__metadata__\" value for 'k' is not a string"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const std::string path = write_file(dir + "/" + c.name + ".safetensors", c.bytes);
    try {
      load_safetensors(path);
      ADD_FAILURE() << "no error";
    } catch (const InputError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(c.needle), std::string::npos) << msg;
      EXPECT_EQ(msg.rfind(path + ": ", 0), 0u) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }
}

TEST(Safetensors, UnreadablePathsAreInputErrors) {
  const std::string dir = fresh_dir();
  EXPECT_THROW(load_safetensors(dir + "/missing.safetensors"), InputError);
  EXPECT_THROW(load_safetensors(dir), InputError);  // a directory
  const std::string fifo = dir + "/fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THROW(load_safetensors(fifo), InputError);  // and does not block
  try {
    load_safetensors(dir + "/missing.safetensors");
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), dir + "/missing.safetensors: cannot open: No such file or directory");
  }
}

TEST(Safetensors, FailedSaveLeavesNoFile) {
  const std::string dir = fresh_dir();
  const torch::Tensor t = torch::ones({2});
  EXPECT_THROW(save_safetensors(dir + "/no/such/dir/x.safetensors", {{"a", t}}), InputError);
  EXPECT_FALSE(fs::exists(dir + "/no"));

  const std::string path = dir + "/x.safetensors";
  EXPECT_THROW(save_safetensors(path, {{"a", t}, {"b", t}, {"a", t}}), InputError);
  EXPECT_THROW(save_safetensors(path, {{"__metadata__", t}}), InputError);
  EXPECT_THROW(save_safetensors(path, {{"c", torch::ones({2}, torch::kComplexFloat)}}), InputError);
  EXPECT_THROW(save_safetensors(path, {{"u", torch::Tensor()}}), InputError);
  EXPECT_TRUE(fs::is_empty(dir)) << "no file and no temporary file left";

  // A failed save over an existing file leaves the old file intact.
  save_safetensors(path, {{"old", t}});
  EXPECT_THROW(save_safetensors(path, {{"a", t}, {"a", t}}), InputError);
  const stx::SafetensorsFile f = load_safetensors(path);
  ASSERT_EQ(f.tensors.size(), 1u);
  EXPECT_EQ(f.tensors[0].first, "old");
  EXPECT_EQ(std::distance(fs::directory_iterator(dir), fs::directory_iterator()), 1);
}
