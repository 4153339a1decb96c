// SPDX-License-Identifier: Apache-2.0
#pragma once
// The part of Backend.AI 24.09's Graphene schema this manager serves (PROTOCOL.md §8): sessions
// and their containers, the caller's keypair, images, resource groups, agents. Field names and
// types follow 24.09 so its clients' queries validate unchanged; what a field holds is filled by
// the resolvers (api/graphql_handlers.cc).

#include "server-reference/manager/graphql/schema.h"

namespace bai::graphql {

Schema const& BackendAiSchema();

}  // namespace bai::graphql
