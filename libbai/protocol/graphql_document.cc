// SPDX-License-Identifier: Apache-2.0
// Lexer and recursive-descent parser for executable GraphQL documents (spec §2). Recursion is
// bounded by Limits::max_depth, so no document can exhaust the stack.
#include "libbai/protocol/graphql_document.h"

#include "libbai/util/json_writer.h"

#include <cstdint>
#include <utility>

namespace bai::graphql {
namespace {

enum class Tok { kEnd, kPunct, kName, kInt, kFloat, kString };

struct Token {
  Tok kind = Tok::kEnd;
  std::string text;  ///< punctuator, name, number literal, or decoded string
  Location location;
};

bool IsNameStart(char c) { return c == '_' || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }
bool IsNameChar(char c) { return IsNameStart(c) || (c >= '0' && c <= '9'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// The value of a block string (spec: BlockStringValue): common indentation removed from all
// lines but the first, leading and trailing blank lines dropped, lines joined with \n.
std::string BlockStringValue(std::string_view raw) {
  std::vector<std::string_view> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (raw[i] == '\n' || raw[i] == '\r') {
      lines.push_back(raw.substr(start, i - start));
      if (raw[i] == '\r' && i + 1 < raw.size() && raw[i + 1] == '\n') ++i;
      start = i + 1;
    }
  }
  lines.push_back(raw.substr(start));
  auto indent_of = [](std::string_view line) {
    std::size_t n = 0;
    while (n < line.size() && (line[n] == ' ' || line[n] == '\t')) ++n;
    return n;
  };
  std::optional<std::size_t> common;
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto n = indent_of(lines[i]);
    if (n < lines[i].size() && (!common || n < *common)) common = n;
  }
  if (common) {
    for (std::size_t i = 1; i < lines.size(); ++i) {
      lines[i].remove_prefix(std::min(*common, lines[i].size()));
    }
  }
  auto blank = [&](std::string_view line) { return indent_of(line) == line.size(); };
  std::size_t first = 0;
  std::size_t last = lines.size();
  while (first < last && blank(lines[first])) ++first;
  while (last > first && blank(lines[last - 1])) --last;
  std::string out;
  for (std::size_t i = first; i < last; ++i) {
    if (i > first) out.push_back('\n');
    out.append(lines[i]);
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(source) {
    if (src_.substr(0, 3) == "\xEF\xBB\xBF") pos_ = 3;  // a byte order mark is ignored
  }

  /// The next token, or an error.
  std::optional<Error> Next(Token& t) {
    SkipIgnored();
    t = Token{};
    t.location = Here();
    if (pos_ >= src_.size()) return std::nullopt;
    char c = src_[pos_];
    if (c == '.') {
      if (src_.substr(pos_, 3) != "...") return Fail("Unexpected '.'; did you mean '...'?");
      pos_ += 3;
      t.kind = Tok::kPunct;
      t.text = "...";
      return std::nullopt;
    }
    if (std::string_view("!$&()[]{}:=@|").find(c) != std::string_view::npos) {
      ++pos_;
      t.kind = Tok::kPunct;
      t.text = std::string(1, c);
      return std::nullopt;
    }
    if (IsNameStart(c)) {
      std::size_t start = pos_;
      while (pos_ < src_.size() && IsNameChar(src_[pos_])) ++pos_;
      t.kind = Tok::kName;
      t.text = std::string(src_.substr(start, pos_ - start));
      return std::nullopt;
    }
    if (c == '-' || IsDigit(c)) return Number(t);
    if (c == '"') return src_.substr(pos_, 3) == "\"\"\"" ? BlockString(t) : String(t);
    return Fail(c >= 0x20 && c < 0x7F ? std::string("Unexpected character '") + c + "'"
                                      : "Unexpected character");
  }

 private:
  Location Here() const { return {line_, static_cast<int>(pos_ - line_start_) + 1}; }
  std::optional<Error> Fail(std::string message) const {
    return Error{"Syntax Error: " + std::move(message), {Here()}};
  }
  void NewLine(std::size_t next) {
    ++line_;
    line_start_ = next;
  }
  // Whitespace, line terminators, commas and comments.
  void SkipIgnored() {
    while (pos_ < src_.size()) {
      char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == ',') {
        ++pos_;
      } else if (c == '\n') {
        NewLine(++pos_);
      } else if (c == '\r') {
        ++pos_;
        if (pos_ < src_.size() && src_[pos_] == '\n') ++pos_;
        NewLine(pos_);
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n' && src_[pos_] != '\r') ++pos_;
      } else {
        return;
      }
    }
  }
  std::optional<Error> Number(Token& t) {
    std::size_t start = pos_;
    if (src_[pos_] == '-') ++pos_;
    if (pos_ >= src_.size() || !IsDigit(src_[pos_])) return Fail("Invalid number");
    if (src_[pos_] == '0' && pos_ + 1 < src_.size() && IsDigit(src_[pos_ + 1])) {
      return Fail("Invalid number, unexpected digit after 0");
    }
    while (pos_ < src_.size() && IsDigit(src_[pos_])) ++pos_;
    bool is_float = false;
    if (pos_ < src_.size() && src_[pos_] == '.') {
      is_float = true;
      ++pos_;
      if (pos_ >= src_.size() || !IsDigit(src_[pos_])) return Fail("Invalid number");
      while (pos_ < src_.size() && IsDigit(src_[pos_])) ++pos_;
    }
    if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
      is_float = true;
      ++pos_;
      if (pos_ < src_.size() && (src_[pos_] == '+' || src_[pos_] == '-')) ++pos_;
      if (pos_ >= src_.size() || !IsDigit(src_[pos_])) return Fail("Invalid number");
      while (pos_ < src_.size() && IsDigit(src_[pos_])) ++pos_;
    }
    if (pos_ < src_.size() && (IsNameStart(src_[pos_]) || src_[pos_] == '.')) {
      return Fail("Invalid number, expected digit but got '" + std::string(1, src_[pos_]) + "'");
    }
    t.kind = is_float ? Tok::kFloat : Tok::kInt;
    t.text = std::string(src_.substr(start, pos_ - start));
    return std::nullopt;
  }
  std::optional<Error> Hex4(std::uint32_t& out) {
    out = 0;
    for (int i = 0; i < 4; ++i, ++pos_) {
      if (pos_ >= src_.size()) return Fail("Invalid Unicode escape sequence");
      char h = src_[pos_];
      int v = IsDigit(h)               ? h - '0'
              : (h >= 'a' && h <= 'f') ? h - 'a' + 10
              : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                       : -1;
      if (v < 0) return Fail("Invalid Unicode escape sequence");
      out = out * 16 + static_cast<std::uint32_t>(v);
    }
    return std::nullopt;
  }
  std::optional<Error> Escape(std::string& out) {
    ++pos_;  // the backslash
    if (pos_ >= src_.size()) return Fail("Unterminated string");
    char e = src_[pos_++];
    switch (e) {
      case '"':
        out.push_back('"');
        return std::nullopt;
      case '\\':
        out.push_back('\\');
        return std::nullopt;
      case '/':
        out.push_back('/');
        return std::nullopt;
      case 'b':
        out.push_back('\b');
        return std::nullopt;
      case 'f':
        out.push_back('\f');
        return std::nullopt;
      case 'n':
        out.push_back('\n');
        return std::nullopt;
      case 'r':
        out.push_back('\r');
        return std::nullopt;
      case 't':
        out.push_back('\t');
        return std::nullopt;
      case 'u':
        break;
      default:
        return Fail("Invalid character escape sequence: \\" + std::string(1, e));
    }
    std::uint32_t cp = 0;
    if (auto err = Hex4(cp)) return err;
    if (cp >= 0xD800 && cp <= 0xDBFF) {  // a surrogate pair's first half
      std::uint32_t low = 0;
      if (src_.substr(pos_, 2) != "\\u") return Fail("Invalid Unicode escape sequence");
      pos_ += 2;
      if (auto err = Hex4(low)) return err;
      if (low < 0xDC00 || low > 0xDFFF) return Fail("Invalid Unicode escape sequence");
      cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
    } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
      return Fail("Invalid Unicode escape sequence");
    }
    internal::AppendUtf8(out, cp);
    return std::nullopt;
  }
  std::optional<Error> String(Token& t) {
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= src_.size()) return Fail("Unterminated string");
      char c = src_[pos_];
      if (c == '"') break;
      if (c == '\n' || c == '\r') return Fail("Unterminated string");
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t') {
        return Fail("Invalid character within String");
      }
      if (c == '\\') {
        if (auto err = Escape(out)) return err;
        continue;
      }
      out.push_back(c);
      ++pos_;
    }
    ++pos_;
    t.kind = Tok::kString;
    t.text = std::move(out);
    return std::nullopt;
  }
  std::optional<Error> BlockString(Token& t) {
    pos_ += 3;
    std::string raw;
    while (true) {
      if (pos_ >= src_.size()) return Fail("Unterminated string");
      if (src_.substr(pos_, 3) == "\"\"\"") break;
      if (src_.substr(pos_, 4) == "\\\"\"\"") {
        raw += "\"\"\"";
        pos_ += 4;
        continue;
      }
      char c = src_[pos_];
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
        return Fail("Invalid character within String");
      }
      raw.push_back(c);
      ++pos_;
      if (c == '\n' || (c == '\r' && (pos_ >= src_.size() || src_[pos_] != '\n'))) NewLine(pos_);
    }
    pos_ += 3;
    t.kind = Tok::kString;
    t.text = BlockStringValue(raw);
    return std::nullopt;
  }

  std::string_view src_;
  std::size_t pos_ = 0;
  int line_ = 1;
  std::size_t line_start_ = 0;
};

