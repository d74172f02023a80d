// The family registry: one line per architecture family (files under families/).
#include "family_context.hpp"

namespace ordo {

ModelSpec build_llama(const FamilyContext&);
ModelSpec build_gpt2(const FamilyContext&);
ModelSpec build_opt(const FamilyContext&);
ModelSpec build_gpt_neox(const FamilyContext&);
ModelSpec build_gptj(const FamilyContext&);
ModelSpec build_bloom(const FamilyContext&);
ModelSpec build_mpt(const FamilyContext&);
ModelSpec build_bert(const FamilyContext&);
ModelSpec build_t5(const FamilyContext&);
ModelSpec build_marian(const FamilyContext&);
ModelSpec build_zoo(const FamilyContext&);

const std::vector<Family>& families() {
  static const std::vector<Family> all = {
      {"llama", {"llama", "mistral", "qwen2"}, build_llama},
      {"gpt2", {"gpt2"}, build_gpt2},
      {"opt", {"opt"}, build_opt},
      {"gpt_neox", {"gpt_neox"}, build_gpt_neox},
      {"gptj", {"gptj"}, build_gptj},
      {"bloom", {"bloom"}, build_bloom},
      {"mpt", {"mpt"}, build_mpt},
      {"bert", {"bert"}, build_bert},
      {"t5", {"t5", "mt5"}, build_t5},
      {"marian", {"marian"}, build_marian},
      {"zoo", {"ordo-zoo"}, build_zoo},
  };
  return all;
}

}  // namespace ordo
