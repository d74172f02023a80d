// KL divergence against a saved reference run (ordo/kld.hpp). Base file layout, little-endian:
// "ORDOKLD1", u64 ctx, u64 vocab, u64 chunks, then chunks·ctx i32 token ids, then for each chunk
// its ctx - ctx/2 - 1 scored rows of vocab F32 log-probabilities.
#include "ordo/kld.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>

#include "ordo/finite.hpp"
#include "ordo/ordo.hpp"
#include "ordo/output_file.hpp"

namespace ordo {
namespace {

constexpr char kMagic[8] = {'O', 'R', 'D', 'O', 'K', 'L', 'D', '1'};

// Rows first..ctx-2 of a chunk predict tokens first+1..ctx-1; first = ctx/2 as llama-perplexity.
int64_t first_scored(int64_t ctx) { return ctx / 2; }

// The chunk's ids with its first replaced by BOS when the model's tokenizer adds one.
std::vector<int32_t> chunk_ids(const Model& m, const int32_t* ids, int64_t ctx) {
  std::vector<int32_t> c(ids, ids + ctx);
  const std::vector<int32_t> bos = m.encode("", true);
  if (!bos.empty()) c[0] = bos[0];
  return c;
}

// log-softmax of one row, in double for the sum.
void log_softmax(const float* x, int64_t n, std::vector<float>& out) {
  float mx = x[0];
  for (int64_t i = 1; i < n; ++i) mx = std::max(mx, x[i]);
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += std::exp(static_cast<double>(x[i] - mx));
  const double lse = static_cast<double>(mx) + std::log(s);
  out.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(static_cast<double>(x[i]) - lse);
}

template <typename T>
void put(OutputFile& f, T v) {
  f.write(&v, sizeof v);
}

int64_t argmax(const float* x, int64_t n) { return std::max_element(x, x + n) - x; }

}  // namespace

double kl_divergence(const float* base, const float* model, int64_t n, int64_t position) {
  double kl = 0;
  for (int64_t v = 0; v < n; ++v)
    if (base[v] != -std::numeric_limits<float>::infinity())  // p = 0: 0 · log 0 = 0
      kl += std::exp(static_cast<double>(base[v])) * (static_cast<double>(base[v]) - model[v]);
  if (!std::isfinite(kl))
    throw NonFiniteError("KL divergence at token position " + std::to_string(position) + " is " +
                         value_str(static_cast<float>(kl)) +
                         ": the base's or the model's log-probabilities are not finite");
  // Rounding can leave a divergence near zero slightly negative; anything more is not a divergence.
  if (kl < 0 && kl > -1e-4) return 0;
  if (kl < 0)
    throw Error("KL divergence at token position " + std::to_string(position) + " is " + std::to_string(kl) +
                ": the base's log-probabilities do not sum to one");
  return kl;
}

double KldStats::ppl_ratio() const { return std::exp(ln_ratio); }

int64_t write_kld_base(const Model& m, const std::vector<int32_t>& ids, int64_t ctx, int64_t max_chunks,
                       const std::string& path, const KldProgress& progress) {
  if (ctx < 4) throw Error("KL divergence: ctx " + std::to_string(ctx) + " must be at least 4");
  int64_t chunks = static_cast<int64_t>(ids.size()) / ctx;
  if (max_chunks > 0) chunks = std::min(chunks, max_chunks);
  if (chunks < 1)
    throw Error("KL divergence: the text has " + std::to_string(ids.size()) + " tokens, fewer than one chunk of " +
                std::to_string(ctx));
  OutputFile f(path);
  f.write(kMagic, sizeof kMagic);
  int64_t vocab = 0, scored = 0;
  std::vector<std::vector<int32_t>> all;
  for (int64_t c = 0; c < chunks; ++c) all.push_back(chunk_ids(m, ids.data() + c * ctx, ctx));
  std::vector<float> lp;
  for (int64_t c = 0; c < chunks; ++c) {
    const Tensor logits = m.forward(all[c]).logits;
    if (c == 0) {  // the header needs the vocabulary, known from the first forward
      vocab = logits.dim(1);
      put<uint64_t>(f, static_cast<uint64_t>(ctx));
      put<uint64_t>(f, static_cast<uint64_t>(vocab));
      put<uint64_t>(f, static_cast<uint64_t>(chunks));
      for (const auto& ch : all) f.write(ch.data(), ch.size() * sizeof(int32_t));
    }
    for (int64_t j = first_scored(ctx); j < ctx - 1; ++j, ++scored) {
      check_finite_row(logits.f32() + j * vocab, vocab, c * ctx + j);  // a NaN base would score as KLD 0
      log_softmax(logits.f32() + j * vocab, vocab, lp);
      f.write(lp.data(), lp.size() * sizeof(float));
    }
    if (progress) progress(c + 1, chunks);
  }
  f.commit();
  return scored;
}

namespace {

struct BaseReader {
  std::ifstream in;
  std::string path;
  uint64_t ctx = 0, vocab = 0, chunks = 0;
  std::vector<int32_t> ids;

