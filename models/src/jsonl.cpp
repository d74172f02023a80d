// JSON Lines reading for the probes' data files, each line held to the JSON limits.
#include "jsonl.hpp"

#include <sstream>

#include "ordo/input.hpp"

namespace ordo {

void for_each_jsonl_line(const std::string& jsonl, const std::string& origin, const std::string& expected,
                         const std::function<void(const nlohmann::json&, const std::string&)>& f) {
  std::istringstream in(jsonl);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string where = origin + ":" + std::to_string(n) + ": ";
    check_json_limits(line, where.substr(0, where.size() - 2));
    try {
      f(nlohmann::json::parse(line), where);
    } catch (const nlohmann::json::exception& e) {
      throw Error(where + "expected " + expected + ": " + e.what());
    }
  }
}

}  // namespace ordo
