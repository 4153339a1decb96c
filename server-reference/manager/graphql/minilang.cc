// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/graphql/minilang.h"

#include "bai/protocol/dates.h"
#include "bai/protocol/errors.h"

#include "libbai/util/text.h"

#include <cctype>
#include <cstdio>
#include <ctime>
#include <optional>
#include <utility>

namespace bai::graphql {
namespace {

using protocol::MakeProblemStatus;
using protocol::ProblemType;
using server::SqlValue;

Status Invalid(std::string message) {
  return MakeProblemStatus(ProblemType::kInvalidApiParams, std::move(message));
}

bool IsNameStart(char c) { return c == '_' || std::isalpha(static_cast<unsigned char>(c)); }
bool IsNameChar(char c) { return c == '_' || std::isalnum(static_cast<unsigned char>(c)); }

// A value as written: a string, a number, an atom (null/true/false) or a list.
struct Literal {
  enum class Kind { kString, kNumber, kNull, kTrue, kFalse, kList };
  Kind kind = Kind::kNull;
  std::string text;
  std::vector<Literal> items;
};

// "2026-11-23", "2026-11-23T10:00", "…:05Z", "…:05.5+09:00" → the stored form
// "2026-11-23T01:00:05.500000+00:00" (fixed width, so it compares in time order).
std::optional<std::string> NormaliseTime(std::string const& s) {
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, n = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%n", &y, &mo, &d, &n) != 3 || n != 10) return std::nullopt;
  std::size_t i = 10;
  long micros = 0;
  long offset = 0;
  if (i < s.size() && (s[i] == 'T' || s[i] == ' ')) {
    if (std::sscanf(s.c_str() + i + 1, "%2d:%2d%n", &h, &mi, &n) != 2 || n != 5)
      return std::nullopt;
    i += 6;
    if (i < s.size() && s[i] == ':') {
      if (std::sscanf(s.c_str() + i + 1, "%2d%n", &sec, &n) != 1 || n != 2) return std::nullopt;
      i += 3;
      if (i < s.size() && s[i] == '.') {
        long scale = 100000;
        for (++i; i < s.size() && std::isdigit(static_cast<unsigned char>(s[i])); ++i) {
          micros += (s[i] - '0') * scale;
          scale /= 10;
        }
      }
    }
    if (i < s.size() && (s[i] == 'Z' || s[i] == 'z')) {
      ++i;
    } else if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
      int oh = 0, om = 0;
      if (std::sscanf(s.c_str() + i + 1, "%2d:%2d%n", &oh, &om, &n) != 2 || n != 5) {
        return std::nullopt;
      }
      offset = (s[i] == '+' ? 1 : -1) * (oh * 3600L + om * 60L);
      i += 6;
    }
  }
  if (i != s.size() || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) {
    return std::nullopt;
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  return protocol::FormatRfc3339(static_cast<std::int64_t>(timegm(&tm)) - offset, micros);
}

class FilterCompiler {
 public:
  FilterCompiler(std::string_view src, ColumnMap const& columns) : src_(src), columns_(columns) {}

  StatusOr<SqlCondition> Run() {
    SqlCondition out;
    auto st = Expr(out, 0);
    if (!st.ok()) return st;
    Skip();
    if (pos_ < src_.size()) return Expected("'&', '|' or the end");
    return out;
  }

 private:
  Status Expected(std::string_view what) {
    std::string got =
        pos_ < src_.size() ? "'" + std::string(src_.substr(pos_, 12)) + "'" : "the end";
    return Invalid("Query filter parsing error at position " + std::to_string(pos_ + 1) +
                   ": expected " + std::string(what) + ", found " + got + ".");
  }

  void Skip() {
    while (pos_ < src_.size() && std::isspace(static_cast<unsigned char>(src_[pos_]))) ++pos_;
  }
  bool Eat(std::string_view token) {
    Skip();
    if (src_.substr(pos_, token.size()) != token) return false;
    pos_ += token.size();
    return true;
  }
  std::string Name() {
    Skip();
    std::size_t start = pos_;
    if (pos_ < src_.size() && IsNameStart(src_[pos_])) {
      while (pos_ < src_.size() && IsNameChar(src_[pos_])) ++pos_;
    }
    return std::string(src_.substr(start, pos_ - start));
  }

  Status Expr(SqlCondition& out, int depth) {
    if (depth > kMaxExpressionDepth) {
      return Invalid("The filter is nested deeper than " + std::to_string(kMaxExpressionDepth) +
                     " levels.");
    }
    SqlCondition left;
    Skip();
    Status st;
    if (Eat("!")) {
      SqlCondition inner;
      st = Expr(inner, depth + 1);
      left.sql = "NOT (" + inner.sql + ")";
      left.params = std::move(inner.params);
    } else if (Eat("(")) {
      st = Expr(left, depth + 1);
      if (st.ok() && !Eat(")")) st = Expected("')'");
      left.sql = "(" + left.sql + ")";
    } else {
      st = Comparison(left);
    }
    if (!st.ok()) return st;
    Skip();
    char op = pos_ < src_.size() ? src_[pos_] : '\0';
    if (op != '&' && op != '|') {
      out = std::move(left);
      return {};
    }
    ++pos_;
    SqlCondition right;
    st = Expr(right, depth + 1);
    if (!st.ok()) return st;
    out.sql = "(" + left.sql + (op == '&' ? " AND " : " OR ") + right.sql + ")";
    out.params = std::move(left.params);
    for (auto& p : right.params) out.params.push_back(std::move(p));
    return {};
  }

