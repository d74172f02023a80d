// FamilyContext: config.json fields and checkpoint tensors by Hugging Face name, for the family files.
#include "family_context.hpp"

#include <climits>
#include <cstring>
#include <sstream>

namespace ordo {

FamilyContext::FamilyContext(JsonConfig config, Weights weights, JsonConfig generation)
    : config_(std::move(config)), weights_(std::move(weights)), generation_(std::move(generation)) {}

static std::string shape_of(const std::vector<int64_t>& s) {
  Tensor t;
  t.shape = s;
  return t.shape_str();
}

const Tensor& FamilyContext::fetch(const std::string& name) const {
  const Tensor& t = weights_.get(name);
  fetched_.push_back(name);
  return t;
}

Tensor FamilyContext::get(const std::string& name, const std::vector<int64_t>& shape) const {
  const Tensor& t = fetch(name);
  if (!shape.empty() && t.shape != shape)
    throw Error(weights_.file_of(name) + ": tensor '" + name + "' has shape " + t.shape_str() + ", expected " +
                shape_of(shape) + " from config.json");
  // F32 borrowed from the mapping when 4-byte aligned (the usual case); copied otherwise.
  if (t.dtype == DType::F32 && reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0) return t;
  if (t.dtype == DType::F32) {
    Tensor c = Tensor::zeros(t.shape);
    std::memcpy(c.data, t.data, t.nbytes());
    return c;
  }
  if (t.dtype == DType::I8)
    throw Error(weights_.file_of(name) + ": tensor '" + name + "' is I8; expected a float type");
  return t.to_f32();
}

Tensor FamilyContext::get_optional(const std::string& name, const std::vector<int64_t>& shape) const {
  return has(name) ? get(name, shape) : Tensor{};
}

Tensor FamilyContext::linear_weight(const std::string& name, int64_t out, int64_t in, Tensor* scales) const {
  Tensor t = linear_weight_impl(name, out, in, scales);
  linear_names_.emplace_back(name, t.data);
  return t;
}

Tensor FamilyContext::linear_weight_impl(const std::string& name, int64_t out, int64_t in, Tensor* scales) const {
  const Tensor& t = fetch(name);
  if (t.dtype == DType::F32) return get(name, {out, in});
  if (t.shape != std::vector<int64_t>{out, in})
    throw Error(weights_.file_of(name) + ": tensor '" + name + "' has shape " + t.shape_str() + ", expected " +
                shape_of({out, in}) + " from config.json");
  if (t.dtype == DType::I8) {
    if (!has(name + ".scales"))
      throw Error(weights_.file_of(name) + ": I8 tensor '" + name + "' has no '" + name +
                  ".scales' (per-row F32 scales)");
    *scales = get(name + ".scales", {out});
    return t;  // int8: no alignment needed
  }
  if (is_block_dtype(t.dtype)) return t;  // Q8_0 / Q4_0 / Q4_K (GGUF): packed into panels, read at any address
  if (reinterpret_cast<uintptr_t>(t.data) % 2 == 0) return t;  // F16/BF16 borrowed from the mapping
  Tensor c = Tensor::zeros(t.shape, t.dtype);
  std::memcpy(c.data, t.data, t.nbytes());
  return c;
}

Linear FamilyContext::linear(const std::string& prefix, int64_t out, int64_t in, bool bias_required) const {
  Linear l;
  l.weight = linear_weight(prefix + ".weight", out, in, &l.scales);
  l.bias = bias_required ? get(prefix + ".bias", {out}) : get_optional(prefix + ".bias", {out});
  return l;
}

Linear FamilyContext::linear_no_bias(const std::string& prefix, int64_t out, int64_t in) const {
  Linear l;
  l.weight = linear_weight(prefix + ".weight", out, in, &l.scales);
  return l;
}

Linear FamilyContext::linear_biased(const std::string& prefix, int64_t out, int64_t in, bool bias) const {
  return bias ? linear(prefix, out, in, true) : linear_no_bias(prefix, out, in);
}

Norm FamilyContext::norm(const std::string& prefix, NormKind kind, float eps, int64_t dim) const {
  Norm n;
  n.kind = kind;
  n.eps = eps;
  n.present = true;
  n.weight = get(prefix + ".weight", {dim});
  if (kind == NormKind::Layer) n.bias = get_optional(prefix + ".bias", {dim});
  return n;
}

ModelSpec FamilyContext::start_spec(GraphKind graph, std::initializer_list<std::string> d_model_keys,
                                    std::initializer_list<std::string> head_keys, const char* head_dim_key) const {
  ModelSpec s;
  s.architecture = config_.get_string("model_type");
  s.graph = graph;
  read_attention_dims(s, d_model_keys, head_keys, head_dim_key);
  s.vocab_size = config_.get_count("vocab_size");
  return s;
}

void FamilyContext::read_attention_dims(ModelSpec& s, std::initializer_list<std::string> d_model_keys,
                                        std::initializer_list<std::string> head_keys, const char* head_dim_key) const {
  s.d_model = config_.get_count_any(d_model_keys);
  s.n_heads = config_.get_count_any(head_keys);
  s.n_kv_heads = s.n_heads;
  if (head_dim_key && config_.has(head_dim_key)) {
    s.head_dim = config_.get_count(head_dim_key);
    return;
  }
  if (s.d_model % s.n_heads != 0)
    throw Error(config_.origin() + ": " + *config_.first_present(d_model_keys) + " (" + std::to_string(s.d_model) +
                ") is not a multiple of " + *config_.first_present(head_keys) + " (" + std::to_string(s.n_heads) + ")" +
                (head_dim_key ? std::string(" and there is no ") + head_dim_key : std::string()));
  s.head_dim = s.d_model / s.n_heads;
}

std::vector<Layer> FamilyContext::layers(const std::string& prefix, int64_t n,
                                         const std::function<Layer(const std::string&)>& layer) {
  std::vector<Layer> out;
  for (int64_t l = 0; l < n; ++l) out.push_back(layer(prefix + std::to_string(l) + "."));
  return out;
}

bool FamilyContext::ties_lm_head(bool tied_by_default) const {
  return config_.get_bool("tie_word_embeddings", tied_by_default);
}

Tensor FamilyContext::embedding(const std::string& name, const std::vector<int64_t>& shape) const {
  embed_name_ = name;
  return get(name, shape);
}

Tensor FamilyContext::lm_head_weight(const ModelSpec& s, const std::string& name, bool tied_by_default) const {
  const bool tied = ties_lm_head(tied_by_default);
  const std::string& source = tied ? embed_name_ : name;
  // F16, BF16 and the block dtypes as stored, like linear()'s weights: the embedding lookup reads a few
  // rows of its F32 copy, but the head reads all of it every token (a tied Q8_0 GGUF head as F32 was
  // 4x the bytes; F16/BF16 give the same bits either way).
  if (!source.empty()) {
    const DType stored = weights_.get(source).dtype;
    if (stored == DType::F16 || stored == DType::BF16 || is_block_dtype(stored)) {
      Tensor no_scales;
      return linear_weight_impl(source, s.vocab_size, s.d_model, &no_scales);
    }
  }
  if (tied) return s.tok_embed;
  return get(name, {s.vocab_size, s.d_model});
}

Activation activation_from_name(const std::string& name, const std::string& where) {
  static const std::pair<const char*, Activation> kNames[] = {{"gelu", Activation::GeluErf},
                                                              {"gelu_new", Activation::GeluTanh},
                                                              {"gelu_pytorch_tanh", Activation::GeluTanh},
                                                              {"gelu_fast", Activation::GeluTanh},
                                                              {"relu", Activation::ReLU},
                                                              {"silu", Activation::SiLU},
                                                              {"swish", Activation::SiLU}};
  std::string known;
  for (const auto& [n, a] : kNames) {
    if (name == n) return a;
    known += (known.empty() ? "" : ", ") + std::string(n);
  }
  throw Error(where + ": activation '" + name + "' is not supported (known: " + known + ")");
}

Activation FamilyContext::activation(const std::string& key, const std::string& def) const {
  return activation_from_name(config_.get_string(key, def), config_.origin() + ": field '" + key + "'");
}

int32_t FamilyContext::token_id(const std::string& key, int32_t def) const {
  for (const JsonConfig* c : {&generation_, &config_}) {
    if (!c->has(key)) continue;
    // Some configs list several ids (e.g. eos_token_id: [1, 2]); the first is the canonical one.
    const std::vector<int64_t> ids = c->get_int_array(key);
    if (ids.empty()) continue;
    if (ids[0] < -1 || ids[0] > INT32_MAX)
      throw Error(c->origin() + ": field '" + key + "' must be a token id in [-1, 2147483647], got " +
                  std::to_string(ids[0]));
    return static_cast<int32_t>(ids[0]);
  }
  return def;
}

void FamilyContext::read_special_ids(ModelSpec& s, int32_t bos, int32_t eos, int32_t pad) const {
  s.bos_id = token_id("bos_token_id", bos);
  s.eos_id = token_id("eos_token_id", eos);
  s.pad_id = token_id("pad_token_id", pad);
}

// Copies rows [begin, end) of a weight (or elements of a bias) into a new tensor of its dtype.
static Tensor slice_rows(const Tensor& w, int64_t begin, int64_t end) {
  Tensor v = w.rows(begin, end);
  Tensor out = Tensor::zeros(v.shape, v.dtype);
  std::memcpy(out.data, v.data, v.nbytes());
  return out;
}

void split_qkv(const Linear& qkv, int64_t d, AttentionWeights& a) {
  Linear* parts[3] = {&a.q, &a.k, &a.v};
  for (int i = 0; i < 3; ++i) {
    parts[i]->weight = slice_rows(qkv.weight, i * d, (i + 1) * d);
    if (!qkv.bias.empty()) parts[i]->bias = slice_rows(qkv.bias, i * d, (i + 1) * d);
  }
}

static void split_per_head_qkv(const Tensor& w, int64_t heads, int64_t hd, Tensor* q, Tensor* k, Tensor* v) {
  const int64_t cols = w.ndim() == 2 ? w.dim(1) : 1;
  std::vector<int64_t> shape = {heads * hd};
  if (w.ndim() == 2) shape.push_back(cols);
  *q = Tensor::zeros(shape, w.dtype);
  *k = Tensor::zeros(shape, w.dtype);
  *v = Tensor::zeros(shape, w.dtype);
  const size_t row_bytes = cols * dtype_size(w.dtype);
  const auto* base = static_cast<const char*>(w.data);
  for (int64_t h = 0; h < heads; ++h)
    for (int part = 0; part < 3; ++part) {
      Tensor* dst = part == 0 ? q : part == 1 ? k : v;
      std::memcpy(static_cast<char*>(dst->data) + h * hd * row_bytes, base + (h * 3 + part) * hd * row_bytes,
                  hd * row_bytes);
    }
}

void split_qkv_per_head(const Linear& qkv, int64_t heads, int64_t hd, AttentionWeights& a) {
  split_per_head_qkv(qkv.weight, heads, hd, &a.q.weight, &a.k.weight, &a.v.weight);
  if (!qkv.bias.empty()) split_per_head_qkv(qkv.bias, heads, hd, &a.q.bias, &a.k.bias, &a.v.bias);
}

Tensor transpose(const Tensor& w) {
  const int64_t r = w.dim(0), c = w.dim(1);
  Tensor out = Tensor::zeros({c, r});
  const float* s = w.f32();
  float* d = out.f32();
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) d[j * r + i] = s[i * c + j];
  return out;
}

