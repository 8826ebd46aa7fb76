// tests/test_metrics_schema.cpp — the metrics.jsonl reader (report/metrics_schema.h): a real
// run's log reads back, each kind of malformed line is refused with file:line, key and what is
// allowed, docs/metrics.md names exactly the keys the schema knows, and the derived signals
// (report/metrics_signals.h) equal hand-computed values.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <set>

#include "helpers.h"
#include "stx/config/config_io.h"
#include "stx/report/metrics_log.h"
#include "stx/report/metrics_schema.h"
#include "stx/report/metrics_signals.h"
#include "stx/train/trainer.h"

namespace stx {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string error_of_text(const std::string& text) {
  return test::error_of([&] { metrics::parse_metrics(text, "RUN/metrics.jsonl"); });
}

// The top-level keys named in the first column of docs/metrics.md's key tables ("| key |").
std::set<std::string> documented_keys() {
  std::ifstream in(std::string(STX_SOURCE_DIR) + "/docs/metrics.md");
  std::set<std::string> out;
  bool in_keys = false;
  const std::regex name("`([a-z_0-9]+)");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("| key |", 0) == 0) in_keys = true;
    else if (line.rfind("|", 0) != 0) in_keys = false;
    else if (in_keys && line.rfind("|---", 0) != 0) {
      const auto cell = line.substr(1, line.find('|', 1) - 1);
      for (std::sregex_iterator it(cell.begin(), cell.end(), name), end; it != end; ++it) out.insert((*it)[1]);
    }
  }
  return out;
}

TEST(MetricsSchema, AShortRunReadsBackAndEveryKeyItWritesIsDocumented) {
  const auto dir = fs::temp_directory_path() / ("stx_metrics_run_" + std::to_string(getpid()));
  fs::remove_all(dir);
  TrainOptions t;
  t.config = resolve_config(
      std::string(STX_SOURCE_DIR) + "/configs/atlas.yaml",
      {"model.decoder_layers=2", "model.d_model=16", "model.d_ff=32", "model.n_heads=2", "train.max_steps=6",
       "train.warmup_steps=2", "train.log_every=2", "train.eval_every=6", "train.checkpoint_every=6",
       "train.max_tokens=256", "train.valid_sentences=4", "train.probe_sentences=2"});
  t.run_dir = dir.string();
  t.quiet = true;
  ASSERT_EQ(train(t).kind, TrainOutcome::Kind::Finished);
  const auto f = metrics::read_metrics(metrics::path_in(t.run_dir));
  EXPECT_EQ(f.version, metrics::kSchemaVersion);
  EXPECT_EQ(f.records.front().json.value(metrics::key::schema, 0), metrics::kSchemaVersion);
  int training = 0, validation = 0;
  const auto documented = documented_keys();
  for (auto& r : f.records) {
    training += r.training(), validation += r.validation();
    for (auto& [k, v] : r.json.items()) EXPECT_TRUE(documented.count(k)) << "undocumented key " << k;
    if (r.training()) {
      EXPECT_TRUE(std::isfinite(r.loss));
      EXPECT_TRUE(metrics::grad_reach(r)) << "line " << r.line;
      EXPECT_TRUE(metrics::layer_entropy_range(r) && metrics::max_attn_logit(r));
    }
  }
  EXPECT_EQ(training, 3);
  EXPECT_EQ(validation, 1);
  fs::remove_all(dir);
}

TEST(MetricsSchema, TheDocumentNamesExactlyTheKeysTheSchemaKnows) {
  const auto documented = documented_keys();
  const auto known = metrics::known_keys();
  EXPECT_EQ(documented, std::set<std::string>(known.begin(), known.end()));
}

TEST(MetricsSchema, ATornLastLineIsLeftOutAndAFileWithoutSchemaIsVersion1) {
  const auto f =
      metrics::parse_metrics("{\"step\":1,\"loss\":2.5}\n\n{\"step\":2,\"valid_loss\":2}\n{\"step\":3,\"lo", "m");
  ASSERT_EQ(f.records.size(), 2u);
  EXPECT_TRUE(f.torn_tail);
  EXPECT_EQ(f.version, 1);
  EXPECT_EQ(f.records[1].line, 3);  // the empty line counts
  EXPECT_TRUE(f.records[1].validation());
  EXPECT_EQ(*f.records[1].valid_loss, 2.0);
  // A null loss (non-finite) is NaN; steps may fall right after a rollback.
  const auto g = metrics::parse_metrics(
      "{\"step\":10,\"loss\":null}\n{\"step\":11,\"event\":\"divergence\",\"cause\":\"c\",\"action\":\"rollback\"}\n"
      "{\"step\":6,\"loss\":1}\n",
      "m");
  EXPECT_TRUE(std::isnan(g.records[0].loss));
  EXPECT_EQ(g.records[1].action, "rollback");
  EXPECT_EQ(g.records[2].step, 6);
}

