// SPDX-License-Identifier: Apache-2.0
#pragma once

#include "bai/protocol/tus_wire.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

/// The tus 1.0 core protocol (https://tus.io/protocols/resumable-upload, without the creation
/// extension, as Backend.AI's storage proxy speaks it) plus the checksum extension with sha256
/// and the concatenation extension (uploads in parallel parts),
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

// The concatenation extension, as bai takes it: an upload session (made by a ticket) may be
// sent as parts in parallel, each a tus upload of its own at `?token=T&part=K`. `POST` with
// `Upload-Concat: partial` and `Upload-Length: n` makes the next part, whose bytes follow the
// earlier parts' in the file (parts are placed in the order they are made, so nothing is copied
// at the end); `POST` with `Upload-Concat: final;URL…`, naming every part in that order, makes
// the file whole. A whole-file PATCH at offset 0 takes the session back from its parts.

/// A part of an upload: where its bytes go in the file, how many, how many came.
struct Part {
  std::int64_t start = 0;
  std::int64_t length = 0;
  std::int64_t received = 0;
};

/// An Upload-Concat value: "partial", or "final;" and the parts' URLs (space-separated), each
/// naming its part with `part=K` in its query.
struct Concat {
  bool final = false;
  std::vector<int> parts;  ///< final: the part numbers in the order named
};
/// nullopt for a malformed value (an unknown kind, a URL without `part=K`, no URL at all).
std::optional<Concat> ParseConcat(std::string_view value);

/// Where a new part of `length` (the Upload-Length header) goes after `parts` in an upload of
/// `size` bytes that has `whole_bytes` sent whole: the verdict's `offset` is its start. 400 for
/// a missing or malformed length or an empty part; 413 when the parts would pass the size; 409
/// when bytes were sent whole (a session is sent one way at a time).
PatchVerdict PlanPart(std::int64_t size, std::int64_t whole_bytes, std::vector<Part> const& parts,
                      std::optional<std::string> const& length);

/// Whether a final request ends the upload: every part named once, in the order made, each
/// whole, together the file's size. 400 for parts named out of order or missing, 409 for a part
/// not yet whole (its URL in the message), 400 for parts that do not make the size.
PatchVerdict CheckFinal(std::int64_t size, std::vector<Part> const& parts,
                        std::vector<int> const& named);

}  // namespace bai::storage::tus