class Parser {
 public:
  Parser(std::string_view source, Limits const& limits) : lexer_(source), limits_(limits) {}

  ParseResult Run() {
    ParseResult r;
    Advance();
    if (!error_ && cur_.kind == Tok::kEnd) Fail("Syntax Error: Unexpected <EOF>.");
    while (!error_ && cur_.kind != Tok::kEnd) Definition(r.document);
    if (error_) r.error = std::move(error_);
    return r;
  }

 private:
  void Fail(std::string message, Location at) {
    if (!error_) error_ = Error{std::move(message), {at}};
  }
  void Fail(std::string message) { Fail(std::move(message), cur_.location); }
  void Advance() {
    if (error_) return;
    if (++tokens_ > limits_.max_tokens) {
      return Fail("The document has more than " + std::to_string(limits_.max_tokens) + " tokens.");
    }
    if (auto err = lexer_.Next(cur_)) error_ = std::move(err);
  }
  std::string Describe() const {
    switch (cur_.kind) {
      case Tok::kEnd:
        return "<EOF>";
      case Tok::kPunct:
        return "'" + cur_.text + "'";
      case Tok::kName:
        return "Name '" + cur_.text + "'";
      case Tok::kString:
        return "String";
      default:
        return "'" + cur_.text + "'";
    }
  }
  bool Peek(char const* punct) const { return cur_.kind == Tok::kPunct && cur_.text == punct; }
  bool PeekName(char const* name) const { return cur_.kind == Tok::kName && cur_.text == name; }
  bool Expect(char const* punct) {
    if (error_) return false;
    if (!Peek(punct)) {
      Fail("Syntax Error: Expected '" + std::string(punct) + "', found " + Describe() + ".");
      return false;
    }
    Advance();
    return !error_;
  }
  std::string Name() {
    if (error_) return {};
    if (cur_.kind != Tok::kName) {
      Fail("Syntax Error: Expected Name, found " + Describe() + ".");
      return {};
    }
    std::string n = std::move(cur_.text);
    Advance();
    return n;
  }
  // Entering one more level of nesting; false (with the error) beyond the limit.
  bool Deeper(int depth) {
    if (depth <= limits_.max_depth) return true;
    Fail("The document is nested deeper than " + std::to_string(limits_.max_depth) + " levels.");
    return false;
  }

