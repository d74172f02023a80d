// The generation flags of `ordo run` and `ordo chat` (see generation_args.hpp).
#include "generation_args.hpp"

#include <cmath>
#include <iostream>
#include <random>
#include <sstream>

namespace ordo::cli {

void GenerationArgs::add(CLI::App* c, bool beams) {
  // Settings left unset come from the model's generation_config.json (max_new_tokens or
  // max_length, do_sample, temperature, top_k, top_p, repetition_penalty, num_beams, ...), else
  // from the defaults shown; stderr says which were used and where each came from.
  const std::string from_config = " (default: generation_config.json's, else ";
  // Values are checked by validate(), in words (CLI11's range validators print their limits as
  // 300-digit numbers).
  n_opt_ = c->add_option("-n,--n-predict,--max-tokens", n, "Tokens to generate" + from_config + "128)");
  temp_opt_ = c->add_option("--temp", temp,
                            "Temperature; 0: greedy, > 0: sampling (default: generation_config.json's "
                            "do_sample/temperature/num_beams, else sampling at 0.8)");
  top_k_opt_ = c->add_option("--top-k", top_k, "Top-k, 0: off" + from_config + "40)");
  top_p_opt_ = c->add_option("--top-p", top_p, "Top-p nucleus, 1: off" + from_config + "0.95)");
  min_p_opt_ = c->add_option("--min-p", min_p,
                             "Min-p: drop tokens less likely than P x the most likely one, 0: off (as Hugging "
                             "Face's min_p, after top-k and top-p)" +
                                 from_config + "0)");
  penalty_opt_ = c->add_option("--repeat-penalty", repeat_penalty, "Repetition penalty, 1: off" + from_config + "1)");
  if (beams) {
    beams_opt_ = c->add_option("--num-beams", num_beams, "Beam search with N beams, 1: off" + from_config + "1)");
    lp_opt_ = c->add_option("--length-penalty", length_penalty,
                            "Beam search: hypotheses score sum logprob / length^X" + from_config + "1)");
    es_opt_ = c->add_option("--early-stopping", early_stopping,
                            "Beam search, as Hugging Face: true (or no value): stop once num_beams hypotheses are "
                            "done; never: only when none can improve; false: a heuristic" +
                                from_config + "false)")
                  ->expected(0, 1)
                  ->type_name("[true|false|never]");
    return_opt_ = c->add_option("--num-return-sequences", num_return,
                                "Beam search: print the K best hypotheses" + from_config + "1)");
  }
  c->add_option("-s,--seed", seed, "Sampling seed (default: random, printed on stderr as 'seed: N' to repeat the run)");
  c->add_option("--stop", stops, "Stop string (repeatable); the text ends before it");
  c->add_option("--stop-id", stop_ids,
                "Stop token id (repeatable, or comma-separated), besides the model's EOS ids; its text is not "
                "printed")
      ->delimiter(',');
}

void GenerationArgs::validate() const {
  const auto fail = [](const std::string& flag, const std::string& rule, double v) {
    std::ostringstream m;
    m << flag << " must be " << rule << ", got " << v;
    throw Error(m.str());
  };
  if (n < 0) fail("-n/--n-predict", "a count of tokens >= 0", n);
  if (!(temp >= 0 && std::isfinite(temp))) fail("--temp", "a number >= 0 (0: greedy)", temp);
  if (top_k < 0) fail("--top-k", ">= 0 (0: off)", top_k);
  if (!(top_p > 0 && top_p <= 1)) fail("--top-p", "in (0, 1] (1: off)", top_p);
  if (!(min_p >= 0 && min_p <= 1)) fail("--min-p", "in [0, 1] (0: off)", min_p);
  if (!(repeat_penalty > 0 && std::isfinite(repeat_penalty)))
    fail("--repeat-penalty", "a number > 0 (1: off)", repeat_penalty);
  if (!std::isfinite(length_penalty)) fail("--length-penalty", "a finite number", length_penalty);
  if (num_beams < 1) fail("--num-beams", ">= 1 (1: off)", num_beams);
  if (num_return < 1) fail("--num-return-sequences", ">= 1", num_return);
  if (seed < -1) fail("-s/--seed", ">= 0", static_cast<double>(seed));
  if (es_opt_ && *es_opt_ && !early_stopping.empty() && early_stopping != "true" && early_stopping != "false" &&
      early_stopping != "never")
    throw Error("--early-stopping must be true, false or never, got '" + early_stopping + "'");
  for (int32_t id : stop_ids)
    if (id < 0) throw Error("--stop-id must be a token id >= 0, got " + std::to_string(id));
}

TextGenerateParams GenerationArgs::params(const Model& m, bool quiet) const {
  const auto given = [](const CLI::Option* o) { return o != nullptr && o->count() > 0; };
  GenerationConfig flags;
  if (given(n_opt_)) flags.max_new_tokens = n;
  if (given(temp_opt_)) flags.temperature = temp;
  if (given(top_k_opt_)) flags.top_k = top_k;
  if (given(top_p_opt_)) flags.top_p = top_p;
  if (given(min_p_opt_)) flags.min_p = min_p;
  if (given(penalty_opt_)) flags.repetition_penalty = repeat_penalty;
  if (given(beams_opt_)) flags.num_beams = num_beams;
  if (given(lp_opt_)) flags.length_penalty = length_penalty;
  if (given(es_opt_))
    flags.early_stopping = early_stopping == "never"   ? EarlyStopping::Never
                           : early_stopping == "false" ? EarlyStopping::Heuristic
                                                       : EarlyStopping::OnFull;
  if (given(return_opt_)) flags.num_return_sequences = num_return;
  std::vector<GenerationSetting> used;
  TextGenerateParams p = m.generation_params(flags, &used);
  if (!quiet) {
    std::cerr << "[settings:";
    for (size_t i = 0; i < used.size(); ++i)
      std::cerr << (i ? ", " : " ") << used[i].name << " " << used[i].value << " (" << used[i].source << ")";
    std::cerr << "]\n";
  }
  if (!stop_ids.empty()) {
    p.stop_ids = m.spec().eos_ids;
    p.stop_ids.insert(p.stop_ids.end(), stop_ids.begin(), stop_ids.end());
  }
  p.sampling.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}();
  // A sampled run names its seed so that -s repeats it (greedy and beam search use none).
  if (!quiet && p.sampling.temperature > 0 && p.beams.num_beams <= 1) std::cerr << "seed: " << p.sampling.seed << "\n";
  p.stop_strings = stops;
  return p;
}

}  // namespace ordo::cli