  explicit BaseReader(const std::string& p) : in(p, std::ios::binary), path(p) {
    if (!in) throw Error(path + ": cannot open the KL divergence base");
    char magic[8];
    if (!in.read(magic, 8) || std::memcmp(magic, kMagic, 8) != 0)
      throw Error(path + ": not an ordo KL divergence base (write one with `ordo ppl --kld-base FILE`)");
    read(&ctx, 8, "header");
    read(&vocab, 8, "header");
    read(&chunks, 8, "header");
    if (ctx < 4 || ctx > (1u << 24) || vocab < 1 || vocab > (1u << 24) || chunks < 1 || chunks > (1u << 24))
      throw Error(path + ": header (ctx " + std::to_string(ctx) + ", vocab " + std::to_string(vocab) + ", chunks " +
                  std::to_string(chunks) + ") out of range");
    check_size();
    ids.resize(ctx * chunks);
    read(ids.data(), ids.size() * 4, "token ids");
  }
  // The file holds exactly what the header says (write_kld_base's layout), checked before anything
  // is allocated: a corrupt header would otherwise ask for up to 2^48 ids. Computed by division, as
  // chunks·rows·vocab·4 can pass 2^64.
  void check_size() {
    std::error_code ec;
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec) throw Error(path + ": cannot read its size (" + ec.message() + ")");
    const uint64_t id_bytes = ctx * chunks * 4, row_bytes = vocab * 4;
    const uint64_t rows = chunks * static_cast<uint64_t>(ctx - first_scored(static_cast<int64_t>(ctx)) - 1);
    const std::string head = " (header: ctx " + std::to_string(ctx) + ", vocab " + std::to_string(vocab) + ", chunks " +
                             std::to_string(chunks) + "; file " + std::to_string(size) + " bytes)";
    if (size < 32 + id_bytes) throw Error(path + ": truncated (token ids)" + head);
    const uint64_t rest = size - 32 - id_bytes;
    if (rest / row_bytes < rows) throw Error(path + ": truncated (log-probabilities)" + head);
    if (rest / row_bytes > rows || rest % row_bytes != 0)
      throw Error(path + ": trailing bytes after the log-probabilities" + head);
  }
  void read(void* dst, size_t n, const char* what) {
    if (!in.read(static_cast<char*>(dst), static_cast<std::streamsize>(n)))
      throw Error(path + ": truncated (" + what + ")");
  }
};

}  // namespace

