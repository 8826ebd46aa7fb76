// stx/report/metrics_schema.cpp — see metrics_schema.h.
#include "stx/report/metrics_schema.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "stx/core/error.h"
#include "stx/core/run_dir.h"

namespace stx::metrics {

namespace {

using nlohmann::json;

// The shape of a key's value (docs/metrics.md, "Types"). Leaves of the nested shapes are numbers
// or null; the first level of the per-layer shapes is the stack ("encoder", "decoder").
enum class Shape {
  Count,         // a non-negative integer
  Number,        // a number, or null for a non-finite value
  Bool,          // true or false
  Text,          // a string
  Stack,         // {stack: [l]}
  StackName,     // {stack: {name: [l]}}
  StackNameOf,   // {stack: {name: {field: [l]}}}
  NamedNumbers,  // {name: number}
  Object,        // any object (read by its own reader: "doctor", docs/doctor.md)
};

struct Spec {
  const char* name;
  Shape shape;
};

constexpr Spec kSpecs[] = {
    {key::schema, Shape::Count},
    {key::step, Shape::Count},
    {key::loss, Shape::Number},
    {key::nll, Shape::Number},
    {key::ppl, Shape::Number},
    {key::lr, Shape::Number},
    {key::tokens_per_s, Shape::Number},
    {key::sentences, Shape::Count},
    {key::epoch, Shape::Count},
    {key::grad_norm, Shape::Number},
    {key::grad_norm_clipped, Shape::Bool},
    {key::grad_norm_layer, Shape::Stack},
    {key::grad_norm_sublayer, Shape::StackName},
    {key::grad_norm_w2, Shape::Stack},
    {key::delta_f, Shape::Number},
    {key::delta_f_step, Shape::Number},
    {key::ln_input_norm, Shape::StackName},
    {key::attn_entropy, Shape::StackNameOf},
    {key::attn_sigma_kq, Shape::StackNameOf},
    {key::attn_entropy_bound, Shape::StackNameOf},
    {key::attn_max_logit, Shape::StackName},
    {key::log_z, Shape::NamedNumbers},
    {key::sigma, Shape::NamedNumbers},
    {key::gamma, Shape::NamedNumbers},
    {key::param_norm, Shape::Number},
    {key::peak_rss_mb, Shape::Number},
    {key::doctor, Shape::Object},
    {key::valid_loss, Shape::Number},
    {key::valid_nll, Shape::Number},
    {key::valid_ppl, Shape::Number},
    {key::valid_bleu, Shape::Number},
    {key::event, Shape::Text},
    {key::cause, Shape::Text},
    {key::action, Shape::Text},
};

const char* allowed(Shape s) {
  switch (s) {
    case Shape::Count: return "a non-negative integer";
    case Shape::Number: return "a number, or null for a non-finite value";
    case Shape::Bool: return "true or false";
    case Shape::Text: return "a string";
    case Shape::Stack: return "an object {\"encoder\"|\"decoder\": [number or null per layer]}";
    case Shape::StackName: return "an object {\"encoder\"|\"decoder\": {name: [number or null per layer]}}";
    case Shape::StackNameOf: return "an object {\"encoder\"|\"decoder\": {name: {field: [number or null per layer]}}}";
    case Shape::NamedNumbers: return "an object {name: number or null}";
    case Shape::Object: return "an object";
  }
  return "";
}

std::string what(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return v.get<int64_t>() < 0 ? "negative (" + v.dump() + ")" : "an integer";
    case json::value_t::number_float: return "a number (" + v.dump() + ")";
    default: return "not a value";
  }
}

struct Checker {
  const std::string& where;  // "FILE:LINE"

  [[noreturn]] void fail(const std::string& path, const json& v, const char* ok) const {
    throw InputError(fmt::format("{}: key '{}' is {}; allowed: {} (docs/metrics.md)", where, path, what(v), ok));
  }

