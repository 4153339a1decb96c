// SPDX-License-Identifier: Apache-2.0
// Lists the caller's sessions a page at a time (GraphQL underneath), one "name status" line
// each, and says which server answered (Client::server(): research code branches on its named
// features, never on version numbers). Usage: list_sessions [FILTER]
// e.g. list_sessions 'name ilike "train%"'
#include <bai/bai.h>

#include <iostream>

int main(int argc, char** argv) {
  auto config = bai::ResolveConfig({});
  if (!config.ok()) {
    std::cerr << config.status().message() << "\n";
    return 1;
  }
  auto options = config->ToOptions();
  auto client = options.ok() ? bai::Client::Create(*options) : options.status();
  if (!client.ok()) {
    std::cerr << client.status().message() << "\n";
    return 1;
  }
  auto server = client->server();
  if (!server.ok()) {
    std::cerr << server.status().message() << "\n";
    return 1;
  }
  bool bai_manager = server->kind == bai::ServerCapabilities::Kind::kBai;
  std::cerr << (bai_manager ? "" : "Backend.AI ") << server->manager << " (API "
            << server->api_version << ")"
            << (server->has("session-priority") ? ", sessions have priorities" : "") << "\n";
  bai::SessionListOptions list;
  if (argc > 1) list.filter = argv[1];
  list.page_size = 2;  // small pages, to show the paging
  auto pages = bai::SessionClient(*client).List(list);
  int pages_read = 0;
  while (!pages.done()) {
    auto page = pages.Next();
    if (!page.ok()) {
      std::cerr << page.status().message() << "\n";
      return 1;
    }
    if (!page->empty()) ++pages_read;
    for (auto const& s : *page) std::cout << s.name << " " << s.status.text << "\n";
  }
  std::cerr << pages.total_count() << " sessions in " << pages_read << " pages\n";
  return 0;
}
