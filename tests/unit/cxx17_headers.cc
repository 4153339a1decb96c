// SPDX-License-Identifier: Apache-2.0
// Compiled with -std=c++17: every public header must work for C++17 research code.
#include "bai/bai.h"
#include "bai/mocks/mock_transport.h"

#include <gtest/gtest.h>

static_assert(__cplusplus == 201703L, "this file must be compiled as C++17");

TEST(Cxx17HeadersTest, PublicApiUsableFromCxx17) {
  bai::Options options;
  options.endpoints = {"http://127.0.0.1:1"};
  auto client = bai::Client::Create(options);
  EXPECT_TRUE(client.ok());
  auto v = bai::protocol::ApiVersion::Parse("v8.20240915");
  EXPECT_TRUE(v.has_value());
  auto d = bai::protocol::Decimal::Parse("1.5");
  EXPECT_TRUE(d.ok());
}
