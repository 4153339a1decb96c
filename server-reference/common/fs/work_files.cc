// SPDX-License-Identifier: Apache-2.0
#include "server-reference/common/fs/work_files.h"

namespace bai::server {

namespace p = protocol;

runner_protocol::FileResult AnswerFileRequest(std::string const& root,
                                              runner_protocol::FileRequest const& request) {
  namespace rp = runner_protocol;
  rp::FileResult r;
  r.request_id = request.request_id;
  auto tree = ConfinedTree::Open(root, p::kSessionWorkDir);
  if (!tree.ok()) {
    r.status = tree.status();
  } else if (request.action == rp::kFileList) {
    auto list = tree->List(request.path);
    if (list.ok()) {
      r.files_json = p::EncodeSessionFileList(*list);
    } else {
      r.status = list.status();
    }
  } else if (request.action == rp::kFileWrite) {
    r.status = request.mode
                   ? tree->Write(request.path, request.data, static_cast<mode_t>(request.mode))
                   : tree->Write(request.path, request.data);
  } else if (request.action == rp::kFileRead || request.action == rp::kFileArchive) {
    auto data = request.action == rp::kFileRead ? tree->Read(request.path, request.limit)
                                                : tree->Archive(request.path, request.limit);
    if (data.ok()) {
      r.data = std::move(*data);
    } else {
      r.status = data.status();
    }
  } else {
    r.status = Status(StatusCode::kInvalidArgument, "unknown file action '" + request.action + "'");
  }
  return r;
}

}  // namespace bai::server