int64_t rotary_dims(const JsonConfig& config, const std::string& field, int64_t head_dim) {
  const double fraction = config.get_fraction(field, 1.0);
  const auto dims = static_cast<int64_t>(static_cast<double>(head_dim) * fraction);
  if (dims < 2) {
    std::ostringstream why;
    why << config.origin() << ": field '" << field << "' " << fraction << " of head_dim " << head_dim
        << " leaves no rotary dimensions";
    throw Error(why.str());
  }
  return dims;
}

Scaling parse_rope_scaling(const JsonConfig& config) {
  Scaling s;
  if (!config.has("rope_scaling")) return s;
  JsonConfig rs = config.child("rope_scaling");
  std::string type = rs.has("rope_type") ? rs.get_string("rope_type") : rs.get_string("type");
  s.type = parse_scaling(type);
  if (s.type == ScalingType::None) return s;
  s.factor = rs.get_double("factor", 1.0);
  s.original_max_positions = rs.get_int("original_max_position_embeddings", 0);
  if (s.type == ScalingType::LongRoPE && s.original_max_positions == 0)
    s.original_max_positions = config.get_int("original_max_position_embeddings", 0);
  s.beta_fast = rs.get_double("beta_fast", s.beta_fast);
  s.beta_slow = rs.get_double("beta_slow", s.beta_slow);
  if (rs.has("truncate")) s.truncate = rs.get_bool("truncate");
  // Fields whose absence means "derive it" stay unset.
  auto optional = [&](const char* key, std::optional<double>& field) {
    if (rs.has(key)) field = rs.get_double(key);
  };
  optional("attention_factor", s.attention_factor);
  optional("mscale", s.mscale);
  optional("mscale_all_dim", s.mscale_all_dim);
  optional("short_mscale", s.short_mscale);
  optional("long_mscale", s.long_mscale);
  s.low_freq_factor = rs.get_double("low_freq_factor", s.low_freq_factor);
  s.high_freq_factor = rs.get_double("high_freq_factor", s.high_freq_factor);
  if (rs.has("short_factor")) s.short_factor = rs.get_double_array("short_factor");
  if (rs.has("long_factor")) s.long_factor = rs.get_double_array("long_factor");
  return s;
}

}  // namespace ordo
