// A user's program: only the installed headers and libbai.so.
#include <bai/bai.h>

#include <iostream>

int main() {
  bai::protocol::SigningInput in;
  in.method = "POST";
  in.request_target = "/session";
  in.date = "2024-03-15T12:34:56+00:00";
  in.host = "api.example.com";
  in.content_type = "application/json";
  in.api_version = "v8.20240315";
  auto sig = bai::protocol::Sign(in, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY");
  if (!sig.ok() || *sig != "07977322a70154eab27bb5fac27132d2362906c8b1607beca3ea746e0abf0e66") {
    std::cerr << "signature mismatch\n";
    return 1;
  }
  auto client = bai::Client::Create(bai::Options{});
  if (!client.ok()) return 1;
  std::cout << "libbai " << bai::LibraryVersion() << " ok\n";
  return 0;
}
