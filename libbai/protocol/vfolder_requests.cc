// SPDX-License-Identifier: Apache-2.0
// The codecs of the folder requests of bai/protocol/vfolder_wire.h other than create and clone:
// one Codec per request, writing the spelling 23.09 and 24.09 read and reading every spelling
// they take (internal::Lenient).
#include "bai/protocol/vfolder_wire.h"

#include "libbai/protocol/json_fields.h"
#include "libbai/protocol/wire_json.h"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace bai::internal {
namespace {

using nlohmann::json;
using namespace protocol;  // the request types

// `min` to `max` non-empty strings under `names`, repeats dropped; reported as the first name.
std::vector<std::string> List(Lenient& l, FieldReader& r, std::initializer_list<char const*> names,
                              std::size_t min, std::size_t max, char const* what) {
  auto const* v = l.Find(names);
  std::vector<std::string> out;
  bool ok = v != nullptr && v->is_array() && v->size() >= min && v->size() <= max;
  for (auto const& item : ok ? *v : json::array()) {
    ok = ok && item.is_string() && !item.get_ref<std::string const&>().empty();
    if (ok && std::find(out.begin(), out.end(), item.get<std::string>()) == out.end()) {
      out.push_back(item.get<std::string>());
    }
  }
  if (!ok) r.Fail(*names.begin(), what);
  return ok ? out : std::vector<std::string>{};
}

std::vector<std::string> Emails(Lenient& l, FieldReader& r,
                                std::initializer_list<char const*> names) {
  return List(l, r, names, 1, 100, "a list of 1 to 100 emails");
}

// A string under `names` that must be there and not be empty (a path).
std::string NonEmpty(Lenient& l, FieldReader& r, std::initializer_list<char const*> names) {
  auto v = l.Required(names);
  if (v.empty() && l.Find(names) != nullptr) r.Fail(*names.begin(), "a non-empty string");
  return v;
}

// A permission under `names` (rw when absent).
std::string Permission(Lenient& l, FieldReader& r, std::initializer_list<char const*> names) {
  auto perm = l.Str(names);
  if (perm && !ParseVFolderPermission(*perm)) r.Fail(*names.begin(), "ro, rw or wd");
  return perm.value_or("rw");
}

template <class R>
struct Codec;

template <>
struct Codec<VFolderRenameRequest> {
  static json ToJson(VFolderRenameRequest const& q) { return {{"new_name", q.new_name}}; }
  static void Read(Lenient& l, FieldReader&, VFolderRenameRequest& q) {
    q.new_name = l.Required({"new_name", "newName"});
  }
};

template <>
struct Codec<VFolderMkdirRequest> {
  static json ToJson(VFolderMkdirRequest const& q) {
    // One path as a string: what every release takes (lists came with 23.09).
    json path = q.paths.size() == 1 ? json(q.paths[0]) : json(q.paths);
    return {{"path", path}, {"parents", q.parents}, {"exist_ok", q.exist_ok}};
  }
  static void Read(Lenient& l, FieldReader& r, VFolderMkdirRequest& q) {
    auto const* path = l.Find({"path"});
    if (path == nullptr) {
      r.Refuse("path", "required");
    } else if (path->is_string()) {
      q.paths.push_back(path->get<std::string>());
    } else {
      q.paths = List(l, r, {"path"}, 1, 50, "a path or a list of 1 to 50 paths");
    }
    q.parents = l.Bool({"parents"}).value_or(true);
    q.exist_ok = l.Bool({"exist_ok"}).value_or(false);
  }
};

template <>
struct Codec<VFolderMoveFileRequest> {
  static json ToJson(VFolderMoveFileRequest const& q) { return {{"src", q.src}, {"dst", q.dst}}; }
  static void Read(Lenient& l, FieldReader& r, VFolderMoveFileRequest& q) {
    q.src = NonEmpty(l, r, {"src"});
    q.dst = NonEmpty(l, r, {"dst"});
  }
};

template <>
struct Codec<VFolderRenameFileRequest> {
  static json ToJson(VFolderRenameFileRequest const& q) {
    return {{"target_path", q.target_path}, {"new_name", q.new_name}};
  }
  static void Read(Lenient& l, FieldReader& r, VFolderRenameFileRequest& q) {
    q.target_path = NonEmpty(l, r, {"target_path"});
    q.new_name = NonEmpty(l, r, {"new_name"});
  }
};

template <>
struct Codec<VFolderDeleteFilesRequest> {
  static json ToJson(VFolderDeleteFilesRequest const& q) {
    return {{"files", q.files}, {"recursive", q.recursive}};
  }
  static void Read(Lenient& l, FieldReader& r, VFolderDeleteFilesRequest& q) {
    q.files = List(l, r, {"files"}, 0, SIZE_MAX, "a list of paths");
    q.recursive = l.Bool({"recursive"}).value_or(false);
  }
};

template <>
struct Codec<VFolderUploadRequest> {
  static json ToJson(VFolderUploadRequest const& q) {
    json out = {{"path", q.path}, {"size", q.size}};
    if (q.restart) out["restart"] = *q.restart;
    return out;
  }
  static void Read(Lenient& l, FieldReader& r, VFolderUploadRequest& q) {
    q.path = l.Required({"path"});
    auto size = l.Int({"size"}, 0, std::int64_t{1} << 50);
    if (!size && l.Find({"size"}) == nullptr)
      r.Refuse("size", "required: the file's size in bytes");
    q.size = size.value_or(0);
    q.restart = l.Bool({"restart"});
  }
};

template <>
struct Codec<VFolderDownloadRequest> {
  static json ToJson(VFolderDownloadRequest const& q) { return {{"path", q.path}}; }
  static void Read(Lenient& l, FieldReader&, VFolderDownloadRequest& q) {
    q.path = l.Required({"path", "file"});
  }
};

template <>
struct Codec<VFolderQuotaRequest> {
  static json ToJson(VFolderQuotaRequest const& q) {
    return {{"folder_host", q.folder_host},
            {"id", q.id},
            {"input", {{"size_bytes", q.size_bytes}, {"max_files", q.max_files}}}};
  }
  static void Read(Lenient& l, FieldReader& r, VFolderQuotaRequest& q) {
    q.folder_host = l.Required({"folder_host"});
    q.id = l.Required({"id"});
    auto const* input = l.Find({"input"});
    if (input == nullptr || !input->is_object()) {
      r.Refuse("input", "required: an object with size_bytes and max_files");
      return;
    }
    FieldReader in(*input);
    Lenient li(*input, in);
    constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
    q.size_bytes = li.Int({"size_bytes"}, 0, kMax).value_or(0);
    q.max_files = li.Int({"max_files"}, 0, kMax).value_or(0);
    for (auto const& [field, why] : in.field_errors()) r.Refuse("input." + field, why);
  }
};

template <>
struct Codec<VFolderInviteRequest> {
  static json ToJson(VFolderInviteRequest const& q) {
    return {{"perm", q.permission}, {"emails", q.emails}};
  }
  static void Read(Lenient& l, FieldReader& r, VFolderInviteRequest& q) {
    q.permission = Permission(l, r, {"perm", "permission"});
    q.emails = Emails(l, r, {"emails", "user_ids", "userIDs"});
  }
};

template <>
struct Codec<VFolderShareRequest> {
  static json ToJson(VFolderShareRequest const& q) {
    return {{"permission", q.permission}, {"emails", q.emails}};
  }
  static void Read(Lenient& l, FieldReader& r, VFolderShareRequest& q) {
    q.permission = Permission(l, r, {"permission", "perm"});
    q.emails = Emails(l, r, {"emails"});
  }
};

template <>
struct Codec<VFolderUnshareRequest> {
  static json ToJson(VFolderUnshareRequest const& q) { return {{"emails", q.emails}}; }
  static void Read(Lenient& l, FieldReader& r, VFolderUnshareRequest& q) {
    q.emails = Emails(l, r, {"emails"});
  }
};

template <>
struct Codec<VFolderLeaveRequest> {
  static json ToJson(VFolderLeaveRequest const& q) {
    json out = json::object();
    if (!q.shared_user_id.empty()) out["shared_user_uuid"] = q.shared_user_id;
    return out;
  }
  static void Read(Lenient& l, FieldReader&, VFolderLeaveRequest& q) {
    q.shared_user_id = l.Str({"shared_user_uuid", "sharedUserUuid"}).value_or("");
  }
};

template <>
struct Codec<VFolderInvitationRequest> {
  static json ToJson(VFolderInvitationRequest const& q) { return {{"inv_id", q.invitation_id}}; }
  static void Read(Lenient& l, FieldReader&, VFolderInvitationRequest& q) {
    q.invitation_id = l.Required({"inv_id", "invitation_id"});
  }
};

template <>
struct Codec<VFolderInvitationUpdateRequest> {
  static json ToJson(VFolderInvitationUpdateRequest const& q) { return {{"perm", q.permission}}; }
  static void Read(Lenient& l, FieldReader& r, VFolderInvitationUpdateRequest& q) {
    q.permission = Permission(l, r, {"perm", "permission"});
  }
};

template <>
struct Codec<VFolderByIdRequest> {
  static json ToJson(VFolderByIdRequest const& q) { return {{"vfolder_id", q.vfolder_id}}; }
  static void Read(Lenient& l, FieldReader&, VFolderByIdRequest& q) {
    q.vfolder_id = l.Required({"vfolder_id", "vfolderId", "id"});
  }
};

}  // namespace

