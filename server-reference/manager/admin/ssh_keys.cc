// SPDX-License-Identifier: Apache-2.0
#include "server-reference/manager/admin/ssh_keys.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

#include <memory>
#include <vector>

namespace bai::manager {

namespace {

void PutString(std::vector<unsigned char>& out, unsigned char const* data, std::size_t n) {
  for (int shift = 24; shift >= 0; shift -= 8)
    out.push_back(static_cast<unsigned char>(n >> shift));
  out.insert(out.end(), data, data + n);
}

// An SSH mpint: big-endian, a leading zero when the top bit is set.
bool PutMpint(std::vector<unsigned char>& out, BIGNUM const* bn) {
  std::vector<unsigned char> bytes(static_cast<std::size_t>(BN_num_bytes(bn)) + 1, 0);
  int n = BN_bn2bin(bn, bytes.data() + 1);
  if (n < 0) return false;
  bytes.resize(static_cast<std::size_t>(n) + 1);
  std::size_t start = (n > 0 && (bytes[1] & 0x80)) ? 0 : 1;
  PutString(out, bytes.data() + start, bytes.size() - start);
  return true;
}

Status Fail(char const* what) {
  return Status(StatusCode::kInternal, std::string("ssh keypair: ") + what);
}

}  // namespace

StatusOr<SshKeypair> GenerateSshKeypair() {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_RSA_gen(2048), EVP_PKEY_free);
  if (!key) return Fail("RSA key generation failed");
  BIGNUM* n = nullptr;
  BIGNUM* e = nullptr;
  if (!EVP_PKEY_get_bn_param(key.get(), OSSL_PKEY_PARAM_RSA_N, &n) ||
      !EVP_PKEY_get_bn_param(key.get(), OSSL_PKEY_PARAM_RSA_E, &e)) {
    BN_free(n);
    return Fail("cannot read the public key");
  }
  std::vector<unsigned char> blob;
  static constexpr char kType[] = "ssh-rsa";
  PutString(blob, reinterpret_cast<unsigned char const*>(kType), sizeof kType - 1);
  bool ok = PutMpint(blob, e) && PutMpint(blob, n);
  BN_free(n);
  BN_free(e);
  if (!ok) return Fail("cannot encode the public key");
  std::string b64(4 * ((blob.size() + 2) / 3) + 1, '\0');
  int len = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()), blob.data(),
                            static_cast<int>(blob.size()));
  b64.resize(static_cast<std::size_t>(len));
  SshKeypair out;
  out.public_key = std::string(kType) + " " + b64 + "\n";
  std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
  if (!bio || !PEM_write_bio_PrivateKey_traditional(bio.get(), key.get(), nullptr, nullptr, 0,
                                                    nullptr, nullptr)) {
    return Fail("cannot write the private key");
  }
  char* data = nullptr;
  long size = BIO_get_mem_data(bio.get(), &data);
  out.private_key.assign(data, static_cast<std::size_t>(size));
  return out;
}

Status CheckSshKeypair(std::string const& public_key, std::string const& private_key) {
  auto bad = [](std::string const& why) { return Status(StatusCode::kInvalidArgument, why); };
  std::string type = public_key.substr(0, public_key.find(' '));
  bool known = type == "ssh-rsa" || type == "ssh-ed25519" || type.rfind("ecdsa-sha2-", 0) == 0 ||
               type.rfind("sk-", 0) == 0;
  if (!known || type.size() == public_key.size()) {
    return bad("pubkey: an OpenSSH public key line (ssh-rsa AAAA…, ssh-ed25519 AAAA…)");
  }
  if (public_key.size() > 16 * 1024 || private_key.size() > 16 * 1024) {
    return bad("pubkey, privkey: at most 16 KiB each");
  }
  if (private_key.find("-----BEGIN ") == std::string::npos ||
      private_key.find("PRIVATE KEY-----") == std::string::npos) {
    return bad("privkey: a PEM or OpenSSH private key (-----BEGIN … PRIVATE KEY-----)");
  }
  return Status();
}

}  // namespace bai::manager
