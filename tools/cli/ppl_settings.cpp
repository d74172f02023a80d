// ordo ppl's --scaling list parsed into settings.
#include "ppl_settings.hpp"

#include <cstdlib>
#include <sstream>

#include "common.hpp"
#include "usage.hpp"

namespace ordo::cli {
namespace {

// "self-extend[:G[:W]]" / "sinks[:K[:N]]" → s; false for any other type.
bool parse_extension_setting(const std::string& item, Setting& s) {
  std::vector<std::string> parts;
  std::stringstream ps(item);
  for (std::string p; std::getline(ps, p, ':');) parts.push_back(p);
  if (parts.empty() || (parts[0] != "self-extend" && parts[0] != "sinks")) return false;
  (parts[0] == "sinks" ? s.sinks : s.self_extend) = true;
  if (parts.size() > 3) throw Error("--scaling: '" + item + "' has more than two parameters");
  for (size_t i = 1; i < parts.size(); ++i) {
    char* end = nullptr;
    const long long v = std::strtoll(parts[i].c_str(), &end, 10);
    const long long lo = s.sinks && i == 1 ? 0 : 1;
    if (parts[i].empty() || *end || v < lo || v > kMaxExtensionValue)
      throw Error("--scaling: '" + parts[i] + "' in '" + item + "' is not an integer in [" + std::to_string(lo) + ", " +
                  std::to_string(kMaxExtensionValue) + "]");
    (i == 1 ? s.a : s.b) = v;
  }
  return true;
}

}  // namespace

std::vector<Setting> parse_settings(const std::string& list) {
  std::vector<Setting> out;
  std::stringstream ss(list);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    Setting s;
    s.label = item;
    if (parse_extension_setting(item, s)) {
      out.push_back(s);
      continue;
    }
    const size_t colon = item.find(':');
    const std::string type = item.substr(0, colon);
    if (type == "model") {
      s.from_model = true;
    } else {
      check_scaling_name("--scaling", type);
      s.type = parse_scaling(type);
    }
    if (colon != std::string::npos) {
      const std::string f = item.substr(colon + 1);
      char* end = nullptr;
      s.factor = std::strtod(f.c_str(), &end);
      if (*end || !(s.factor > 0 && s.factor <= kMaxScalingFactor))
        throw Error("--scaling: factor '" + f + "' in '" + item + "' is not a number in (0, " +
                    std::to_string(static_cast<int>(kMaxScalingFactor)) + "]");
    }
    out.push_back(s);
  }
  if (out.empty()) throw Error("--scaling: empty list");
  return out;
}

}  // namespace ordo::cli
