// SPDX-License-Identifier: Apache-2.0
#include "server-reference/storage/tus.h"

#include "libbai/util/base64.h"
#include "server-reference/common/http/http.h"

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

std::optional<Concat> ParseConcat(std::string_view value) {
  Concat c;
  if (value == "partial") return c;
  constexpr std::string_view kFinal = "final;";
  if (value.substr(0, kFinal.size()) != kFinal) return std::nullopt;
  c.final = true;
  value.remove_prefix(kFinal.size());
  while (!value.empty()) {
    auto space = value.find(' ');
    std::string_view url = value.substr(0, space);
    value = space == std::string_view::npos ? std::string_view() : value.substr(space + 1);
    if (url.empty()) continue;
    auto q = url.find('?');
    if (q == std::string_view::npos) return std::nullopt;
    std::optional<std::int64_t> part;
    for (auto const& [key, v] : server::ParseQuery(url.substr(q + 1))) {
      if (key == "part") part = Number(v);
    }
    if (!part || *part > 1'000'000) return std::nullopt;
    c.parts.push_back(static_cast<int>(*part));
  }
  if (c.parts.empty()) return std::nullopt;
  return c;
}

PatchVerdict PlanPart(std::int64_t size, std::int64_t whole_bytes, std::vector<Part> const& parts,
                      std::optional<std::string> const& length) {
  auto n = length ? Number(*length) : std::nullopt;
  if (!n || *n == 0) {
    return Refuse(400, "storage/invalid-upload-length",
                  std::string("a part needs ") + kLengthHeader + ", a positive integer");
  }
  if (parts.empty() && whole_bytes > 0) {
    return Refuse(409, "storage/upload-sent-whole",
                  "this upload has " + std::to_string(whole_bytes) +
                      " bytes sent whole; go on from there (HEAD tells) or ask for a new ticket");
  }
  std::int64_t start = 0;
  for (auto const& p : parts) start += p.length;
  if (*n > size - start) {
    return Refuse(413, "storage/upload-too-large",
                  "the parts would pass the upload's declared size of " + std::to_string(size) +
                      " bytes (" + std::to_string(size - start) + " are left)");
  }
  PatchVerdict v;
  v.offset = start;
  v.length = *n;
  return v;
}

PatchVerdict CheckFinal(std::int64_t size, std::vector<Part> const& parts,
                        std::vector<int> const& named) {
  bool in_order = named.size() == parts.size();
  for (std::size_t i = 0; in_order && i < named.size(); ++i) {
    in_order = named[i] == static_cast<int>(i);
  }
  if (!in_order) {
    return Refuse(400, "storage/invalid-concatenation",
                  "the final upload names every part once, in the order they were made (" +
                      std::to_string(parts.size()) + " parts: part=0 to part=" +
                      std::to_string(static_cast<int>(parts.size()) - 1) + ")");
  }
  std::int64_t total = 0;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].received != parts[i].length) {
      return Refuse(409, "storage/part-unfinished",
                    "part=" + std::to_string(i) + " has " + std::to_string(parts[i].received) +
                        " of its " + std::to_string(parts[i].length) + " bytes");
    }
    total += parts[i].length;
  }
  if (total != size) {
    return Refuse(400, "storage/invalid-concatenation",
                  "the parts hold " + std::to_string(total) + " bytes but the file has " +
                      std::to_string(size));
  }
  PatchVerdict v;
  v.length = total;
  return v;
}

}  // namespace bai::storage::tus
