// SPDX-License-Identifier: Apache-2.0
#pragma once
// Usage reports (streams-admin-console.md §B.3): what GET /resource/usage/period answers, in
// 24.09's shape (a list of projects, each with its sessions keyed by id), one definition for the
// manager that writes it and the SDK that reads it.

#include "bai/export.h"
#include "bai/status.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::protocol {

/// 24.09's ResourceUsage. `cpu_used` is in milliseconds of CPU time; `mem_used` is the peak;
/// `gpu_allocated` counts devices or shares as allocated.
struct ResourceUsage {
  double cpu_allocated = 0;
  double cpu_used = 0;
  std::int64_t mem_allocated = 0;
  std::int64_t mem_used = 0;
  std::int64_t shared_memory = 0;
  std::int64_t disk_allocated = 0;
  std::int64_t disk_used = 0;
  std::int64_t io_read = 0;
  std::int64_t io_write = 0;
  std::vector<std::string> device_type;
  double smp = 0;
  double gpu_mem_allocated = 0;
  double gpu_allocated = 0;
  std::vector<std::string> nfs;  ///< the host paths of the folders it mounted

  ResourceUsage& operator+=(ResourceUsage const& other);
};

/// One session of a report.
struct SessionUsage {
  std::string session_id;
  std::string session_name;
  std::string kernel_id;
  std::string access_key;
  std::string user_id;
  std::string user_email;
  std::string full_name;
  std::string project_id;
  std::string project_name;
  std::string domain_name;
  std::string status;
  std::string status_info;
  std::string created_at;                    ///< RFC 3339
  std::optional<std::string> terminated_at;  ///< absent while it runs
  std::optional<std::string> used_time;      ///< "H:MM:SS.ffffff" once it ended
  std::optional<std::int64_t> used_days;     ///< calendar days (UTC) it touched, once it ended
  std::vector<std::string> images;
  std::vector<std::string> agents;
  std::string last_stat = "null";  ///< JSON text: its stat in 24.09's live_stat shape
  ResourceUsage total_usage;
};

/// One project of a report, with its sessions in the order the manager gave them.
struct ProjectUsage {
  std::string project_id;
  std::string project_name;
  std::string domain_name;
  std::vector<std::string> agents;
  ResourceUsage total_usage;
  std::vector<SessionUsage> sessions;
};

/// The JSON list text 24.09's usage/period answers (`to_json(child=True)` of each project).
BAI_EXPORT std::string EncodeProjectUsages(std::vector<ProjectUsage> const& projects);
BAI_EXPORT StatusOr<std::vector<ProjectUsage>> DecodeProjectUsages(std::string_view json);

}  // namespace bai::protocol
