// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/tus_wire.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

/// The tus 1.0 core protocol (https://tus.io/protocols/resumable-upload, without the creation
/// extension, as Backend.AI's storage proxy speaks it) plus the checksum extension with sha256,
/// as pure decisions: what a request means for an upload, before any byte is written. The HTTP
/// shell reads the headers, asks here, writes, and answers what was decided.
namespace bai::storage::tus {

using namespace protocol::tus;  // the wire's names and values (bai/protocol/tus_wire.h)

/// An upload session: how large the file will be, how much of it is on the volume.
struct Upload {
  std::int64_t size = 0;
  std::int64_t offset = 0;
};

/// The request headers that matter (absent: nullopt).
struct PatchHeaders {
  std::optional<std::string> tus_resumable;
  std::optional<std::string> upload_offset;
  std::optional<std::string> content_type;
  std::optional<std::string> upload_checksum;  ///< "sha256 <Base64 of the digest>"
  std::optional<std::int64_t> content_length;  ///< nullopt: chunked (refused)
};

/// What to do with a PATCH.
struct PatchVerdict {
  int status = 204;     ///< 204: write `length` bytes at `offset`; else answer with this
  std::string problem;  ///< for errors: the problem type suffix ("storage/upload-offset-mismatch")
  std::string message;  ///< for errors: in words
  std::int64_t offset = 0;
  std::int64_t length = 0;
  std::string sha256;  ///< the 32-byte digest the chunk must have; empty: none asked
  bool ok() const { return status == 204; }
};

/// 412 without `Tus-Resumable: 1.0.0`; 415 for another Content-Type; 400 for a malformed or
/// missing `Upload-Offset` or checksum header, or a chunk without a length; 409 when
/// `Upload-Offset` is not the upload's offset (nothing written); 413 when the chunk would pass
/// the declared size; 400 for a checksum algorithm other than sha256.
PatchVerdict CheckPatch(Upload const& upload, PatchHeaders const& headers);

/// After the chunk was written: the checksum it had (raw digest) against the verdict's;
/// 460 "checksum mismatch" (tus checksum extension) when they differ. Ok otherwise.
PatchVerdict CheckChunkDigest(PatchVerdict const& verdict, std::string_view digest);

}  // namespace bai::storage::tus
