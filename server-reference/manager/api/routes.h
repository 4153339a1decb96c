// SPDX-License-Identifier: Apache-2.0
#pragma once
// Every area of the REST surface adds its routes to a ManagerApi with one function; Manager calls
// them all. Each file named below holds that area's handlers as named functions.

#include "server-reference/manager/api/api.h"
#include "server-reference/manager/state/sessions.h"
#include "server-reference/manager/vfolders/mounts.h"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace bai::manager {

class AgentRegistry;
class BackgroundTaskStore;
class EventHub;
class ImageRescan;
class SessionStore;
namespace vfolders {
class StorageLinks;
}
namespace streams {
class StreamRegistry;
template <class Waiter>
class StreamBroker;
struct StreamWaiter;
using AgentStreamBroker = StreamBroker<StreamWaiter>;
}  // namespace streams

/// `GET /`, `/health`, `/auth` and `/auth/test`, `/auth/authorize` (throttled, hashing on a
/// bounded pool), `/auth/signup`, `/auth/role` (auth_handlers.cc).
void RegisterAuthRoutes(ManagerApi& api);

/// Resource slots and presets, resource groups, manager status and announcement, bootstrap
/// scripts (cluster_handlers.cc).
void RegisterClusterRoutes(ManagerApi& api);

/// The agents' WebSocket (docs/agent-protocol.md), authenticated with the cluster secret
/// (agent_handlers.cc).
void RegisterAgentRoutes(ManagerApi& api, AgentRegistry& agents, std::string cluster_secret);

/// Session and event routes; `schedule` runs a scheduling pass for a resource group
/// (session_handlers.cc).
void RegisterSessionRoutes(ManagerApi& api, SessionStore& sessions, EventHub& hub,
                           std::function<void(std::string const&)> schedule,
                           vfolders::StorageLinks const& links);
/// Code execution (`POST /session/{id}`), relayed to the session's agent (session_handlers.cc).
void RegisterExecuteRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents);
/// PATCH /session/{id} (restart) and /session/{id}/interrupt, relayed to the agent
/// (session_handlers.cc).
void RegisterKernelControlRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents);

/// The WebSocket streams of a session, `/stream/session/{id}/execute` (stream_handlers.cc);
/// each registered in `registry`, which ends them with their session.
void RegisterStreamRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents,
                          streams::StreamRegistry& registry, streams::AgentStreamBroker& broker,
                          std::string cluster_secret);

/// `POST /admin/gql` and the legacy `/admin/graphql`: the GraphQL engine over the stores,
/// scoped by role (graphql_handlers.cc).
/// `rescan_images` starts its background task through `rescan`.
void RegisterGraphqlRoutes(ManagerApi& api, SessionStore& sessions,
                           vfolders::StorageLinks const& links, ImageRescan& rescan);

/// /user-config/dotfiles, /group-config/dotfiles, /domain-config/dotfiles.
void RegisterDotfileRoutes(ManagerApi& api);

/// /template/session: session templates' create, list, get (JSON or YAML), update, delete
/// (template_handlers.cc).
void RegisterTemplateRoutes(ManagerApi& api);
/// The body of `POST /session` that create-from-template's request makes with its template
/// (template_handlers.cc; the session routes then create it as any other).
StatusOr<nlohmann::json> TemplateCreationBody(RequestContext& ctx);

/// /logs/error: list (a page, newest first), file one, clear one (error_log_handlers.cc).
void RegisterErrorLogRoutes(ManagerApi& api);

/// /resource/usage/{month,period}, /resource/stats/{user,admin}/month, recalculate-usage.
void RegisterUsageRoutes(ManagerApi& api, SessionStore& sessions);

/// `GET /session/{id}/logs`, whole or followed, read from the session's agent (log_handlers.cc).
void RegisterLogRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents);

/// A running session's files: `/session/{id}/files`, `/upload`, `/download`, `/download_single`,
/// relayed to the kernel through its agent (file_handlers.cc).
void RegisterSessionFileRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents);
/// The body limit of those routes (an upload carries up to 20 files of 1 MiB); 0 for others.
std::size_t SessionFileBodyLimit(std::string_view method, std::string_view path);

/// Virtual folders, `/folders/…` (vfolder_handlers.cc); the bytes are on `links`' proxies.
void RegisterVFolderRoutes(ManagerApi& api, vfolders::StorageLinks const& links,
                           BackgroundTaskStore& tasks);

/// Background tasks: GET /events/background-task, and the session commit that runs as one
/// (task_handlers.cc; a commit may go into one of the owner's folders on `links`' proxies).
void RegisterTaskRoutes(ManagerApi& api, SessionStore& sessions, AgentRegistry& agents,
                        BackgroundTaskStore& tasks, EventHub& hub,
                        vfolders::StorageLinks const& links);

/// Folders of session `s`'s owner for the session's use (vfolders::PlanMounts among those the
/// owner reaches; the owner's dot-folders follow the requested ones), each with its host
/// directory from its proxy; refusals as problems (object-not-found, vfolder-permission-error…).
/// Defined in session_handlers.cc; session creation and commits into a folder use it.
StatusOr<std::vector<std::pair<vfolders::PlannedMount, std::string>>> ResolveOwnerFolders(
    RequestContext& ctx, SessionRecord const& s, vfolders::StorageLinks const& links,
    std::vector<vfolders::MountRequest> const& requests);

}  // namespace bai::manager