  // Leaves of the nested shapes: number or null.
  void layers(const json& v, const std::string& path, Shape s) const {
    if (!v.is_array()) fail(path, v, allowed(s));
    for (size_t l = 0; l < v.size(); ++l)
      if (!v[l].is_number() && !v[l].is_null()) fail(path + "/" + std::to_string(l), v[l], "a number or null");
  }
  void nested(const json& v, const std::string& path, int depth, Shape s) const {
    if (depth == 0) return layers(v, path, s);
    if (!v.is_object()) fail(path, v, allowed(s));
    for (auto& [k, x] : v.items()) nested(x, path + "/" + k, depth - 1, s);
  }

  void check(const json& v, const char* name, Shape s) const {
    switch (s) {
      case Shape::Count:
        if (!v.is_number_integer() || v.get<int64_t>() < 0) fail(name, v, allowed(s));
        return;
      case Shape::Number:
        if (!v.is_number() && !v.is_null()) fail(name, v, allowed(s));
        return;
      case Shape::Bool:
        if (!v.is_boolean()) fail(name, v, allowed(s));
        return;
      case Shape::Text:
        if (!v.is_string()) fail(name, v, allowed(s));
        return;
      case Shape::NamedNumbers:
        if (!v.is_object()) fail(name, v, allowed(s));
        for (auto& [k, x] : v.items())
          if (!x.is_number() && !x.is_null()) fail(std::string(name) + "/" + k, x, "a number or null");
        return;
      case Shape::Object:
        if (!v.is_object()) fail(name, v, allowed(s));
        return;
      default: break;
    }
    // The per-layer shapes: stacks first.
    if (!v.is_object()) fail(name, v, allowed(s));
    const int depth = s == Shape::Stack ? 0 : s == Shape::StackName ? 1 : 2;
    for (auto& [stack, x] : v.items()) {
      if (stack != kEncoder && stack != kDecoder)
        throw InputError(fmt::format("{}: key '{}' has stack '{}'; allowed: \"encoder\", \"decoder\" (docs/metrics.md)",
                                     where, name, stack));
      nested(x, std::string(name) + "/" + stack, depth, s);
    }
  }
};

std::optional<double> number(const json& j, const char* k) {
  auto it = j.find(k);
  if (it == j.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

std::vector<std::pair<int64_t, std::string>> lines_of(const std::string& text, bool& torn) {
  std::vector<std::pair<int64_t, std::string>> out;
  size_t start = 0;
  int64_t n = 0;
  torn = false;
  for (size_t nl; start < text.size(); start = nl + 1) {
    nl = text.find('\n', start);
    ++n;
    if (nl == std::string::npos) {
      torn = true;  // no newline: being written, or cut by a crash
      break;
    }
    if (nl > start) out.emplace_back(n, text.substr(start, nl - start));
  }
  return out;
}

// The order of a file's lines: steps never decrease, except right after a rollback.
struct Order {
  const std::string& name;
  int version = 1;
  const Record* prev = nullptr;

  void add(const Record& r) {
    const std::string where = fmt::format("{}:{}", name, r.line);
    if (auto it = r.json.find(key::schema); it != r.json.end()) {
      const int v = it->get<int>();
      if (!prev && (v < 1 || v > kSchemaVersion))
        throw InputError(fmt::format("{}: key 'schema' is {}; allowed: 1 … {} (the versions this stx reads)", where, v,
                                     kSchemaVersion));
      if (!prev) version = v;
      else if (v != version)
        throw InputError(fmt::format("{}: key 'schema' is {}; allowed: {} (the version the file's first line states)",
                                     where, v, version));
    }
    if (prev && r.step < prev->step && !(prev->is_event() && prev->action == "rollback"))
      throw InputError(fmt::format(
          "{}: key 'step' is {}, below step {} of line {}; allowed: a step ≥ the line before's (lower only right "
          "after a divergence event with action \"rollback\")",
          where, r.step, prev->step, prev->line));
    prev = &r;
  }
};

}  // namespace

std::optional<double> Record::at(const std::string& pointer) const {
  const json::json_pointer p(pointer);
  if (!json.contains(p) || !json[p].is_number()) return std::nullopt;
  return json[p].get<double>();
}

Record record_of(const json& j, const std::string& where, int64_t line) {
  if (!j.is_object())
    throw InputError(fmt::format("{}: not a JSON object; allowed: one JSON object per line (docs/metrics.md)", where));
  const Checker c{where};
  for (auto& s : kSpecs)
    if (auto it = j.find(s.name); it != j.end()) c.check(*it, s.name, s.shape);
  Record r;
  r.line = line;
  if (!j.contains(key::step)) c.fail(key::step, json(), "a non-negative integer on every line");
  r.step = j[key::step].get<int64_t>();
  r.json = j;
  if (j.contains(key::event)) {
    r.kind = Kind::Event;
    for (const char* k : {key::cause, key::action})
      if (!j.contains(k)) c.fail(k, json(), "a string on every event line");
    r.event = j[key::event].get<std::string>(), r.cause = j[key::cause].get<std::string>();
    r.action = j[key::action].get<std::string>();
    if (r.event != kDivergence) c.fail(key::event, j[key::event], "\"divergence\"");
    if (r.action != "stop" && r.action != "skip" && r.action != "rollback")
      c.fail(key::action, j[key::action], "\"stop\", \"skip\", \"rollback\"");
  } else if (j.contains(key::valid_loss)) {
    r.kind = Kind::Validation;
    if (j.contains(key::loss))
      throw InputError(
          fmt::format("{}: keys 'loss' and 'valid_loss' on one line; allowed: a training line (loss) "
                      "or a validation line (valid_loss) (docs/metrics.md)",
                      where));
    r.valid_loss = number(j, key::valid_loss), r.valid_nll = number(j, key::valid_nll);
    r.valid_bleu = number(j, key::valid_bleu);
  } else {
    r.kind = Kind::Training;
    if (!j.contains(key::loss))
      throw InputError(
          fmt::format("{}: no key 'loss', 'valid_loss' or 'event'; allowed: a training line (loss), a "
                      "validation line (valid_loss) or an event line (event) (docs/metrics.md)",
                      where));
    r.loss = number(j, key::loss).value_or(NAN);
    r.nll = number(j, key::nll), r.lr = number(j, key::lr), r.grad_norm = number(j, key::grad_norm);
    r.delta_f = number(j, key::delta_f), r.delta_f_step = number(j, key::delta_f_step);
    r.param_norm = number(j, key::param_norm);
    if (auto z = j.find(key::log_z); z != j.end()) r.log_z_mean = number(*z, kMean), r.log_z_max = number(*z, kMax);
  }
  return r;
}

std::vector<Record> records_of(const std::vector<json>& lines, const std::string& name) {
  std::vector<Record> out;
  out.reserve(lines.size());
  for (size_t i = 0; i < lines.size(); ++i)
    out.push_back(record_of(lines[i], fmt::format("{}:{}", name, i + 1), static_cast<int64_t>(i + 1)));
  Order order{name};
  for (auto& r : out) order.add(r);
  return out;
}

File parse_metrics(const std::string& text, const std::string& name) {
  File f;
  f.path = name;
  const auto lines = lines_of(text, f.torn_tail);
  f.records.reserve(lines.size());
  for (auto& [n, s] : lines) {
    auto j = json::parse(s, nullptr, /*allow_exceptions=*/false);
    const auto where = fmt::format("{}:{}", name, n);
    if (j.is_discarded())
      throw InputError(fmt::format("{}: not JSON; allowed: one JSON object per line (docs/metrics.md)", where));
    f.records.push_back(record_of(j, where, n));
  }
  Order order{name};
  for (auto& r : f.records) order.add(r);
  f.version = order.version;
  return f;
}

File read_metrics(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot read " + path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return parse_metrics(text, path);
}

std::vector<std::string> known_keys() {
  std::vector<std::string> out;
  for (auto& s : kSpecs) out.emplace_back(s.name);
  return out;
}

std::string path_in(const std::string& run_dir) { return (std::filesystem::path(run_dir) / RunDir::kMetrics).string(); }

std::vector<Record> run_records(const std::string& run_dir) {
  const auto p = path_in(run_dir);
  if (!std::filesystem::exists(p)) return {};
  return read_metrics(p).records;
}

}  // namespace stx::metrics