  void Definition(Document& doc) {
    if (Peek("{")) {
      Operation op;
      op.location = cur_.location;
      op.selections = SelectionSet(1);
      doc.operations.push_back(std::move(op));
      return;
    }
    if (PeekName("query") || PeekName("mutation") || PeekName("subscription")) {
      doc.operations.push_back(OperationDefinition());
      return;
    }
    if (PeekName("fragment")) {
      doc.fragments.push_back(FragmentDefinition());
      return;
    }
    if (cur_.kind == Tok::kName) {
      static constexpr std::string_view kTypeSystem[] = {
          "schema", "scalar", "type", "interface", "union", "enum", "input", "directive", "extend"};
      for (auto k : kTypeSystem) {
        if (cur_.text == k) {
          return Fail(
              "Type system definitions are not accepted: this server only executes "
              "operations.");
        }
      }
    }
    Fail("Syntax Error: Unexpected " + Describe() + ".");
  }

  Operation OperationDefinition() {
    Operation op;
    op.location = cur_.location;
    op.kind = Name();
    if (cur_.kind == Tok::kName) op.name = Name();
    if (Peek("(")) {
      Advance();
      do {
        op.variables.push_back(VariableDefinitionOf());
      } while (!error_ && !Peek(")"));
      Expect(")");
    }
    op.directives = Directives();
    op.selections = SelectionSet(1);
    return op;
  }

