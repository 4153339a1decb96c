// SPDX-License-Identifier: Apache-2.0
#pragma once
// Session templates, the pure core (no I/O): what a stored template payload may hold (24.09's
// task_template_v1, its aliases and defaults), the payload shapes the clients send, and the
// creation request a template and a caller's overrides make together. The shell
// (api/template_handlers.cc, state/templates.*) stores, lists and starts them.

#include "bai/status.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bai::manager::templates {

/// One template of a payload, checked.
struct Entry {
  std::string name;     ///< the entry's `name`, else the template's metadata.name
  nlohmann::json body;  ///< the checked template, keys in their canonical spelling
};

/// What a create or update payload holds.
struct Payload {
  std::vector<Entry> entries;
  /// Whether to answer with one object ({id, user}) rather than a list: 22.03's manager read
  /// `{"session_templates": [...]}` and answered the last template's id, and its client reads
  /// `response['id']`; 24.09 reads a list (or a YAML stream) and answers a list. A bare
  /// template (the shape the Backend.AI docs show) is answered with one object too.
  bool one_answer = false;
};

/// The payload text (JSON, else YAML; a YAML stream of several documents is a list) in any of
/// the shapes: {"session_templates": [{name?, template}]}, [{name?, template}], {name?,
/// template}, or a bare template. Errors are kInvalidArgument and name what is wrong
/// ("session_templates[0].template.spec.kernel.image: required").
StatusOr<Payload> ParsePayload(std::string_view text);

/// 24.09's check of one template: apiVersion (or api_version), kind taskTemplate (or
/// task_template), metadata.name, spec.kernel.image required; session_type from spec.type,
/// sessionType or session_type (interactive by default); startup_command from startup,
/// startupCommand; git's destinationDir as dest_dir; agentList as agent_list; mounts must name
/// folders, not reserved paths. Unknown keys are kept. `where` prefixes the error's field name.
StatusOr<nlohmann::json> CheckTaskTemplate(nlohmann::json const& raw, std::string const& where);

/// The shell commands that clone spec.kernel.git (`checked`'s, a map with a repository) into
/// /home/work: `git clone [--branch B] URL DEST` (DEST: dest_dir, else git's own choice of
/// name), then `git checkout COMMIT`; skipped when DEST already holds a repository (a restarted
/// kernel), ending the script with git's status when it fails. A credential's username and
/// password go into an http(s) URL's userinfo, percent-encoded. Every value is shell-quoted.
std::string GitBootstrap(nlohmann::json const& git);

/// Where a template was stored: the project and domain a session from it goes to by default.
struct Origin {
  std::string group_name;  ///< empty when the project is gone
  std::string domain_name;
};

/// The body of a session creation for `checked` (CheckTaskTemplate's) and the caller's
/// `request` (create-from-template's body, less template_id): what the request gives wins, key
/// by key and within `config` key by key (whatever alias spells it); a null is not given, an
/// empty value is (the 22.03 CLI's --no-env sends `environ: {}`). Folders go together: the
/// request's replace the template's when it names some or sends `mount_map` (the 22.03 SDK
/// sends `mounts: []` with every request; its --no-mount adds `mount_map: {}`).
/// The template's run.bootstrap and, after it, its git repository's clone (GitBootstrap) become
/// the session's bootstrap_script, unless the request gives one.
StatusOr<nlohmann::json> CreationRequest(nlohmann::json const& checked, Origin const& origin,
                                         nlohmann::json const& request);

}  // namespace bai::manager::templates
