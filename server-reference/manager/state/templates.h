// SPDX-License-Identifier: Apache-2.0
#pragma once
// Session templates in the database (migration 19's session_templates): stored checked, as
// JSON; deleting one marks it inactive, as 24.09 does, so sessions made from it keep a record
// of where they came from.

#include "bai/status.h"

#include "server-reference/common/db/database.h"

#include <optional>
#include <string>
#include <vector>

namespace bai::manager {

struct TemplateRecord {
  std::string id;  ///< 32 hex digits
  std::string name;
  std::string created_at;
  std::string domain_name;
  std::string group_id;
  std::string user_uuid;
  std::string template_json;
  // Read with it, not stored in it:
  std::string user_email;
  std::string group_name;
};

class TemplateStore {
 public:
  explicit TemplateStore(server::Database& db) : db_(db) {}

  Status Insert(TemplateRecord const& t);
  /// Active templates, newest first: of one user (`user_uuid`), of one domain, or all.
  StatusOr<std::vector<TemplateRecord>> List(std::optional<std::string> const& user_uuid,
                                             std::optional<std::string> const& domain);
  /// An active template by id (with or without dashes, any case); nullopt when there is none.
  StatusOr<std::optional<TemplateRecord>> Get(std::string const& id);
  /// Replaces its name, template and project; kNotFound when it is gone meanwhile.
  Status Update(TemplateRecord const& t);
  /// Marks it inactive; kNotFound when it is gone meanwhile.
  Status Deactivate(std::string const& id);

 private:
  server::Database& db_;
};

/// The 32-hex-digit form of a template id ("8B1F-…" → "8b1f…").
std::string TemplateId(std::string const& id);

}  // namespace bai::manager
