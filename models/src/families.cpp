// The family registry: one line per architecture family (files under families/).
#include "family.hpp"

namespace ordo {

ModelSpec build_llama(const FamilyContext&);
ModelSpec build_bert(const FamilyContext&);
ModelSpec build_t5(const FamilyContext&);
ModelSpec build_marian(const FamilyContext&);

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
      {"llama", {"llama", "mistral", "qwen2"}, build_llama},
      {"bert", {"bert"}, build_bert},
      {"t5", {"t5", "mt5"}, build_t5},
      {"marian", {"marian"}, build_marian},
  };
  return all;
}

}  // namespace ordo
