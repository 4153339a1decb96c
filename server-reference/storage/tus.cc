// SPDX-License-Identifier: Apache-2.0
#include "server-reference/storage/tus.h"

#include "libbai/util/base64.h"

#include <charconv>

namespace bai::storage::tus {
namespace {

PatchVerdict Refuse(int status, std::string problem, std::string message) {
  PatchVerdict v;
  v.status = status;
  v.problem = std::move(problem);
  v.message = std::move(message);
  return v;
}

std::optional<std::int64_t> Number(std::string_view text) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

PatchVerdict CheckPatch(Upload const& upload, PatchHeaders const& h) {
  if (h.tus_resumable != kVersion) {
    return Refuse(412, "storage/tus-version",
                  std::string(kResumableHeader) + ": " + kVersion + " is required");
  }
  std::string type = h.content_type.value_or("");
  type = type.substr(0, type.find(';'));
  while (!type.empty() && type.back() == ' ') type.pop_back();
  if (type != kChunkType) {
    return Refuse(415, "storage/unsupported-media-type",
                  "a chunk is sent as Content-Type: " + std::string(kChunkType));
  }
  auto offset = h.upload_offset ? Number(*h.upload_offset) : std::nullopt;
  if (!offset) {
    return Refuse(400, "storage/invalid-upload-offset",
                  std::string(kOffsetHeader) + " must be a non-negative integer");
  }
  if (!h.content_length) {
    return Refuse(400, "storage/length-required", "a chunk needs a Content-Length");
  }
  if (*offset != upload.offset) {
    return Refuse(409, "storage/upload-offset-mismatch",
                  std::string(kOffsetHeader) + " is " + std::to_string(*offset) +
                      " but the upload has " + std::to_string(upload.offset) +
                      " bytes; resume from there (HEAD tells)");
  }
  if (*h.content_length > upload.size - upload.offset) {
    return Refuse(413, "storage/upload-too-large",
                  "the chunk would pass the upload's declared size of " +
                      std::to_string(upload.size) + " bytes");
  }
  PatchVerdict v;
  v.offset = *offset;
  v.length = *h.content_length;
  if (h.upload_checksum) {
    std::string_view c = *h.upload_checksum;
    auto space = c.find(' ');
    if (space == std::string_view::npos) {
      return Refuse(400, "storage/invalid-checksum",
                    std::string(kChecksumHeader) + " is '" + kChecksumAlgorithm + " <Base64>'");
    }
    if (c.substr(0, space) != kChecksumAlgorithm) {
      return Refuse(400, "storage/unsupported-checksum",
                    std::string("only ") + kChecksumAlgorithm + " checksums are supported (" +
                        kChecksumAlgorithmHeader + ")");
    }
    auto digest = internal::Base64Decode(c.substr(space + 1));
    if (!digest || digest->size() != 32) {
      return Refuse(400, "storage/invalid-checksum", "the sha256 digest is not 32 bytes in Base64");
    }
    v.sha256 = *digest;
  }
  return v;
}

PatchVerdict CheckChunkDigest(PatchVerdict const& verdict, std::string_view digest) {
  if (verdict.sha256.empty() || verdict.sha256 == digest) return verdict;
  return Refuse(
      460, "storage/checksum-mismatch",
      std::string("the chunk's digest differs from ") + kChecksumHeader + "; it was not kept");
}

}  // namespace bai::storage::tus
