// ordo ppl --kld-base: writes the reference run's log-probabilities, or (--kld) scores a model
// against them and prints llama-perplexity's accuracy figures (ordo/kld.hpp).
#include "ppl_kld.hpp"

#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

#include "ordo/kld.hpp"
#include "ordo/output_file.hpp"
#include "progress.hpp"

namespace ordo::cli {

namespace {

std::string pm(double v, double e, int prec) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "%.*f ± %.*f", prec, v, prec, e);
  return buf;
}

std::string fixed(double v, int prec) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

}  // namespace

int run_kld(const Model& m, const KldArgs& a) {
  if (!a.compare) {
    const std::vector<int32_t> ids = m.encode(a.text, false);
    Progress pg("ordo ppl", 1);
    const int64_t n = write_kld_base(m, ids, a.ctx, a.chunks, a.base,
                                     [&](int64_t done, int64_t total) { pg.show("chunk ", done, " of ", total); });
    pg.finish();
    std::cout << "wrote " << a.base << ": log-probabilities of " << n << " tokens (ctx " << a.ctx << ")\n";
    return 0;
  }
  const std::vector<int32_t> ids = m.encode(a.text, false);
  Progress pg("ordo ppl", 1);
  const KldStats s = compare_kld_base(
      m, a.base, [&](int64_t done, int64_t total) { pg.show("chunk ", done, " of ", total); }, &ids);
  pg.finish();
  const double ratio_err = s.ppl_ratio() * s.ln_ratio_err;
  std::cout << "chunks " << s.chunks << " of ctx " << s.ctx << ", " << s.tokens << " tokens scored\n"
            << "PPL(base)              " << fixed(s.ppl_base, 4) << "\n"
            << "PPL(model)             " << fixed(s.ppl, 4) << "\n"
            << "PPL(model)/PPL(base)   " << pm(s.ppl_ratio(), ratio_err, 6) << "\n"
            << "Mean KLD               " << pm(s.kld, s.kld_err, 6) << "\n"
            << "Median KLD             " << fixed(s.kld_median, 6) << "\n"
            << "Maximum KLD            " << fixed(s.kld_max, 6) << "\n"
            << "Same top token         " << pm(100 * s.same_top, 100 * s.same_top_err, 3) << " %\n";
  if (!a.json_out.empty()) {
    const nlohmann::json j = {{"base", a.base},
                              {"ctx", s.ctx},
                              {"chunks", s.chunks},
                              {"tokens", s.tokens},
                              {"ppl_base", s.ppl_base},
                              {"ppl", s.ppl},
                              {"ppl_ratio", s.ppl_ratio()},
                              {"ppl_ratio_err", ratio_err},
                              {"kld_mean", s.kld},
                              {"kld_mean_err", s.kld_err},
                              {"kld_median", s.kld_median},
                              {"kld_max", s.kld_max},
                              {"same_top", s.same_top},
                              {"same_top_err", s.same_top_err}};
    write_file_atomic(a.json_out, j.dump(2) + "\n");
  }
  return 0;
}

}  // namespace ordo::cli
