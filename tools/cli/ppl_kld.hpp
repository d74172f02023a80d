// `ordo ppl --kld-base FILE [--kld]`: the KL-divergence mode of ordo ppl (ppl_kld.cpp).
#pragma once

#include <string>

#include "common.hpp"

namespace ordo::cli {

struct KldArgs {
  std::string base, text, json_out;
  bool compare = false;  // --kld: score against the base; otherwise write it
  int64_t ctx = 512, chunks = 0;
};

int run_kld(const Model& m, const KldArgs& a);

}  // namespace ordo::cli
