// Unigram model: Viterbi over the pieces' log-probabilities (tokenizers' encode_optimized): the
// best-scoring segmentation, a character no piece covers scored as min_score - 10 and tagged unk,
// consecutive unknowns fused into one; with byte_fallback an unknown piece becomes <0xXX> tokens.
#include <algorithm>
#include <limits>

#include "hf.hpp"

namespace ordo::tokenizer_detail::hf {

namespace {

constexpr double kUnkPenalty = 10.0;

std::unordered_map<std::string, int32_t> piece_ids(const std::vector<std::pair<std::string, double>>& pieces) {
  std::unordered_map<std::string, int32_t> m;
  for (size_t i = 0; i < pieces.size(); ++i) m[pieces[i].first] = static_cast<int32_t>(i);  // last wins
  return m;
}

class Unigram final : public VocabModel {
 public:
  Unigram(std::vector<std::pair<std::string, double>> pieces, std::optional<int32_t> unk_id, bool byte_fallback,
          const std::string& where)
      : VocabModel(piece_ids(pieces)),
        pieces_(std::move(pieces)),
        unk_id_(unk_id),
        byte_fallback_(byte_fallback),
        where_(where) {
    for (const auto& [p, score] : pieces_) {
      min_score_ = std::min(min_score_, score);
      max_len_ = std::max(max_len_, p.size());
    }
  }
  const char* kind() const override { return "unigram"; }
  std::optional<std::string> unk_token() const override {
    return unk_id_ ? std::optional<std::string>(pieces_[*unk_id_].first) : std::nullopt;
  }

  void tokenize(const std::string& s, std::vector<Token>& out) const override {
    for (std::string& piece : viterbi(s)) {
      if (auto id = token_to_id(piece)) {
        out.push_back({*id, std::move(piece)});
        continue;
      }
      if (byte_fallback_) {
        std::vector<Token> bytes;
        for (unsigned char c : piece) {
          static const char* hex = "0123456789ABCDEF";
          std::string code = std::string("<0x") + hex[c >> 4] + hex[c & 15] + ">";
          auto id = token_to_id(code);
          if (!id) break;
          bytes.push_back({*id, std::move(code)});
        }
        if (bytes.size() == piece.size()) {
          out.insert(out.end(), bytes.begin(), bytes.end());
          continue;
        }
      }
      out.push_back({require_unk(), std::move(piece)});  // the token keeps the text it covers
    }
  }

 private:
  int32_t require_unk() const {
    if (!unk_id_) fail(where_, "the text has a character no piece covers and the model has no unk_id");
    return *unk_id_;
  }

  std::vector<std::string> viterbi(const std::string& s) const {
    struct Node {
      double score = 0;
      std::optional<size_t> start;
      int32_t id = -1;
    };
    const size_t len = s.size();
    std::vector<Node> best(len + 1);
    for (size_t start = 0; start < len;) {
      const double base = best[start].score;
      size_t after = start;
      next_cp(s, after);
      const size_t mblen = after - start;
      bool has_single = false;
      for (size_t end = after; end <= len && end - start <= max_len_;) {
        if (auto id = token_to_id(s.substr(start, end - start))) {
          Node& t = best[end];
          const double cand = pieces_[*id].second + base;
          if (!t.start || cand > t.score) t = {cand, start, *id};
          if (end - start == mblen) has_single = true;
        }
        if (end == len) break;
        next_cp(s, end);
      }
      if (!has_single) {
        Node& t = best[start + mblen];
        const double cand = min_score_ - kUnkPenalty + base;
        if (!t.start || cand > t.score) t = {cand, start, require_unk()};
      }
      start = after;
    }
    // Walk back from the end collecting [start, end) pieces; a run of unknowns is contiguous in s,
    // so it is fused by widening the last range (no front insertion: linear in the run's length).
    std::vector<std::pair<size_t, size_t>> ranges;
    bool in_unk_run = false;
    for (size_t end = len; end > 0;) {
      const Node& n = best[end];
      const size_t start = *n.start;
      const bool unk = unk_id_ && n.id == *unk_id_;
      if (unk && in_unk_run)
        ranges.back().first = start;
      else
        ranges.emplace_back(start, end);
      in_unk_run = unk;
      end = start;
    }
    std::vector<std::string> out;
    out.reserve(ranges.size());
    for (auto it = ranges.rbegin(); it != ranges.rend(); ++it)
      out.push_back(s.substr(it->first, it->second - it->first));
    return out;
  }

  std::vector<std::pair<std::string, double>> pieces_;
  std::optional<int32_t> unk_id_;
  bool byte_fallback_;
  std::string where_;
  double min_score_ = std::numeric_limits<double>::infinity();
  size_t max_len_ = 0;
};

}  // namespace

std::unique_ptr<Model> make_unigram_model(const json& j, const std::string& where) {
  if (!j.contains("vocab") || !j["vocab"].is_array()) fail(where, "Unigram model has no 'vocab' list");
  const json& v = j["vocab"];
  if (v.empty()) fail(where + ".vocab", "is empty");
  std::vector<std::pair<std::string, double>> pieces;
  pieces.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    const json& e = v[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_number())
      fail(where + ".vocab[" + std::to_string(i) + "]", "must be [piece, score]");
    pieces.emplace_back(e[0].get<std::string>(), e[1].get<double>());
  }
  std::optional<int32_t> unk;
  if (j.contains("unk_id") && !j["unk_id"].is_null()) {
    const int64_t u = get_int(j, "unk_id", where, 0);
    if (u < 0 || u >= static_cast<int64_t>(pieces.size()))
      fail(where + ".unk_id",
           std::to_string(u) + " is outside the vocabulary (" + std::to_string(pieces.size()) + " pieces)");
    unk = static_cast<int32_t>(u);
  }
  return std::make_unique<Unigram>(std::move(pieces), unk, get_bool(j, "byte_fallback", where, false), where);
}

}  // namespace ordo::tokenizer_detail::hf