template <class R>
json VFolderRequestToJson(R const& request) {
  return Codec<R>::ToJson(request);
}

template <class R>
StatusOr<R> VFolderRequestFromJson(json const& object) {
  FieldReader r(object);
  Lenient l(object, r);
  R out;
  Codec<R>::Read(l, r, out);
  if (!r.ok()) return FieldProblem(r);
  return out;
}

}  // namespace bai::internal

namespace bai::protocol {

template <class R>
std::string EncodeVFolderRequest(R const& request) {
  return internal::VFolderRequestToJson(request).dump();
}

template <class R>
StatusOr<R> DecodeVFolderRequest(std::string_view json_object) {
  auto j = internal::ObjectOf(json_object, "request");
  if (!j.ok()) return j.status();
  return internal::VFolderRequestFromJson<R>(*j);
}

}  // namespace bai::protocol

// Each request's four codec functions, instantiated here (their definitions are in this file).
#define BAI_VFOLDER_REQUEST(R)                                                           \
  template nlohmann::json bai::internal::VFolderRequestToJson<bai::protocol::R>(         \
      bai::protocol::R const&);                                                          \
  template bai::StatusOr<bai::protocol::R>                                               \
  bai::internal::VFolderRequestFromJson<bai::protocol::R>(nlohmann::json const&);        \
  template BAI_EXPORT std::string bai::protocol::EncodeVFolderRequest<bai::protocol::R>( \
      bai::protocol::R const&);                                                          \
  template BAI_EXPORT bai::StatusOr<bai::protocol::R>                                    \
      bai::protocol::DecodeVFolderRequest<bai::protocol::R>(std::string_view);

BAI_VFOLDER_REQUEST(VFolderRenameRequest)
BAI_VFOLDER_REQUEST(VFolderMkdirRequest)
BAI_VFOLDER_REQUEST(VFolderMoveFileRequest)
BAI_VFOLDER_REQUEST(VFolderRenameFileRequest)
BAI_VFOLDER_REQUEST(VFolderDeleteFilesRequest)
BAI_VFOLDER_REQUEST(VFolderUploadRequest)
BAI_VFOLDER_REQUEST(VFolderDownloadRequest)
BAI_VFOLDER_REQUEST(VFolderQuotaRequest)
BAI_VFOLDER_REQUEST(VFolderInviteRequest)
BAI_VFOLDER_REQUEST(VFolderShareRequest)
BAI_VFOLDER_REQUEST(VFolderUnshareRequest)
BAI_VFOLDER_REQUEST(VFolderLeaveRequest)
BAI_VFOLDER_REQUEST(VFolderInvitationRequest)
BAI_VFOLDER_REQUEST(VFolderInvitationUpdateRequest)
BAI_VFOLDER_REQUEST(VFolderByIdRequest)
#undef BAI_VFOLDER_REQUEST