  std::string Operator() {
    Skip();
    for (std::string_view op : {"==", "!=", ">=", "<=", ">", "<"}) {
      if (src_.substr(pos_, op.size()) == op) {
        pos_ += op.size();
        return std::string(op);
      }
    }
    std::size_t save = pos_;
    std::string word = Name();
    for (std::string_view op : {"contains", "in", "isnot", "is", "like", "ilike"}) {
      if (word == op) return word;
    }
    pos_ = save;
    return "";
  }

  Status Comparison(SqlCondition& out) {
    std::size_t at = pos_;
    std::string field = Name();
    if (field.empty()) return Expected("a field name, '!' or '('");
    auto col = columns_.find(field);
    if (col == columns_.end()) {
      pos_ = at;
      std::string known;
      for (auto const& [name, spec] : columns_) known += (known.empty() ? "" : ", ") + name;
      return Invalid("Unknown or unsupported field name \"" + field +
                     "\" in the filter; one of: " + known + ".");
    }
    std::string op = Operator();
    if (op.empty())
      return Expected("an operator (== != > >= < <= contains in isnot is like ilike)");
    Literal value;
    if (auto st = Value(value, 0); !st.ok()) return st;
    return Emit(field, col->second, op, value, out);
  }

  Status Value(Literal& v, int depth) {
    Skip();
    if (pos_ >= src_.size()) return Expected("a value");
    char c = src_[pos_];
    if (c == '"') return String(v);
    if (c == '[') {
      if (depth > 0) return Expected("a value (lists do not nest)");
      ++pos_;
      v.kind = Literal::Kind::kList;
      if (Eat("]")) return {};
      do {
        Literal item;
        if (auto st = Value(item, depth + 1); !st.ok()) return st;
        v.items.push_back(std::move(item));
      } while (Eat(","));
      if (!Eat("]")) return Expected("',' or ']'");
      return {};
    }
    if (c == '-' || c == '+' || std::isdigit(static_cast<unsigned char>(c))) return Number(v);
    std::size_t at = pos_;
    std::string word = Name();
    if (word == "null")
      v.kind = Literal::Kind::kNull;
    else if (word == "true")
      v.kind = Literal::Kind::kTrue;
    else if (word == "false")
      v.kind = Literal::Kind::kFalse;
    else {
      pos_ = at;
      return Expected("a value (\"string\", number, true, false, null or [list])");
    }
    return {};
  }

  Status String(Literal& v) {
    ++pos_;
    v.kind = Literal::Kind::kString;
    while (pos_ < src_.size() && src_[pos_] != '"') {
      if (src_[pos_] == '\\' && pos_ + 1 < src_.size() &&
          (src_[pos_ + 1] == '"' || src_[pos_ + 1] == '\\')) {
        ++pos_;
      }
      v.text.push_back(src_[pos_++]);
    }
    if (pos_ >= src_.size()) return Expected("the closing '\"' of a string");
    ++pos_;
    return {};
  }

