// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/pty_wire.h"

#include "libbai/util/base64.h"
#include "libbai/util/json_parse.h"

#include <nlohmann/json.hpp>

namespace bai::protocol {
namespace {

using json = nlohmann::json;
using Type = PtyFrame::Type;

Status Bad(std::string why) {
  return Status(StatusCode::kInvalidArgument, "malformed terminal frame: " + std::move(why));
}

}  // namespace

std::string EncodePtyFrame(PtyFrame const& f) {
  switch (f.type) {
    case Type::kStdin:
      return json{{"type", "stdin"}, {"chars", internal::Base64Encode(f.data)}}.dump();
    case Type::kResize:
      return json{{"type", "resize"}, {"rows", f.rows}, {"cols", f.cols}}.dump();
    case Type::kPing:
      return R"({"type":"ping"})";
    case Type::kRestart:
      return R"({"type":"restart"})";
    case Type::kOut:
      return json{{"type", "out"}, {"data", internal::Base64Encode(f.data)}}.dump();
    case Type::kExit:
      return json{{"type", "exit"}, {"code", f.code}}.dump();
    case Type::kError:
      return json{{"type", "error"}, {"data", f.data}}.dump(-1, ' ', false,
                                                            json::error_handler_t::replace);
    case Type::kErr:
      return json{{"type", "err"}, {"data", internal::Base64Encode(f.data)}}.dump();
    case Type::kEof:
      return R"({"type":"eof"})";
  }
  return "{}";
}

StatusOr<PtyFrame> DecodePtyFrame(std::string_view text) {
  auto j = internal::ParseJson(text);
  if (!j || !j->is_object()) return Bad("not a JSON object");
  auto type = j->find("type");
  if (type == j->end() || !type->is_string()) return Bad("no type");
  std::string t = *type;
  PtyFrame f;
  auto bytes = [&](char const* key) -> Status {
    auto it = j->find(key);
    if (it == j->end() || !it->is_string()) return Bad(std::string("no ") + key);
    auto decoded = internal::Base64Decode(it->get<std::string>());
    if (!decoded) return Bad(std::string(key) + " is not Base64");
    f.data = std::move(*decoded);
    return Status();
  };
  auto number = [&](char const* key, int lo, int hi, int& out) -> Status {
    auto it = j->find(key);
    if (it == j->end() || !it->is_number_integer()) return Bad(std::string("no ") + key);
    auto v = it->get<std::int64_t>();
    if (v < lo || v > hi) return Bad(std::string(key) + " out of range");
    out = static_cast<int>(v);
    return Status();
  };
  Status st;
  if (t == "stdin") {
    f.type = Type::kStdin;
    st = bytes("chars");
  } else if (t == "out" || t == "err") {
    f.type = t == "out" ? Type::kOut : Type::kErr;
    st = bytes("data");
  } else if (t == "eof") {
    f.type = Type::kEof;
  } else if (t == "resize") {
    f.type = Type::kResize;
    st = number("rows", 1, 10000, f.rows);
    if (st.ok()) st = number("cols", 1, 10000, f.cols);
  } else if (t == "ping") {
    f.type = Type::kPing;
  } else if (t == "restart") {
    f.type = Type::kRestart;
  } else if (t == "exit") {
    f.type = Type::kExit;
    st = number("code", -1, 1 << 16, f.code);
  } else if (t == "error") {
    f.type = Type::kError;
    if (auto it = j->find("data"); it != j->end() && it->is_string()) f.data = *it;
  } else {
    return Bad("unknown type \"" + t + "\"");
  }
  if (!st.ok()) return st;
  return f;
}

}  // namespace bai::protocol
