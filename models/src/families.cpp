// The family registry: one line per architecture family (files under families/).
#include "family.hpp"

namespace ordo {

ModelSpec build_llama(const FamilyContext&);

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
      {"llama", {"llama", "mistral", "qwen2"}, build_llama},
  };
  return all;
}

}  // namespace ordo
