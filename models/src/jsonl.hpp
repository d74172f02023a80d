// JSON Lines as the probes read them (word-order pairs, task suites): untrusted files, so every
// line is held to the JSON depth and size limits before it is parsed.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>

namespace ordo {

// f(object, where) for each non-blank line of `jsonl`; where = "<origin>:<line>: ". A line that is
// not JSON, or breaks the limits, is an Error starting with `where`; so is an nlohmann exception
// thrown by f (a missing field or a wrong type), followed by `expected`.
void for_each_jsonl_line(const std::string& jsonl, const std::string& origin, const std::string& expected,
                         const std::function<void(const nlohmann::json&, const std::string&)>& f);

}  // namespace ordo