TEST(MetricsSchema, EachMalformedLineIsOneErrorNamingFileLineKeyAndWhatIsAllowed) {
  struct Case {
    std::string text, expect;
  };
  const Case cases[] = {
      {"{\"step\":1,\"loss\":1}\nnot json\n", "RUN/metrics.jsonl:2: not JSON; allowed: one JSON object per line"},
      {"[1,2]\n", "RUN/metrics.jsonl:1: not a JSON object"},
      {"{\"step\":1,\"loss\":\"2.5\"}\n", "RUN/metrics.jsonl:1: key 'loss' is a string; allowed: a number, or null"},
      {"{\"step\":1.5,\"loss\":1}\n", "RUN/metrics.jsonl:1: key 'step' is a number (1.5); allowed: a non-negative"},
      {"{\"loss\":1}\n", "RUN/metrics.jsonl:1: key 'step' is null; allowed: a non-negative integer on every line"},
      {"{\"step\":1,\"loss\":1,\"grad_norm_layer\":{\"decoder\":[1,\"x\"]}}\n",
       "RUN/metrics.jsonl:1: key 'grad_norm_layer/decoder/1' is a string; allowed: a number or null"},
      {"{\"step\":1,\"loss\":1,\"grad_norm_layer\":{\"middle\":[1]}}\n",
       "RUN/metrics.jsonl:1: key 'grad_norm_layer' has stack 'middle'; allowed: \"encoder\", \"decoder\""},
      {"{\"step\":1,\"loss\":1,\"attn_entropy\":{\"decoder\":{\"self_attn\":[1]}}}\n",
       "RUN/metrics.jsonl:1: key 'attn_entropy/decoder/self_attn' is an array; allowed: an object"},
      {"{\"step\":1,\"loss\":1,\"grad_norm_clipped\":1}\n", "key 'grad_norm_clipped' is an integer; allowed: true or"},
      {"{\"step\":5,\"loss\":1}\n{\"step\":4,\"loss\":1}\n",
       "RUN/metrics.jsonl:2: key 'step' is 4, below step 5 of line 1; allowed: a step ≥ the line before's"},
      {"{\"step\":5,\"loss\":1,\"schema\":2}\n", "RUN/metrics.jsonl:1: key 'schema' is 2; allowed: 1 … 1"},
      {"{\"step\":5,\"loss\":1}\n{\"step\":6,\"loss\":1,\"schema\":3}\n",
       "RUN/metrics.jsonl:2: key 'schema' is 3; allowed: 1 (the version the file's first line states)"},
      {"{\"step\":5}\n", "RUN/metrics.jsonl:1: no key 'loss', 'valid_loss' or 'event'"},
      {"{\"step\":5,\"loss\":1,\"valid_loss\":1}\n", "RUN/metrics.jsonl:1: keys 'loss' and 'valid_loss' on one line"},
      {"{\"step\":5,\"event\":\"divergence\",\"cause\":\"c\",\"action\":\"retry\"}\n",
       "RUN/metrics.jsonl:1: key 'action' is a string; allowed: \"stop\", \"skip\", \"rollback\""},
      {"{\"step\":5,\"event\":\"divergence\",\"action\":\"stop\"}\n",
       "RUN/metrics.jsonl:1: key 'cause' is null; allowed: a string on every event line"},
  };
  for (auto& c : cases) {
    const auto e = error_of_text(c.text);
    EXPECT_NE(e.find(c.expect), std::string::npos) << "input: " << c.text << "\nerror: " << e;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  }
  EXPECT_NE(test::error_of([] { metrics::read_metrics("/nonexistent/metrics.jsonl"); }).find("cannot read"),
            std::string::npos);
}

TEST(MetricsSchema, TheWriterStatesTheVersionOnItsFirstLineOnly) {
  const auto path = (fs::temp_directory_path() / ("stx_schema_" + std::to_string(getpid()) + ".jsonl")).string();
  fs::remove(path);
  {
    MetricsLog log(path);
    log.write({{"step", 1}, {"loss", 2.0}});
    log.write({{"step", 2}, {"loss", 1.0}});
  }
  const auto f = metrics::read_metrics(path);
  ASSERT_EQ(f.records.size(), 2u);
  EXPECT_EQ(f.records[0].json[metrics::key::schema], metrics::kSchemaVersion);
  EXPECT_FALSE(f.records[1].json.contains(metrics::key::schema));
  fs::remove(path);
}