namespace {

// The base's ids against the scored model's encoding of the text (compare_kld_base's text_ids).
void check_same_tokens(const Model& m, const std::string& path, const std::vector<int32_t>& base_ids, int64_t ctx,
                       const std::vector<int32_t>& text_ids) {
  const auto piece = [&m](int32_t id) {
    std::string p;
    try {
      p = m.decode({id});
    } catch (const Error&) {
      p = "?";
    }
    return " ('" + p + "')";
  };
  for (size_t i = 0; i < base_ids.size(); ++i) {
    if (i % static_cast<size_t>(ctx) == 0) continue;  // the chunk's BOS
    if (i >= text_ids.size())
      throw Error(path + ": the base holds " + std::to_string(base_ids.size()) + " tokens, the text only " +
                  std::to_string(text_ids.size()) + " for this model: it was made from another text");
    if (base_ids[i] != text_ids[i])
      throw Error(path + ": token " + std::to_string(i) + " of the text is id " + std::to_string(base_ids[i]) +
                  piece(base_ids[i]) + " in the base but id " + std::to_string(text_ids[i]) + piece(text_ids[i]) +
                  " for this model: the base was made from another text or with another tokenizer");
  }
}

}  // namespace

KldStats compare_kld_base(const Model& m, const std::string& path, const KldProgress& progress,
                          const std::vector<int32_t>* text_ids) {
  BaseReader b(path);
  if (text_ids) check_same_tokens(m, path, b.ids, static_cast<int64_t>(b.ctx), *text_ids);
  KldStats s;
  s.ctx = static_cast<int64_t>(b.ctx);
  s.chunks = static_cast<int64_t>(b.chunks);
  const int64_t ctx = s.ctx, vocab = static_cast<int64_t>(b.vocab);
  std::vector<double> klds, ratios;
  double nll_base = 0, nll = 0;
  int64_t same = 0;
  std::vector<float> base(static_cast<size_t>(vocab)), lq;
  for (int64_t c = 0; c < s.chunks; ++c) {
    const std::vector<int32_t> chunk(b.ids.begin() + c * ctx, b.ids.begin() + (c + 1) * ctx);
    const Tensor logits = m.forward(chunk).logits;
    if (logits.dim(1) != vocab)
      throw Error(path + ": the base has a vocabulary of " + std::to_string(vocab) + ", the model " +
                  std::to_string(logits.dim(1)));
    for (int64_t j = first_scored(ctx); j < ctx - 1; ++j) {
      b.read(base.data(), base.size() * 4, "log-probabilities");
      log_softmax(logits.f32() + j * vocab, vocab, lq);
      check_finite_row(logits.f32() + j * vocab, vocab, c * ctx + j);
      const double kl = kl_divergence(base.data(), lq.data(), vocab, c * ctx + j);
      const int32_t next = chunk[j + 1];
      if (next < 0 || next >= vocab) throw Error(path + ": token id " + std::to_string(next) + " out of range");
      nll_base -= base[next];
      nll -= lq[next];
      ratios.push_back(static_cast<double>(base[next]) - lq[next]);
      klds.push_back(kl);
      same += argmax(base.data(), vocab) == argmax(lq.data(), vocab);
    }
    if (progress) progress(c + 1, s.chunks);
  }
  const double n = static_cast<double>(klds.size());
  s.tokens = static_cast<int64_t>(klds.size());
  auto mean_err = [n](const std::vector<double>& x, double& mean, double& err) {
    double sum = 0, sq = 0;
    for (double v : x) sum += v, sq += v * v;
    mean = sum / n;
    err = n > 1 ? std::sqrt(std::max(0.0, (sq / n - mean * mean) / (n - 1))) : 0;
  };
  mean_err(klds, s.kld, s.kld_err);
  mean_err(ratios, s.ln_ratio, s.ln_ratio_err);
  s.ppl_base = std::exp(nll_base / n);
  s.ppl = std::exp(nll / n);
  s.same_top = static_cast<double>(same) / n;
  s.same_top_err = n > 1 ? std::sqrt(s.same_top * (1 - s.same_top) / (n - 1)) : 0;
  std::vector<double> sorted = klds;
  std::sort(sorted.begin(), sorted.end());
  s.kld_median = sorted[sorted.size() / 2];
  s.kld_max = sorted.back();
  return s;
}

}  // namespace ordo