  VariableDefinition VariableDefinitionOf() {
    VariableDefinition v;
    v.location = cur_.location;
    Expect("$");
    v.name = Name();
    Expect(":");
    v.type = Type(1);
    if (Peek("=")) {
      Advance();
      v.default_value = ValueOf(true, 1);
    }
    (void)Directives();
    return v;
  }

  std::string Type(int depth) {
    if (!Deeper(depth)) return {};
    std::string t;
    if (Peek("[")) {
      Advance();
      t = "[" + Type(depth + 1);
      Expect("]");
      t += "]";
    } else {
      t = Name();
    }
    if (Peek("!")) {
      Advance();
      t += "!";
    }
    return t;
  }

  Fragment FragmentDefinition() {
    Fragment f;
    f.location = cur_.location;
    Advance();  // "fragment"
    if (PeekName("on")) {
      Fail("Syntax Error: Unexpected Name 'on'.");
      return f;
    }
    f.name = Name();
    if (!PeekName("on")) {
      Fail("Syntax Error: Expected 'on', found " + Describe() + ".");
      return f;
    }
    Advance();
    f.type_condition = Name();
    f.directives = Directives();
    f.selections = SelectionSet(1);
    return f;
  }

  std::vector<Selection> SelectionSet(int depth) {
    std::vector<Selection> out;
    if (!Deeper(depth) || !Expect("{")) return out;
    do {
      out.push_back(SelectionOf(depth));
    } while (!error_ && !Peek("}"));
    Expect("}");
    return out;
  }

