// SPDX-License-Identifier: Apache-2.0
#include "bai/protocol/tus_wire.h"

#include <openssl/evp.h>
#include <openssl/sha.h>

namespace bai::protocol::tus {

std::string Sha256(std::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<unsigned char const*>(data.data()), data.size(), digest);
  return std::string(reinterpret_cast<char*>(digest), sizeof digest);
}

std::string ChunkChecksum(std::string_view data) {
  std::string digest = Sha256(data);
  std::string b64(4 * ((digest.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()),
                          reinterpret_cast<unsigned char const*>(digest.data()),
                          static_cast<int>(digest.size()));
  b64.resize(static_cast<std::size_t>(n));
  return std::string(kChecksumAlgorithm) + " " + b64;
}

}  // namespace bai::protocol::tus
