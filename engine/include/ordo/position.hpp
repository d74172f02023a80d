// Position schemes. A scheme touches attention at exactly three points:
//   (1) embed():          add to the input embeddings (learned, sinusoidal),
//   (2) rotate():         rotate queries and keys (RoPE),
//   (3) add_score_bias(): add a bias to one row of attention scores (T5 relative, ALiBi).
// Long-context scaling is a separate, orthogonal setting (`Scaling`) that each scheme
// interprets in its own terms, or rejects with an Error.
//
// A new scheme is one file under engine/src/position/ (its class and its PositionSchemeInfo) plus
// one line in registry.cpp; everything else asks the registry (docs/adding-a-scheme.md).
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ordo/tensor.hpp"

namespace ordo {

enum class ScalingType {
  None,
  Linear,  // RoPE: positions / s (PI). learned: table interpolated to s·L. sinusoidal: p·L/L'. ALiBi: slopes / s. T5:
           // distance / s.
  NTK,     // RoPE only: static NTK-aware base scaling
  Dynamic,   // RoPE only: dynamic NTK, recomputed from the current length
  YaRN,      // RoPE only
  Llama3,    // RoPE only
  LongRoPE,  // RoPE only
};

const char* scaling_name(ScalingType t);
// "none", "linear", "ntk", "dynamic", "yarn", "llama3", "longrope" (HF's "default" = none).
// Throws Error naming the value and listing the known ones.
ScalingType parse_scaling(const std::string& name);

// Largest long-context scaling factor accepted: far beyond any published checkpoint (up to 64x), and
// small enough that the scaled lengths and frequency tables stay finite and bounded.
constexpr double kMaxScalingFactor = 1024.0;

struct Scaling {
  ScalingType type = ScalingType::None;
  double factor = 1.0;
  int64_t original_max_positions = 0;  // 0: the model's trained length
  // YaRN
  double beta_fast = 32.0, beta_slow = 1.0;
  bool truncate = true;                          // floor/ceil the correction range (HF default)
  std::optional<double> attention_factor;        // YaRN / LongRoPE magnitude override
  std::optional<double> mscale, mscale_all_dim;  // YaRN (DeepSeek variant)
  // Llama-3
  double low_freq_factor = 1.0, high_freq_factor = 4.0;
  // LongRoPE
  std::vector<double> short_factor, long_factor;
  std::optional<double> short_mscale, long_mscale;
  // Dynamic NTK: HF keeps cached keys with the rotation they were stored with (rotation_changes()
  // is false, matching HF's cached generation). true: rotation_changes() reports every change of the
  // effective base so the generator re-encodes the cache (= HF use_cache=False; YaRN paper §3.3).
  bool dynamic_rerotate = false;
};

// Training-free context extension: which position each cached key is seen at, a setting
// orthogonal to the scheme and its scaling (docs/long-context.md). At most one method at a time.
//   Self-Extend (Jin et al. 2024): a key within `neighbor` (W) positions of the query keeps its
//   exact distance; a farther key is seen at ⌊pk/G⌋ by a query at ⌊pq/G⌋ + W − ⌊W/G⌋, one softmax
//   over both. A model trained on L then reaches about W + G·(L − W) tokens.
//   Attention sinks / StreamingLLM (Xiao et al. 2024): the cache keeps the first `sinks` (K)
//   tokens and the `window` (N) most recent ones (the new token included), at most K + N, and
//   positions are counted within the cache (Hugging Face SinkCache): sinks at 0..K−1, the window
//   after them, the query at its cache slot.
// Schemes that rotate q/k (rope) or bias scores (alibi, relative) see every key at its assigned
// position; none has nothing to assign (sinks still bound memory). Schemes that add positions to
// the input embeddings (learned, sinusoidal) embed each new token at its cache position
// min(t, K + N − 1) under sinks (what SinkCache gives such models) and refuse Self-Extend, whose
// positions depend on the query as well as the key: an embedded token has one position for all.
struct ContextExtension {
  int64_t group = 0;     // Self-Extend G (>= 1); 0: off
  int64_t neighbor = 0;  // Self-Extend W (>= 1)
  int64_t sinks = 0;     // attention sinks K (>= 0)
  int64_t window = 0;    // attention sinks N (>= 1); 0: off
  bool self_extend() const { return group > 0; }
  bool streaming() const { return window > 0; }
  bool active() const { return self_extend() || streaming(); }
  // Self-Extend: the position a query at text position p is seen at by keys beyond the neighbour
  // window (grouped, shifted so the two regions join): ⌊p/G⌋ + W − ⌊W/G⌋.
  int64_t grouped_query_position(int64_t p) const { return p / group + neighbor - neighbor / group; }
  // Sinks: the most keys the cache holds, K + N.
  int64_t cache_size() const { return sinks + window; }
  // Sinks: the cache slot a token at text position p takes when it arrives, min(p, K + N − 1).
  int64_t cache_position(int64_t p) const { return std::min(p, cache_size() - 1); }
  bool operator==(const ContextExtension& o) const {
    return group == o.group && neighbor == o.neighbor && sinks == o.sinks && window == o.window;
  }
  bool operator!=(const ContextExtension& o) const { return !(*this == o); }
  // "none", "self-extend G=4 W=32", "sinks K=4 N=60"
  std::string describe() const;
};

// Largest Self-Extend group, neighbour window, sink count or window accepted: positions stay in int32.
constexpr int64_t kMaxExtensionValue = int64_t{1} << 30;

// Throws Error naming the setting (and its CLI flag) for values out of range or both methods at once.
void check_context_extension(const ContextExtension& e);

enum class RopeLayout { HalfSplit, Interleaved };     // (x_i, x_{i+d/2}) vs (x_2i, x_2i+1)
enum class SinusoidalLayout { Concat, Interleaved };  // [sin… | cos…] vs [sin, cos, sin, cos…]

struct PositionConfig {
  std::string scheme = "none";  // none | learned | sinusoidal | relative | rope | alibi
  int64_t max_positions = 0;    // the length the model was trained on
  // rope
  double rope_theta = 10000.0;
  int64_t rotary_dim = 0;  // 0: the whole head
  RopeLayout rope_layout = RopeLayout::HalfSplit;
  // learned
  int64_t learned_offset = 0;  // OPT looks rows up at position + 2
  // sinusoidal
  SinusoidalLayout sinusoidal_layout = SinusoidalLayout::Concat;
  // relative (T5)
  int64_t num_buckets = 32, max_distance = 128;
  // alibi
  double alibi_max_bias = 8.0;
  // A new scheme's parameters go above as named fields under its name, with their defaults
  // (docs/adding-a-scheme.md).
  Scaling scaling;
  ContextExtension extension;
};

// What a scheme may know about the attention it serves.
struct PositionContext {
  int64_t d_model = 0, n_heads = 0, head_dim = 0;
  bool causal = true;  // decoder self-attention (T5 causal buckets) vs encoder (bidirectional)
};

// Weights some schemes read from the checkpoint, by the names their PositionSchemeInfo::weights
// declare (learned: "table" [rows, d_model]; relative: "relative_bias" [num_buckets, n_heads]).
struct PositionWeights {
  std::map<std::string, Tensor> tensors;

