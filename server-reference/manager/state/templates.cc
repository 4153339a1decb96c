// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/state/templates.h"

#include <cctype>

namespace bai::manager {

namespace {

constexpr char const* kSelect =
    "SELECT t.id, t.name, t.created_at, t.domain_name, COALESCE(t.group_id, ''), t.user_uuid, "
    "t.template, COALESCE(u.email, ''), COALESCE(g.name, '') FROM session_templates t "
    "LEFT JOIN users u ON u.uuid = t.user_uuid LEFT JOIN groups g ON g.id = t.group_id "
    "WHERE t.is_active = 1 AND t.type = 'task'";

std::vector<TemplateRecord> Records(std::vector<server::SqlRow>& rows) {
  std::vector<TemplateRecord> out;
  for (auto& r : rows) {
    TemplateRecord t;
    t.id = r.TakeText(0);
    t.name = r.TakeText(1);
    t.created_at = r.TakeText(2);
    t.domain_name = r.TakeText(3);
    t.group_id = r.TakeText(4);
    t.user_uuid = r.TakeText(5);
    t.template_json = r.TakeText(6);
    t.user_email = r.TakeText(7);
    t.group_name = r.TakeText(8);
    out.push_back(std::move(t));
  }
  return out;
}

}  // namespace

std::string TemplateId(std::string const& id) {
  std::string out;
  for (char c : id) {
    if (c != '-') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  }
  return out;
}

Status TemplateStore::Insert(TemplateRecord const& t) {
  auto w = db_.Exec(
      "INSERT INTO session_templates (id, name, type, is_active, domain_name, group_id, "
      "user_uuid, template, created_at) VALUES (?, ?, 'task', 1, ?, ?, ?, ?, ?)",
      {t.id, t.name, t.domain_name,
       t.group_id.empty() ? server::SqlValue(nullptr) : server::SqlValue(t.group_id), t.user_uuid,
       t.template_json, t.created_at});
  return w.status();
}

StatusOr<std::vector<TemplateRecord>> TemplateStore::List(
    std::optional<std::string> const& user_uuid, std::optional<std::string> const& domain) {
  std::string sql = kSelect;
  std::vector<server::SqlValue> params;
  if (user_uuid) {
    sql += " AND t.user_uuid = ?";
    params.emplace_back(*user_uuid);
  }
  if (domain) {
    sql += " AND t.domain_name = ?";
    params.emplace_back(*domain);
  }
  sql += " ORDER BY t.created_at DESC, t.id";
  auto rows = db_.Query(sql, params);
  if (!rows.ok()) return std::move(rows).status();
  return Records(*rows);
}

StatusOr<std::optional<TemplateRecord>> TemplateStore::Get(std::string const& id) {
  auto rows = db_.Query(std::string(kSelect) + " AND t.id = ?", {TemplateId(id)});
  if (!rows.ok()) return std::move(rows).status();
  auto records = Records(*rows);
  if (records.empty()) return std::optional<TemplateRecord>();
  return std::optional<TemplateRecord>(std::move(records.front()));
}

Status TemplateStore::Update(TemplateRecord const& t) {
  auto w = db_.Exec(
      "UPDATE session_templates SET name = ?, template = ?, group_id = ? "
      "WHERE id = ? AND is_active = 1",
      {t.name, t.template_json,
       t.group_id.empty() ? server::SqlValue(nullptr) : server::SqlValue(t.group_id), t.id});
  if (!w.ok()) return w.status();
  if (*w == 0) return Status(StatusCode::kNotFound, "No such session template.");
  return Status();
}

Status TemplateStore::Deactivate(std::string const& id) {
  auto w = db_.Exec("UPDATE session_templates SET is_active = 0 WHERE id = ? AND is_active = 1",
                    {TemplateId(id)});
  if (!w.ok()) return w.status();
  if (*w == 0) return Status(StatusCode::kNotFound, "No such session template.");
  return Status();
}

}  // namespace bai::manager