TEST(MetricsSchema, AResumeAfterARollbackKeepsTheLogAsItWasAtTheCheckpoint) {
  const auto path = (fs::temp_directory_path() / ("stx_rollback_" + std::to_string(getpid()) + ".jsonl")).string();
  fs::remove(path);
  {
    MetricsLog log(path);
    for (int s : {10, 20, 30, 40}) log.write({{"step", s}, {"loss", 1.0}});
    log.write({{"step", 41}, {"event", "divergence"}, {"cause", "non-finite loss"}, {"action", "rollback"}});
    for (int s : {30, 40, 50}) log.write({{"step", s}, {"loss", 2.0}});  // from the checkpoint at 20; saved at 40
  }
  MetricsLog resumed(path, 40);
  EXPECT_EQ(resumed.repair().kept, 7);
  EXPECT_EQ(resumed.repair().after, 1);
  const auto f = metrics::read_metrics(path);
  ASSERT_EQ(f.records.size(), 7u);
  EXPECT_TRUE(f.records[4].is_event());
  EXPECT_EQ(f.records[6].step, 40);
  EXPECT_EQ(f.records[6].loss, 2.0);
  fs::remove(path);
}

TEST(MetricsSignals, DerivedSignalsEqualHandComputedValues) {
  const json line = {{"step", 10},
                     {"loss", 3.0 * std::log(2.0)},
                     {"grad_norm_layer", {{"decoder", {0.1, 0.5, 2.0}}, {"encoder", {4.0, 1.0}}}},
                     {"attn_entropy",
                      {{"decoder",
                        {{"self_attn", {{"mean", {1.5, 3.0}}, {"min_head", {0.2, 2.0}}}},
                         {"encoder_attn", {{"mean", {2.5, 0.7}}, {"min_head", {0.1, 0.6}}}}}}}},
                     {"attn_max_logit", {{"decoder", {{"self_attn", {4.0, 9.5}}, {"encoder_attn", {12.0, nullptr}}}}}},
                     {"ln_input_norm", {{"decoder", {{"final_layer_norm", {1.0, 7.0}}}}}}};
  const auto r = metrics::record_of(line, "hand");
  EXPECT_DOUBLE_EQ(metrics::to_bits(r.loss), 3.0);
  const auto g = metrics::grad_reach(r);
  ASSERT_TRUE(g);
  EXPECT_DOUBLE_EQ(g->ratio(), 0.05);  // the decoder's bottom ÷ top, not the encoder's
  EXPECT_DOUBLE_EQ(g->log10_floored(), std::log10(0.1 / 2.0));
  const auto e = metrics::layer_entropy_range(r);
  ASSERT_TRUE(e);
  EXPECT_DOUBLE_EQ(e->lo, 0.7);  // head means only: min_head's 0.1 is not a layer entropy
  EXPECT_DOUBLE_EQ(e->hi, 3.0);
  EXPECT_DOUBLE_EQ(*metrics::lowest_head_entropy(r), 0.1);
  EXPECT_DOUBLE_EQ(*metrics::max_attn_logit(r), 12.0);
  EXPECT_DOUBLE_EQ(*metrics::max_ln_input(r), 7.0);
  // A bottom norm of exactly 0 (underflowed): ratio 0, log10 floored at the smallest normal float.
  auto zero = line;
  zero["grad_norm_layer"]["decoder"] = {0.0, 0.5, 2.0};
  const auto z = metrics::grad_reach(metrics::record_of(zero, "zero"));
  ASSERT_TRUE(z);
  EXPECT_EQ(z->ratio(), 0.0);
  EXPECT_DOUBLE_EQ(z->log10_floored(), std::log10(std::numeric_limits<float>::min() / 2.0));
  // One decoder layer: its reach is 1; no decoder: the encoder's; no stack, or a top norm of 0: none.
  auto one = line;
  one["grad_norm_layer"]["decoder"] = {0.3};
  EXPECT_DOUBLE_EQ(metrics::grad_reach(metrics::record_of(one, "one"))->ratio(), 1.0);
  one["grad_norm_layer"].erase("decoder");
  EXPECT_DOUBLE_EQ(metrics::grad_reach(metrics::record_of(one, "one"))->ratio(), 4.0);
  one["grad_norm_layer"].erase("encoder");
  EXPECT_FALSE(metrics::grad_reach(metrics::record_of(one, "one")));
  auto flat = line;
  flat["grad_norm_layer"]["decoder"] = {0.3, 0.0};
  EXPECT_FALSE(metrics::grad_reach(metrics::record_of(flat, "flat")));
  const auto bare = metrics::record_of({{"step", 1}, {"loss", 1.0}}, "bare");
  EXPECT_FALSE(metrics::grad_reach(bare) || metrics::layer_entropy_range(bare) || metrics::max_attn_logit(bare));
}

}  // namespace
}  // namespace stx