  const Tensor& get(const std::string& name) const;  // an empty tensor when absent
  void set(const std::string& name, Tensor t) { tensors[name] = std::move(t); }
};

// rotate() is called once for the queries and once for the keys of a step.
enum class RotateTarget { Query, Key };

class PositionScheme {
 public:
  virtual ~PositionScheme() = default;
  virtual const char* name() const = 0;

  // Throws Error (with a suggested fix) if positions [0, max_pos] cannot be represented,
  // e.g. a learned table shorter than the sequence and no interpolation.
  virtual void check_positions(int64_t max_pos) const { (void)max_pos; }

  // (1) x: [T, d_model]; x[t] += pe(pos[t]).
  virtual void embed(float* x, const int32_t* pos, int64_t T) const { (void)x, (void)pos, (void)T; }

  // (2) x: [T, n_heads_x, head_dim], the queries or the keys (`which`: a scheme may treat them
  // differently, as xPos scales them inversely), rotated in place for positions pos[t]. seq_len is
  // the length this forward sees (max position + 1): dynamic NTK and LongRoPE depend on it.
  virtual void rotate(float* x, RotateTarget which, int64_t n_heads_x, const int32_t* pos, int64_t T,
                      int64_t seq_len) const {
    (void)x, (void)which, (void)n_heads_x, (void)pos, (void)T, (void)seq_len;
  }

