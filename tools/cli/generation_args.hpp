// The generation flags `ordo run` and `ordo chat` share, resolved against the model's
// generation_config.json (Model::generation_params).
#pragma once

#include <string>
#include <vector>

#include "common.hpp"

namespace ordo::cli {

struct GenerationArgs {
  int n = 128;
  float temp = 0.8f, top_p = 0.95f, min_p = 0.0f, repeat_penalty = 1.0f;
  int top_k = 40;
  int num_beams = 1, num_return = 1;
  double length_penalty = 1.0;
  std::string early_stopping;
  int64_t seed = -1;
  std::vector<std::string> stops;
  std::vector<int32_t> stop_ids;

  // Adds the flags to `c`; `beams`: the beam-search flags too (`ordo chat` streams one reply).
  void add(CLI::App* c, bool beams);
  void validate() const;
  // Flags given, else the model's generation_config.json, else ordo's defaults; unless `quiet`,
  // one stderr line names each setting used and where it came from. Stop ids given are added to
  // the model's EOS ids; a random seed when none was given.
  TextGenerateParams params(const Model& m, bool quiet) const;

 private:
  // The settings flags, to tell a flag given from its default.
  CLI::Option *n_opt_ = nullptr, *temp_opt_ = nullptr, *top_k_opt_ = nullptr, *top_p_opt_ = nullptr,
              *min_p_opt_ = nullptr, *penalty_opt_ = nullptr, *beams_opt_ = nullptr, *lp_opt_ = nullptr,
              *es_opt_ = nullptr, *return_opt_ = nullptr;
};

}  // namespace ordo::cli
