// stx/config/config_file.h — a YAML config file read into `section.key` = value assignments in
// file order, with the file's own checks (config_io.h applies them through the key table):
// exactly one YAML document; sections model, train, data, each a mapping; no section or key
// twice; at least one key set. And how config messages show a value the user wrote.
#pragma once
#include <string>
#include <vector>

namespace stx {

struct ConfigAssignment {
  std::string key;    // "model.d_model"
  std::string value;  // the scalar's text; a list as "a,b"
};

// InputError (one line naming the file) when the path is not a readable regular file, the text
// is not YAML, holds more than one document, repeats a section or key, or sets no key at all.
std::vector<ConfigAssignment> read_config_assignments(const std::string& path);

// `text` as an error message shows it: whole up to 80 characters, else its start and
// "… (N characters)".
std::string shown_value(const std::string& text);

}  // namespace stx
