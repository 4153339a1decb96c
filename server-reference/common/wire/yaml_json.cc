// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/wire/yaml_json.h"

#include <yaml.h>

#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <regex>

namespace bai::server {

using nlohmann::json;

namespace {

bool OneOf(std::string_view s, std::initializer_list<std::string_view> set) {
  for (auto v : set) {
    if (s == v) return true;
  }
  return false;
}

std::string WithoutUnderscores(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '_') out.push_back(c);
  }
  return out;
}

// A plain scalar's value under PyYAML's resolver (YAML 1.1, without sexagesimals and
// timestamps, which stay strings).
json Resolve(std::string_view s) {
  if (OneOf(s, {"", "~", "null", "Null", "NULL"})) return nullptr;
  if (OneOf(s, {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON"})) return true;
  if (OneOf(s, {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF"})) return false;
  static std::regex const kInt("[-+]?(0b[01_]+|0x[0-9a-fA-F_]+|0[0-7_]+|0|[1-9][0-9_]*)");
  static std::regex const kFloat(
      "[-+]?([0-9][0-9_]*\\.[0-9_]*([eE][-+][0-9]+)?|\\.[0-9_]+([eE][-+][0-9]+)?)");
  std::string text(s);
  if (std::regex_match(text, kInt)) {
    std::string digits = WithoutUnderscores(text);
    bool negative = digits[0] == '-';
    if (digits[0] == '-' || digits[0] == '+') digits.erase(0, 1);
    int base = 10;
    if (digits.rfind("0b", 0) == 0) {
      base = 2;
      digits.erase(0, 2);
    } else if (digits.rfind("0x", 0) == 0) {
      base = 16;
      digits.erase(0, 2);
    } else if (digits.size() > 1 && digits[0] == '0') {
      base = 8;
    }
    if (digits.empty()) return text;
    errno = 0;
    char* end = nullptr;
    unsigned long long magnitude = std::strtoull(digits.c_str(), &end, base);
    if (errno == 0 && *end == '\0') {
      if (!negative) return magnitude;
      if (magnitude <= static_cast<unsigned long long>(std::numeric_limits<std::int64_t>::max())) {
        return -static_cast<std::int64_t>(magnitude);
      }
    }
    return std::strtod(text.c_str(), nullptr);  // too large: as PyYAML's big int would print
  }
  if (std::regex_match(text, kFloat)) return std::strtod(WithoutUnderscores(text).c_str(), nullptr);
  return text;  // also .inf and .nan, which JSON cannot hold
}

struct Loader {
  yaml_document_t* doc;
  std::size_t nodes = 0;

  StatusOr<json> Convert(yaml_node_t* node, int depth) {
    if (++nodes > kMaxYamlNodes) {
      return Status(StatusCode::kInvalidArgument, "YAML too large: more than " +
                                                      std::to_string(kMaxYamlNodes) +
                                                      " nodes (with aliases expanded)");
    }
    if (depth > 128) return Status(StatusCode::kInvalidArgument, "YAML nested too deeply");
    switch (node->type) {
      case YAML_SCALAR_NODE: {
        std::string value(reinterpret_cast<char const*>(node->data.scalar.value),
                          node->data.scalar.length);
        if (node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) return Resolve(value);
        return json(value);
      }
      case YAML_SEQUENCE_NODE: {
        json out = json::array();
        for (auto* item = node->data.sequence.items.start; item < node->data.sequence.items.top;
             ++item) {
          auto v = Convert(yaml_document_get_node(doc, *item), depth + 1);
          if (!v.ok()) return v;
          out.push_back(*std::move(v));
        }
        return out;
      }
      case YAML_MAPPING_NODE: {
        json out = json::object();
        for (auto* pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top;
             ++pair) {
          auto* key = yaml_document_get_node(doc, pair->key);
          if (key->type != YAML_SCALAR_NODE) {
            return Status(StatusCode::kInvalidArgument,
                          "YAML mapping keys must be scalars (line " +
                              std::to_string(key->start_mark.line + 1) + ")");
          }
          std::string name(reinterpret_cast<char const*>(key->data.scalar.value),
                           key->data.scalar.length);
          auto v = Convert(yaml_document_get_node(doc, pair->value), depth + 1);
          if (!v.ok()) return v;
          out[name] = *std::move(v);
        }
        return out;
      }
      case YAML_NO_NODE:
        break;
    }
    return json(nullptr);
  }
};

// Plain (unquoted) text reads back as the same string.
bool PlainSafe(std::string const& s) {
  if (s.empty() || s.front() == ' ' || s.back() == ' ' || s.back() == ':') return false;
  if (!Resolve(s).is_string()) return false;
  unsigned char first = static_cast<unsigned char>(s.front());
  if (!(std::isalnum(first) || first == '_' || first == '/' || first == '.' || first >= 0x80)) {
    return false;
  }
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x20 || c == 0x7f) return false;
    if (c == '#' || c == ',' || c == '[' || c == ']' || c == '{' || c == '}') return false;
    if (c == ':' && i + 1 < s.size() && s[i + 1] == ' ') return false;
  }
  return true;
}

// A multi-line string as a literal block: only when every character reads back as itself.
bool LiteralSafe(std::string const& s) {
  if (s.find('\n') == std::string::npos || s.front() == ' ' || s.front() == '\n') return false;
  for (unsigned char c : s) {
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

std::string Scalar(json const& v) {
  if (v.is_string()) {
    auto const& s = v.get_ref<std::string const&>();
    return PlainSafe(s) ? s : v.dump();  // JSON's double-quoted form is YAML's too
  }
  std::string text = v.dump();  // null, true/false, numbers
  if (v.is_number_float() && text.find('.') == std::string::npos) {
    // "1e+20" would read back as a string: YAML 1.1 floats have a dot.
    auto e = text.find_first_of("eE");
    text.insert(e == std::string::npos ? text.size() : e, ".0");
  }
  return text;
}

void Emit(json const& v, std::size_t indent, std::string& out);

// What follows "key:" or "- ": the rest of the line, and what comes below it.
void EmitValue(json const& v, std::size_t indent, std::string& out) {
  if (v.is_object() && !v.empty()) {
    out += '\n';
    Emit(v, indent + 2, out);
  } else if (v.is_array() && !v.empty()) {
    out += '\n';
    Emit(v, indent + 2, out);
  } else if (v.is_string() && LiteralSafe(v.get_ref<std::string const&>())) {
    auto const& s = v.get_ref<std::string const&>();
    std::size_t trailing = 0;
    while (trailing < s.size() && s[s.size() - 1 - trailing] == '\n') ++trailing;
    out += trailing == 0 ? " |-\n" : trailing == 1 ? " |\n" : " |+\n";
    std::string pad(indent + 2, ' ');
    std::size_t start = 0;
    std::string body = s.substr(0, s.size() - trailing);
    while (start <= body.size()) {
      auto nl = body.find('\n', start);
      std::string line = body.substr(start, nl == std::string::npos ? nl : nl - start);
      out += line.empty() ? "\n" : pad + line + "\n";
      if (nl == std::string::npos) break;
      start = nl + 1;
    }
    for (std::size_t i = 1; i < trailing; ++i) out += '\n';
  } else {
    out += ' ';
    out += v.is_object() ? "{}" : v.is_array() ? "[]" : Scalar(v);
    out += '\n';
  }
}

void Emit(json const& v, std::size_t indent, std::string& out) {
  std::string pad(indent, ' ');
  if (v.is_object()) {
    if (v.empty()) {
      out += pad + "{}\n";
      return;
    }
    for (auto const& [key, value] : v.items()) {
      out += pad + Scalar(json(key)) + ":";
      EmitValue(value, indent, out);
    }
  } else if (v.is_array()) {
    if (v.empty()) {
      out += pad + "[]\n";
      return;
    }
    for (auto const& item : v) {
      if ((item.is_object() || item.is_array()) && !item.empty()) {
        // The item's first line goes after the dash.
        std::string child;
        Emit(item, indent + 2, child);
        out += pad + "- " + child.substr(indent + 2);
      } else {
        out += pad + "-";
        EmitValue(item, indent, out);
      }
    }
  } else {
    std::string line;
    EmitValue(v, indent, line);
    out += pad + line.substr(1);  // a document that is one scalar
  }
}

}  // namespace

StatusOr<std::vector<json>> ParseYamlStream(std::string_view text) {
  yaml_parser_t parser;
  if (!yaml_parser_initialize(&parser)) return Status(StatusCode::kInternal, "libyaml: no memory");
  yaml_parser_set_input_string(&parser, reinterpret_cast<unsigned char const*>(text.data()),
                               text.size());
  std::vector<json> docs;
  std::size_t nodes = 0;
  Status error;
  for (;;) {
    yaml_document_t doc;
    if (!yaml_parser_load(&parser, &doc)) {
      std::string what = parser.problem ? parser.problem : "malformed YAML";
      if (parser.context) what = std::string(parser.context) + ": " + what;
      error = Status(StatusCode::kInvalidArgument,
                     "YAML " + what + " (line " + std::to_string(parser.problem_mark.line + 1) +
                         ", column " + std::to_string(parser.problem_mark.column + 1) + ")");
      break;
    }
    yaml_node_t* root = yaml_document_get_root_node(&doc);
    if (root == nullptr) {  // the end of the stream
      yaml_document_delete(&doc);
      break;
    }
    Loader loader{&doc, nodes};
    auto value = loader.Convert(root, 0);
    nodes = loader.nodes;
    yaml_document_delete(&doc);
    if (!value.ok()) {
      error = value.status();
      break;
    }
    docs.push_back(*std::move(value));
  }
  yaml_parser_delete(&parser);
  if (!error.ok()) return error;
  return docs;
}

std::string ToYaml(json const& value) {
  std::string out;
  Emit(value, 0, out);
  return out;
}

}  // namespace bai::server
