// SPDX-License-Identifier: Apache-2.0
#pragma once
// Uploads on the wire: the tus 1.0 core protocol with the checksum extension
// (sha256), as Backend.AI's storage proxy speaks it, and the concatenation extension (bai's). One
// definition for the SDK, which sends chunks, and the storage proxy, which checks them
// (server-reference/storage/tus.h).

#include "bai/export.h"

#include <string>
#include <string_view>

namespace bai::protocol::tus {

inline constexpr char kVersion[] = "1.0.0";
inline constexpr char kChunkType[] = "application/offset+octet-stream";
inline constexpr char kChecksumAlgorithm[] = "sha256";
inline constexpr char kChecksumExtension[] = "checksum";
/// tus's concatenation extension: bai's storage proxy takes an upload in parts sent in parallel
/// (docs/adr/0012-storage.md, "Uploads in parts").
inline constexpr char kConcatenationExtension[] = "concatenation";

// Header names (compared without regard to case).
inline constexpr char kResumableHeader[] = "Tus-Resumable";
inline constexpr char kVersionHeader[] = "Tus-Version";
inline constexpr char kMaxSizeHeader[] = "Tus-Max-Size";
inline constexpr char kExtensionHeader[] = "Tus-Extension";
inline constexpr char kChecksumAlgorithmHeader[] = "Tus-Checksum-Algorithm";
inline constexpr char kOffsetHeader[] = "Upload-Offset";
inline constexpr char kLengthHeader[] = "Upload-Length";
inline constexpr char kChecksumHeader[] = "Upload-Checksum";
inline constexpr char kConcatHeader[] = "Upload-Concat";

/// The raw 32-byte SHA-256 digest of `data`.
BAI_EXPORT std::string Sha256(std::string_view data);
/// A chunk's Upload-Checksum value: "sha256 <Base64 of its digest>".
BAI_EXPORT std::string ChunkChecksum(std::string_view data);

}  // namespace bai::protocol::tus
