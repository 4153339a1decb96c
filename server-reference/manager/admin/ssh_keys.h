// SPDX-License-Identifier: Apache-2.0
#pragma once
// A user's SSH keypair (`/auth/ssh-keypair`), made as 24.09 makes it: RSA 2048, the public key
// in OpenSSH's one-line form, the private key as a traditional PEM ("BEGIN RSA PRIVATE KEY").

#include "bai/status.h"

#include <string>

namespace bai::manager {

struct SshKeypair {
  std::string public_key;   ///< "ssh-rsa AAAA…\n"
  std::string private_key;  ///< "-----BEGIN RSA PRIVATE KEY-----\n…"
};

StatusOr<SshKeypair> GenerateSshKeypair();

/// Whether `text` looks like an OpenSSH public key line ("ssh-rsa", "ssh-ed25519",
/// "ecdsa-sha2-*" then base64) and `private_key` like a PEM or OpenSSH private key block: what
/// an upload must be (24.09 stores anything).
Status CheckSshKeypair(std::string const& public_key, std::string const& private_key);

}  // namespace bai::manager
