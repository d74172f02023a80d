// ModelSpec's helpers: graph kind names and the parameter count.
#include <algorithm>
#include <vector>

#include "ordo/spec.hpp"

namespace ordo {

const char* graph_kind_name(GraphKind g) {
  switch (g) {
    case GraphKind::Decoder: return "decoder";
    case GraphKind::Encoder: return "encoder";
    case GraphKind::EncoderDecoder: return "encoder-decoder";
  }
  return "?";
}

int64_t ModelSpec::parameter_count() const {
  std::vector<const void*> seen;
  int64_t n = 0;
  auto add = [&](const Tensor& t) {
    if (t.empty() || std::find(seen.begin(), seen.end(), t.data) != seen.end()) return;
    seen.push_back(t.data);
    n += t.numel();
  };
  auto add_lin = [&](const Linear& l) {
    if (l.weight.empty() && l.panels) {  // values released after packing: the panels stand for them
      if (std::find(seen.begin(), seen.end(), l.panels.get()) == seen.end()) {
        seen.push_back(l.panels.get());
        n += l.weight.numel();
      }
    } else {
      add(l.weight);
    }
    add(l.bias);
  };
  auto add_norm = [&](const Norm& m) {
    add(m.weight);
    add(m.bias);
  };
  add(tok_embed);
  add(token_type_embed);
  add_norm(embed_norm);
  for (const Stack* st : {&encoder, &decoder}) {
    for (const Layer& l : st->layers)
      for (const Norm* m : {&l.attn_norm, &l.cross_norm, &l.ffn_norm}) add_norm(*m);
    add_norm(st->final_norm);
    for (const auto& named : st->position.tensors) add(named.second);
  }
  for_each_linear(add_lin);
  add(final_logits_bias);
  return n;
}

}  // namespace ordo