  // What the scheme does, for context extension (ContextExtension): rotate() acts (q/k rotation),
  // embed() acts (positions enter at the input embeddings).
  virtual bool rotates() const { return false; }
  virtual bool embeds() const { return false; }

  // (3) scores[j] += bias(head, qpos, kpos[j]) for j < nk.
  virtual bool has_score_bias() const { return false; }
  virtual void add_score_bias(float* scores, int64_t head, int32_t qpos, const int32_t* kpos, int64_t nk) const {
    (void)scores, (void)head, (void)qpos, (void)kpos, (void)nk;
  }

  // True when keys already rotated for a sequence of length old_len would be rotated differently
  // for length new_len (LongRoPE's short/long switch). The generator then re-encodes the cache.
  virtual bool rotation_changes(int64_t old_len, int64_t new_len) const {
    (void)old_len, (void)new_len;
    return false;
  }
};

// ---- The registry: what the rest of ordo asks of a scheme ------------------------------------------

struct ScalingSupport {
  ScalingType type;
  bool factor_only;  // runs from a factor alone (what `ordo compare`'s length probe tries)
};

struct PositionWeightInfo {  // a tensor read from the checkpoint, kept in PositionWeights
  const char* name;
  const char* shape;  // e.g. "[num_buckets, n_heads]", for messages
};

struct PositionSchemeInfo {
  const char* name;
  const char* acts;  // where it acts: "input embeddings", "q/k rotation", "attention scores", "nothing"
  std::vector<ScalingSupport> scalings;  // ScalingType::None is always supported and not listed
  std::vector<PositionWeightInfo> weights;
  // Its settings in a few words, for `ordo inspect`, e.g. "theta 10000, rotary_dim 8, half-split".
  std::string (*describe)(const PositionConfig& cfg, const PositionContext& ctx);
  std::unique_ptr<PositionScheme> (*make)(const PositionConfig& cfg, const PositionContext& ctx,
                                          const PositionWeights& weights);

  bool supports(ScalingType t) const;
};

// Every registered scheme, in registry order.
const std::vector<const PositionSchemeInfo*>& position_schemes();
// The scheme called `name`; Error naming it and listing the known ones if there is none.
const PositionSchemeInfo& position_scheme_info(const std::string& name);
// Names of all registered schemes, in registry order.
std::vector<std::string> position_scheme_names();

// Builds the scheme named in cfg.scheme. Throws Error for an unknown name (listing the known ones),
// a scaling type the scheme does not support (listing those it does), a non-positive factor, or
// weights the scheme needs but the model lacks.
std::unique_ptr<PositionScheme> make_position_scheme(const PositionConfig& cfg, const PositionContext& ctx,
                                                     const PositionWeights& weights);

// ---- Formula helpers, exposed for tests and tools -------------------------------------------------

// RoPE inverse frequencies [rotary_dim/2] (float32, computed with HF transformers' float32 op order)
// and the magnitude that multiplies cos and sin, as cfg.rope_theta/cfg.scaling give them for a
// forward that sees `seq_len` positions (max position + 1). seq_len <= 0 means "as at model
// construction" (seq_len = cfg.max_positions): dynamic NTK then equals the default, LongRoPE picks
// long_factor when max_positions > original_max_positions. Throws Error for invalid settings.
struct RopeFrequencies {
  std::vector<float> inv_freq;
  double attention_scaling = 1.0;
};
RopeFrequencies rope_frequencies(const PositionConfig& cfg, int64_t rotary_dim, int64_t seq_len);

// ALiBi slopes for n_heads heads (BLOOM / MPT / ggml convention, which agree for every head count):
// c = 2^floor(log2 n), m0 = 2^(-max_bias/c), m1 = 2^(-(max_bias/2)/c),
// slope_h = h < c ? m0^(h+1) : m1^(2(h-c)+1).
std::vector<float> alibi_slopes(int64_t n_heads, double max_bias = 8.0);

// T5 relative-position bucket of rp = key_pos - query_pos (HF `_relative_position_bucket`).
int64_t t5_relative_bucket(int64_t rp, bool bidirectional, int64_t num_buckets, int64_t max_distance);

}  // namespace ordo