  Selection SelectionOf(int depth) {
    Selection s;
    s.location = cur_.location;
    if (++selections_ > limits_.max_selections) {
      Fail("The document selects more than " + std::to_string(limits_.max_selections) + " fields.");
      return s;
    }
    if (Peek("...")) {
      Advance();
      if (cur_.kind == Tok::kName && cur_.text != "on") {
        s.kind = Selection::Kind::kFragmentSpread;
        s.name = Name();
        s.directives = Directives();
        return s;
      }
      s.kind = Selection::Kind::kInlineFragment;
      if (PeekName("on")) {
        Advance();
        s.type_condition = Name();
      }
      s.directives = Directives();
      s.selections = SelectionSet(depth + 1);
      return s;
    }
    s.name = Name();
    if (Peek(":")) {
      Advance();
      if (++aliases_ > limits_.max_aliases) {
        Fail("The document uses more than " + std::to_string(limits_.max_aliases) + " aliases.");
        return s;
      }
      s.alias = std::move(s.name);
      s.name = Name();
    }
    s.arguments = Arguments(false, depth);
    s.directives = Directives();
    if (Peek("{")) s.selections = SelectionSet(depth + 1);
    return s;
  }

  std::vector<Argument> Arguments(bool constant, int depth) {
    std::vector<Argument> out;
    if (!Peek("(")) return out;
    Advance();
    do {
      Argument a;
      a.location = cur_.location;
      a.name = Name();
      Expect(":");
      a.value = ValueOf(constant, depth + 1);
      out.push_back(std::move(a));
    } while (!error_ && !Peek(")"));
    Expect(")");
    return out;
  }

  std::vector<Directive> Directives() {
    std::vector<Directive> out;
    while (!error_ && Peek("@")) {
      Directive d;
      d.location = cur_.location;
      Advance();
      d.name = Name();
      d.arguments = Arguments(false, 1);
      out.push_back(std::move(d));
    }
    return out;
  }

  Value ValueOf(bool constant, int depth) {
    Value v;
    v.location = cur_.location;
    if (error_ || !Deeper(depth)) return v;
    using K = Value::Kind;
    switch (cur_.kind) {
      case Tok::kInt:
      case Tok::kFloat:
      case Tok::kString:
        v.kind = cur_.kind == Tok::kInt     ? K::kInt
                 : cur_.kind == Tok::kFloat ? K::kFloat
                                            : K::kString;
        v.text = std::move(cur_.text);
        Advance();
        return v;
      case Tok::kName:
        if (cur_.text == "true" || cur_.text == "false") {
          v.kind = K::kBoolean;
          v.boolean = cur_.text == "true";
        } else if (cur_.text == "null") {
          v.kind = K::kNull;
        } else {
          v.kind = K::kEnum;
          v.text = std::move(cur_.text);
        }
        Advance();
        return v;
      case Tok::kPunct:
        break;
      case Tok::kEnd:
        Fail("Syntax Error: Unexpected <EOF>.");
        return v;
    }
    if (Peek("$")) {
      if (constant) {
        Fail("Syntax Error: Unexpected variable in a constant value.");
        return v;
      }
      Advance();
      v.kind = K::kVariable;
      v.text = Name();
    } else if (Peek("[")) {
      Advance();
      v.kind = K::kList;
      while (!error_ && !Peek("]")) v.items.push_back(ValueOf(constant, depth + 1));
      Expect("]");
    } else if (Peek("{")) {
      Advance();
      v.kind = K::kObject;
      while (!error_ && !Peek("}")) {
        v.names.push_back(Name());
        Expect(":");
        v.items.push_back(ValueOf(constant, depth + 1));
      }
      Expect("}");
    } else {
      Fail("Syntax Error: Unexpected " + Describe() + ".");
    }
    return v;
  }

  Lexer lexer_;
  Limits limits_;
  Token cur_;
  std::optional<Error> error_;
  int tokens_ = 0;
  int selections_ = 0;
  int aliases_ = 0;
};

}  // namespace

ParseResult Parse(std::string_view source, Limits const& limits) {
  if (source.size() > limits.max_bytes) {
    ParseResult r;
    r.error =
        Error{"The document is larger than " + std::to_string(limits.max_bytes) + " bytes.", {}};
    return r;
  }
  return Parser(source, limits).Run();
}

}  // namespace bai::graphql
