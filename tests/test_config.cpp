// Config loading and validation: every error is an InputError naming the key and what is
// allowed; YAML, --set and the JSON round trip agree.
#include <gtest/gtest.h>

#include <fstream>

#include "helpers.h"
#include "stx/config/config_io.h"
#include "stx/core/error.h"

namespace stx {
namespace {

using test::error_of;

std::string write_tmp(const std::string& name, const std::string& text) {
  auto path = ::testing::TempDir() + "/stx_cfg_" + name + ".yaml";
  std::ofstream(path) << text;
  return path;
}

TEST(Config, LoadsBaseConfigs) {
  for (auto name : {"encoder", "decoder", "encoder-decoder"}) {
    auto cfg = resolve_config(std::string(STX_SOURCE_DIR) + "/configs/" + name + ".yaml", {});
    EXPECT_EQ(to_string(cfg.model.arch), name);
  }
}

TEST(Config, OverridesApplyInOrder) {
  auto cfg = resolve_config(
      std::string(STX_SOURCE_DIR) + "/configs/encoder-decoder.yaml",
      {"model.scheme=deepnorm", "model.encoder_layers=12", "train.betas=[0.9, 0.999]", "model.scheme=pre"});
  EXPECT_EQ(cfg.model.scheme, Scheme::Pre);
  EXPECT_EQ(cfg.model.encoder_layers, 12);
  EXPECT_DOUBLE_EQ(cfg.train.betas[1], 0.999);
}

TEST(Config, JsonRoundTrip) {
  auto cfg = resolve_config("", {"model.arch=decoder", "model.norm=rmsnorm", "model.norm_eps=1e-6",
                                 "model.sigma_reparam=true", "train.lr=0.00123"});
  auto back = config_from_json(nlohmann::json::parse(config_to_json(cfg).dump()));
  EXPECT_EQ(config_to_json(back), config_to_json(cfg));
  EXPECT_DOUBLE_EQ(back.model.norm_eps, 1e-6);
}

TEST(Config, UnknownKeyNamesItAndListsAllowed) {
  auto msg = error_of([] { resolve_config("", {"model.d_modle=64"}); });
  EXPECT_NE(msg.find("model.d_modle"), std::string::npos) << msg;
  EXPECT_NE(msg.find("d_model"), std::string::npos) << msg;
  msg = error_of([] { load_config_file(write_tmp("unk", "model:\n  layers: 3\n")); });
  EXPECT_NE(msg.find("model.layers"), std::string::npos) << msg;
  msg = error_of([] { load_config_file(write_tmp("sec", "optim:\n  lr: 3\n")); });
  EXPECT_NE(msg.find("optim"), std::string::npos) << msg;
}

TEST(Config, BadValuesAreNamed) {
  struct Bad {
    std::string set, expect;
  } cases[] = {
      {"model.d_model=abc", "model.d_model"},
      {"model.d_model=0", "positive"},
      {"model.d_model=-8", "model.d_model"},
      {"model.n_heads=3", "divide"},
      {"model.scheme=postln", "post | pre | deepnorm"},
      {"model.sigma_reparam=maybe", "true | false"},
      {"model.dropout=1.5", "[0, 1)"},
      {"train.lr=0", "train.lr"},
      {"train.betas=0.9", "two numbers"},
      {"model.pad_id=99999", "model.pad_id"},
      {"model.vocab_size=1e3", "model.vocab_size"},
      {"noequals", "section.key=value"},
  };
  for (auto& c : cases) {
    auto msg = error_of([&] { resolve_config("", {c.set}); });
    EXPECT_NE(msg.find(c.expect), std::string::npos) << c.set << " → " << msg;
  }
}

TEST(Config, InvalidCombinations) {
  auto msg = error_of([] { resolve_config("", {"model.scheme=deepnorm", "model.norm=none"}); });
  EXPECT_NE(msg.find("model.norm"), std::string::npos) << msg;
  msg = error_of([] { resolve_config("", {"model.scheme=pre", "model.norm=none"}); });
  EXPECT_NE(msg.find("needs a norm"), std::string::npos) << msg;
  EXPECT_NO_THROW(resolve_config("", {"model.scheme=post", "model.norm=none", "model.sigma_reparam=true"}));
}

TEST(Config, MalformedYaml) {
  auto msg = error_of([] { load_config_file(write_tmp("bad", "model:\n  d_model: [1, 2\n")); });
  EXPECT_NE(msg.find("not valid YAML"), std::string::npos) << msg;
  msg = error_of([] { load_config_file(write_tmp("list", "- a\n- b\n")); });
  EXPECT_NE(msg.find("sections"), std::string::npos) << msg;
  msg = error_of([] { load_config_file(write_tmp("map", "model:\n  d_model: {a: 1}\n")); });
  EXPECT_NE(msg.find("model.d_model"), std::string::npos) << msg;
  msg = error_of([] { load_config_file("/nonexistent/stx.yaml"); });
  EXPECT_NE(msg.find("cannot open"), std::string::npos) << msg;
}

}  // namespace
}  // namespace stx
