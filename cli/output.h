// SPDX-License-Identifier: Apache-2.0
#pragma once
// How every command prints: tables (or CSV under -o csv), JSON documents with their exit code,
// the quiet "done" of a command that changed something, and numbers as people read them.

#include "bai/protocol/resource.h"

#include "cli/context.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace bai::cli {

/// Left-aligned columns, two spaces apart (the first row is the header); RFC 4180 CSV under
/// -o csv.
void PrintTable(Context& ctx, std::vector<std::vector<std::string>> const& rows);

/// One JSON document on a line, with "exit_code": 0 (-o json's contract).
void PrintJson(Context& ctx, nlohmann::json doc);

/// Prints `{"exit_code": 0}` under -o json, else `words` when stdout is a terminal.
void PrintDone(Context& ctx, std::string const& words);

/// "yes" or "no".
std::string YesNo(bool b);

/// "1.5 MiB": a byte count as people read it.
std::string HumanBytes(double bytes);

/// A slot amount as people read it: a bytes slot (mem, cuda.mem, … by KnownSlotType) in the
/// binary units `-r` takes ("1G", "1.5G", "512M", "100"; at most two decimals, so not always
/// exact: `-o json` has the exact numbers), any other as it is ("2", "0.5").
std::string HumanSlotAmount(std::string const& slot, protocol::Decimal const& amount);
/// "cpu=2 mem=1G cuda.shares=0.5"; "-" when empty.
std::string HumanSlots(protocol::ResourceSlots const& slots);
/// "1h02m", "3m05s", "42s": a time left.
std::string HumanSeconds(double seconds);

}  // namespace bai::cli