  Status Number(Literal& v) {
    std::size_t start = pos_;
    if (src_[pos_] == '-' || src_[pos_] == '+') ++pos_;
    std::size_t digits = pos_;
    while (pos_ < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[pos_])) ||
                                  src_[pos_] == '.' || src_[pos_] == 'e' || src_[pos_] == 'E')) {
      ++pos_;
    }
    if (pos_ == digits) return Expected("a number");
    v.kind = Literal::Kind::kNumber;
    v.text = std::string(src_.substr(start, pos_ - start));
    std::size_t used = 0;
    try {
      (void)std::stod(v.text, &used);
    } catch (...) {
      used = 0;
    }
    if (used != v.text.size()) return Invalid("Query filter: \"" + v.text + "\" is not a number.");
    return {};
  }

  // The bound value of `v` for a column of `spec`'s kind.
  StatusOr<SqlValue> Bind(std::string const& field, ColumnSpec const& spec, Literal const& v) {
    using K = Literal::Kind;
    auto wrong = [&](std::string_view expected) {
      return Invalid("Query filter: field \"" + field + "\" compares with " +
                     std::string(expected) + ".");
    };
    switch (spec.kind) {
      case ColumnSpec::Kind::kText:
        if (v.kind == K::kString || v.kind == K::kNumber) return SqlValue(v.text);
        return wrong("a string");
      case ColumnSpec::Kind::kInt:
        if (v.kind == K::kNumber && v.text.find_first_of(".eE") == std::string::npos) {
          return SqlValue(static_cast<std::int64_t>(std::stoll(v.text)));
        }
        return wrong("an integer");
      case ColumnSpec::Kind::kBool:
        if (v.kind == K::kTrue || v.kind == K::kFalse) {
          return SqlValue(static_cast<std::int64_t>(v.kind == K::kTrue));
        }
        return wrong("true or false");
      case ColumnSpec::Kind::kTime: {
        if (v.kind != K::kString) return wrong("a time string (RFC 3339)");
        auto t = NormaliseTime(v.text);
        if (!t) return wrong("a time string (RFC 3339), not \"" + v.text + "\"");
        return SqlValue(*t);
      }
      case ColumnSpec::Kind::kEnum: {
        if (v.kind == K::kString) {
          std::string up = internal::AsciiUpper(v.text);
          for (auto const& e : spec.values) {
            if (internal::AsciiUpper(e) == up) return SqlValue(e);
          }
        }
        std::string names;
        for (auto const& e : spec.values) names += (names.empty() ? "" : ", ") + e;
        return wrong("one of " + names);
      }
    }
    return wrong("a value");
  }

  Status Emit(std::string const& field, ColumnSpec const& spec, std::string const& op,
              Literal const& v, SqlCondition& out) {
    using K = Literal::Kind;
    std::string const& col = spec.sql;
    bool negate = op == "!=" || op == "isnot";
    if (v.kind == K::kNull) {
      if (op != "==" && op != "!=" && op != "is" && op != "isnot") {
        return Invalid("Query filter: null compares only with ==, !=, is and isnot.");
      }
      out.sql = col + (negate ? " IS NOT NULL" : " IS NULL");
      return {};
    }
    if (op == "in") {
      if (v.kind != K::kList) return Invalid("Query filter: \"in\" takes a [list].");
      if (v.items.empty()) {
        out.sql = "1 = 0";
        return {};
      }
      out.sql = col + " IN (";
      for (std::size_t i = 0; i < v.items.size(); ++i) {
        auto b = Bind(field, spec, v.items[i]);
        if (!b.ok()) return b.status();
        out.sql += i ? ", ?" : "?";
        out.params.push_back(*std::move(b));
      }
      out.sql += ")";
      return {};
    }
    if (v.kind == K::kList) return Invalid("Query filter: only \"in\" takes a list.");
    if (op == "contains" || op == "like" || op == "ilike") {
      if (spec.kind != ColumnSpec::Kind::kText || v.kind != K::kString) {
        return Invalid("Query filter: \"" + op + "\" applies to text fields and strings.");
      }
      if (op == "contains") {
        std::string pattern = "%";
        for (char c : v.text) {
          if (c == '%' || c == '_' || c == '\\') pattern.push_back('\\');
          pattern.push_back(c);
        }
        out.sql = col + " LIKE ? ESCAPE '\\'";
        out.params.push_back(pattern + "%");
      } else {
        out.sql = op == "like" ? col + " LIKE ?" : "LOWER(" + col + ") LIKE LOWER(?)";
        out.params.push_back(v.text);
      }
      return {};
    }
    auto b = Bind(field, spec, v);
    if (!b.ok()) return b.status();
    std::string sql_op = op == "==" || op == "is" ? "=" : negate ? "<>" : op;
    out.sql = col + " " + sql_op + " ?";
    out.params.push_back(*std::move(b));
    return {};
  }

  std::string_view src_;
  ColumnMap const& columns_;
  std::size_t pos_ = 0;
};

}  // namespace

StatusOr<SqlCondition> CompileFilter(std::string_view expression, ColumnMap const& columns) {
  if (expression.size() > kMaxExpressionBytes) {
    return Invalid("The filter is longer than " + std::to_string(kMaxExpressionBytes) + " bytes.");
  }
  return FilterCompiler(expression, columns).Run();
}

StatusOr<std::string> CompileOrder(std::string_view expression, ColumnMap const& columns) {
  if (expression.size() > kMaxExpressionBytes) {
    return Invalid("The order is longer than " + std::to_string(kMaxExpressionBytes) + " bytes.");
  }
  std::string out;
  std::size_t pos = 0;
  auto skip = [&] {
    while (pos < expression.size() && std::isspace(static_cast<unsigned char>(expression[pos]))) {
      ++pos;
    }
  };
  skip();
  while (pos < expression.size()) {
    bool desc = false;
    if (expression[pos] == '+' || expression[pos] == '-') desc = expression[pos++] == '-';
    skip();
    std::size_t start = pos;
    while (pos < expression.size() && IsNameChar(expression[pos])) ++pos;
    std::string name(expression.substr(start, pos - start));
    auto col = columns.find(name);
    if (name.empty() || col == columns.end()) {
      return Invalid("Query ordering: unknown or unsupported field name \"" + name + "\".");
    }
    out += (out.empty() ? "" : ", ") + col->second.sql + (desc ? " DESC" : " ASC");
    skip();
    if (pos < expression.size() && expression[pos] != ',') {
      return Invalid("Query ordering parsing error at position " + std::to_string(pos + 1) +
                     ": expected ',' or the end.");
    }
    if (pos < expression.size()) ++pos;
    skip();
  }
  return out;
}

}  // namespace bai::graphql
