// stx/report/metrics_schema.h — the one reader of RUN/metrics.jsonl (docs/metrics.md states the
// schema: its version, the three kinds of line, every key's type). Every consumer (atlas,
// doctor, sweep, collapse, the live table, plots) reads the file through read_metrics and names
// keys through metrics::key, so a key is spelled here and where it is written (train/, probe/).
//
// A line is an event when it has "event", a validation line when it has "valid_loss", else a
// training line ("loss" required). Keys are checked against their documented type; keys the
// schema does not name are kept in Record::json and otherwise ignored. A last line without its
// newline (a run killed mid-write, or a line being written while the file is read) is left out;
// any other line that is not a JSON object, a key of the wrong type, a step below the line
// before (except right after a divergence event whose action is "rollback"), or a schema
// version this build does not read is an InputError naming file:line, the key and what is allowed.
#pragma once
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace stx::metrics {

// The version this build writes and the newest it reads. A file states it with "schema" on its
// first line (any line may repeat it; all must agree); a file without it is version 1.
inline constexpr int kSchemaVersion = 1;

namespace key {
inline constexpr const char* schema = "schema";
inline constexpr const char* step = "step";
// training lines
inline constexpr const char* loss = "loss";
inline constexpr const char* nll = "nll";
inline constexpr const char* ppl = "ppl";
inline constexpr const char* lr = "lr";
inline constexpr const char* tokens_per_s = "tokens_per_s";
inline constexpr const char* sentences = "sentences";
inline constexpr const char* epoch = "epoch";
inline constexpr const char* grad_norm = "grad_norm";
inline constexpr const char* grad_norm_clipped = "grad_norm_clipped";
inline constexpr const char* grad_norm_layer = "grad_norm_layer";
inline constexpr const char* grad_norm_sublayer = "grad_norm_sublayer";
inline constexpr const char* grad_norm_w2 = "grad_norm_w2";
inline constexpr const char* delta_f = "delta_f";
inline constexpr const char* delta_f_step = "delta_f_step";
inline constexpr const char* ln_input_norm = "ln_input_norm";
inline constexpr const char* attn_entropy = "attn_entropy";
inline constexpr const char* attn_sigma_kq = "attn_sigma_kq";
inline constexpr const char* attn_entropy_bound = "attn_entropy_bound";
inline constexpr const char* attn_max_logit = "attn_max_logit";
inline constexpr const char* log_z = "log_z";
inline constexpr const char* sigma = "sigma";
inline constexpr const char* gamma = "gamma";
inline constexpr const char* param_norm = "param_norm";
inline constexpr const char* peak_rss_mb = "peak_rss_mb";
inline constexpr const char* doctor = "doctor";
// validation lines
inline constexpr const char* valid_loss = "valid_loss";
inline constexpr const char* valid_nll = "valid_nll";
inline constexpr const char* valid_ppl = "valid_ppl";
inline constexpr const char* valid_bleu = "valid_bleu";
// event lines
inline constexpr const char* event = "event";
inline constexpr const char* cause = "cause";
inline constexpr const char* action = "action";
}  // namespace key

// Names inside the nested keys.
inline constexpr const char* kEncoder = "encoder";
inline constexpr const char* kDecoder = "decoder";
inline constexpr const char* kMean = "mean";              // attn_entropy, attn_sigma_kq, attn_entropy_bound, log_z
inline constexpr const char* kMinHead = "min_head";       // attn_entropy, attn_entropy_bound
inline constexpr const char* kMaxHead = "max_head";       // attn_sigma_kq
inline constexpr const char* kMax = "max";                // log_z
inline constexpr const char* kDivergence = "divergence";  // the one event

enum class Kind { Training, Validation, Event };

// One line. The scalars below are read once here; nested keys (per layer, per head) are read
// from `json` (metrics_signals.h derives the signals from them). nullopt: absent, or null (a
// non-finite value is logged as null).
struct Record {
  Kind kind = Kind::Training;
  int64_t step = 0;
  int64_t line = 0;  // 1-based line number in the file
  // training: "loss" in nats per token, NaN where it was not finite
  double loss = NAN;
  std::optional<double> nll, lr, grad_norm, delta_f, delta_f_step, param_norm;
  std::optional<double> log_z_mean, log_z_max;  // log_z.mean, log_z.max
  // validation
  std::optional<double> valid_loss, valid_nll, valid_bleu;
  // event: "divergence", the guard's cause, and "stop", "skip" or "rollback"
  std::string event, cause, action;
  nlohmann::json json;  // the whole line

  bool training() const { return kind == Kind::Training; }
  bool validation() const { return kind == Kind::Validation; }
  bool is_event() const { return kind == Kind::Event; }
  // The number at a JSON pointer into the line ("/attn_entropy/decoder/self_attn/mean/0");
  // nullopt when absent or null.
  std::optional<double> at(const std::string& pointer) const;
};

struct File {
  std::string path;
  int version = 1;
  std::vector<Record> records;
  bool torn_tail = false;  // the last line had no newline and was left out
};

// Every key the schema names (metrics::key), in docs/metrics.md's order.
std::vector<std::string> known_keys();

// RUN/metrics.jsonl of a run directory.
std::string path_in(const std::string& run_dir);

// Reads and checks a metrics file; InputError when it cannot be read or a line breaks the schema.
File read_metrics(const std::string& path);
// The same on text already read; `name` is the file named in errors.
File parse_metrics(const std::string& text, const std::string& name);
// The records of a run directory: empty when it has no metrics.jsonl, InputError as above.
std::vector<Record> run_records(const std::string& run_dir);

// One line given as JSON (the trainer's on_log hook sees the line before it is written; tests
// build lines by hand): the same checks, `where` naming it in errors.
Record record_of(const nlohmann::json& j, const std::string& where, int64_t line = 0);
// Lines given as JSON, checked as one file.
std::vector<Record> records_of(const std::vector<nlohmann::json>& lines, const std::string& name = "metrics");

}  // namespace stx::metrics
