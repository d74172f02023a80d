// A model held once: no weight kept beside its packed copy, no file pages left resident after load.
//
// Peak RSS itself is measured on the 1B model by tools/perf/peak_rss.sh (docs/memory.md); here the
// causes of a second copy are asserted directly, without timing or RSS thresholds: a packed weight
// only the model held has no values left (the panels are the copy), the weights file's mapping has
// no resident pages once loaded, and F16/BF16 files are converted weight by weight (no F32 copy of
// the model) to the same bits as loading those values from F32.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "ordo/ordo.hpp"
#include "ordo/quantize.hpp"
#include "ordo/safetensors.hpp"
#include "ordo/synthetic.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

namespace {

using ordo::DType;
using ordo::Linear;
using ordo::Model;
using ordo::ModelSpec;
using ordo::Tensor;

// Every decoder linear and the head.
std::vector<const Linear*> linears(const ModelSpec& s) {
  std::vector<const Linear*> out;
  s.for_each_linear([&](const Linear& l) {
    if (l.present()) out.push_back(&l);
  });
  return out;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && a.dtype == b.dtype && std::memcmp(a.data, b.data, a.nbytes()) == 0;
}

TEST(WeightMemory, TransformerReleasesWeightsOnlyItHolds) {
  // d 64, 2 layers, 4 heads, 2 KV heads, FFN 96, vocab 256; the head tied to the embedding.
  const ordo::SyntheticShape tiny = ordo::parse_synthetic_shape("64,2,4,2,96,256");
  for (DType dt : {DType::F32, DType::BF16, DType::I8}) {
    SCOPED_TRACE(ordo::weight_dtype_name(dt));
    const ModelSpec kept = ordo::synthetic_llama(tiny, dt, 5);
    const ordo::Transformer copied(kept, ordo::Backend::OneDNN);  // the caller keeps the weights
    const ordo::Transformer moved(ordo::synthetic_llama(tiny, dt, 5), ordo::Backend::OneDNN);
    const std::vector<const Linear*> a = linears(copied.spec()), b = linears(moved.spec()), k = linears(kept);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_EQ(a.size(), 2u * 7 + 1);
    for (size_t i = 0; i < a.size(); ++i) {
      EXPECT_TRUE(a[i]->panels && b[i]->panels);
      EXPECT_EQ(b[i]->weight.shape, k[i]->weight.shape);
      EXPECT_EQ(b[i]->weight.dtype, dt);
      EXPECT_TRUE(same_bits(a[i]->weight, k[i]->weight)) << i << ": shared with the caller, kept";
      // The head is the embedding (F32) or its own converted copy (other dtypes).
      const bool tied = i + 1 == a.size() && dt == DType::F32;
      EXPECT_EQ(b[i]->weight.empty(), !tied) << i;
      EXPECT_TRUE(b[i]->present()) << i;
    }
    EXPECT_FALSE(moved.spec().tok_embed.empty());
    EXPECT_EQ(moved.spec().parameter_count(), kept.parameter_count());
    EXPECT_EQ(ordo::decode_weight_bytes(moved.spec()), ordo::decode_weight_bytes(kept));
    // Same logits, bit for bit: the panels are what both read.
    ordo::Sequence sa = copied.new_sequence(8), sb = moved.new_sequence(8);
    const Tensor la = copied.decode(sa, {1, 5, 9, 3}).logits, lb = moved.decode(sb, {1, 5, 9, 3}).logits;
    EXPECT_TRUE(same_bits(la, lb));
    // A released weight cannot be converted any more: an Error, not a read of freed memory.
    if (dt != DType::F32) {
      const std::string err = ordo::test::error_of([&] { ordo::convert_linear(*b[0], DType::F32); });
      EXPECT_NE(err.find("released when it was packed"), std::string::npos) << err;
    }
  }
}

// A Llama directory of `stored` weights: every value a multiple of 2^-8 in [-0.5, 0.5) (8 significant
// bits at most), so exactly the same in F32, BF16 and F16 files.
std::string write_llama_dir(const std::string& tag, DType stored) {
  const int64_t d = 128, layers = 2, heads = 4, kv = 2, ffn = 352, vocab = 512, hd = d / heads;
  const std::string dir = ordo::test::make_temp_dir(tag);
  nlohmann::json cfg = {{"model_type", "llama"},        {"hidden_size", d},
                        {"intermediate_size", ffn},     {"num_hidden_layers", layers},
                        {"num_attention_heads", heads}, {"num_key_value_heads", kv},
                        {"vocab_size", vocab},          {"max_position_embeddings", 64},
                        {"rms_norm_eps", 1e-5},         {"tie_word_embeddings", false}};
  std::ofstream(dir + "/config.json") << cfg.dump();
  uint32_t state = 12345;
  auto tensor = [&](std::vector<int64_t> shape, bool ones) {
    Tensor f = Tensor::zeros(shape);
    for (int64_t i = 0; i < f.numel(); ++i) {
      state = state * 1664525u + 1013904223u;
      const int q = static_cast<int>(state >> 24) - 128;  // [-128, 127]
      f.f32()[i] = ones ? 1.0f : static_cast<float>(q) / 256.0f;
    }
    if (stored == DType::F32) return f;
    Tensor t = Tensor::zeros(shape, stored);
    for (int64_t i = 0; i < f.numel(); ++i)
      static_cast<uint16_t*>(t.data)[i] =
          stored == DType::BF16 ? ordo::f32_to_bf16(f.f32()[i]) : ordo::f32_to_f16(f.f32()[i]);
    return t;
  };
  std::vector<std::pair<std::string, Tensor>> ts;
  ts.emplace_back("model.embed_tokens.weight", tensor({vocab, d}, false));
  for (int64_t l = 0; l < layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    ts.emplace_back(p + "input_layernorm.weight", tensor({d}, true));
    ts.emplace_back(p + "self_attn.q_proj.weight", tensor({heads * hd, d}, false));
    ts.emplace_back(p + "self_attn.k_proj.weight", tensor({kv * hd, d}, false));
    ts.emplace_back(p + "self_attn.v_proj.weight", tensor({kv * hd, d}, false));
    ts.emplace_back(p + "self_attn.o_proj.weight", tensor({d, heads * hd}, false));
    ts.emplace_back(p + "post_attention_layernorm.weight", tensor({d}, true));
    ts.emplace_back(p + "mlp.gate_proj.weight", tensor({ffn, d}, false));
    ts.emplace_back(p + "mlp.up_proj.weight", tensor({ffn, d}, false));
    ts.emplace_back(p + "mlp.down_proj.weight", tensor({d, ffn}, false));
  }
  ts.emplace_back("model.norm.weight", tensor({d}, true));
  ts.emplace_back("lm_head.weight", tensor({vocab, d}, false));
  ordo::write_safetensors(dir + "/model.safetensors", ts);
  return dir;
}

// kB of `path`'s mappings resident in this process (/proc/self/smaps "Rss"); -1 when not mapped.
long resident_kb_of_mapping(const std::string& path) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  long total = -1;
  bool in = false;
  while (std::getline(f, line)) {
    // A mapping's header: "start-end perms offset dev inode [path]"; its fields: "Key: value kB".
    const std::string first = line.substr(0, line.find(' '));
    const bool header = first.find('-') != std::string::npos && first.find(':') == std::string::npos;
    if (header) {
      in = line.size() >= path.size() && line.compare(line.size() - path.size(), path.size(), path) == 0;
      continue;
    }
    if (in && line.rfind("Rss:", 0) == 0) total = std::max(total, 0L) + std::strtol(line.c_str() + 4, nullptr, 10);
  }
  return total;
}

Model load(const std::string& dir, std::optional<DType> dt) {
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  o.dtype = dt;
  o.backend = ordo::Backend::OneDNN;
  return Model::load(dir, o);
}

TEST(WeightMemory, LoadedModelKeepsNoSecondCopy) {
  const std::string f32_dir = write_llama_dir("mem-f32", DType::F32);
  const std::vector<int32_t> ids = {1, 7, 42, 300, 5};
  for (DType stored : {DType::F32, DType::BF16, DType::F16}) {
    const std::string dir = stored == DType::F32 ? f32_dir : write_llama_dir("mem-16", stored);
    const std::string file = dir + "/model.safetensors";
    for (std::optional<DType> run : {std::optional<DType>{}, std::optional<DType>{DType::F32},
                                     std::optional<DType>{DType::BF16}, std::optional<DType>{DType::I8}}) {
      const DType runs = run ? *run : DType::F32;
      SCOPED_TRACE(std::string(ordo::dtype_name(stored)) + " file run as " + ordo::weight_dtype_name(runs));
      const Model m = load(dir, run);
      // Nothing of the file resident: every weight's pages were let go once it was converted or
      // packed, and the embeddings' and norms' once the spec was built (the mapping stays, for the
      // tensors the spec still borrows, and would fault pages back in as they are read).
      const long kb = resident_kb_of_mapping(file);
      EXPECT_LE(kb, 0) << file << " still has " << kb << " kB resident after load";
      for (const Linear* l : linears(m.spec())) {
        EXPECT_TRUE(l->panels);
        EXPECT_EQ(l->weight.dtype, runs);
        // A converted weight's values were freed once packed; one run as stored is the file's
        // (borrowed, not resident).
        EXPECT_EQ(l->weight.empty(), runs != stored);
      }
      // The same bits as the F32 file holding the same values, loaded the same way.
      const Model ref = load(f32_dir, run);
      EXPECT_TRUE(same_bits(m.forward(ids).logits, ref.forward(ids).logits));
    }
  }
}

}  // namespace

// Shards and PyTorch files are held once too: after load no page of any of their files is
// resident (a .bin's tensors borrow its zip mapping as safetensors' do).
TEST(WeightMemory, ShardsAndPytorchFilesKeepNoPagesResident) {
  for (const char* name : {"llama-safetensors-sharded", "llama-bin-sharded-bf16", "gpt2-bin", "t5-bin-f16"}) {
    SCOPED_TRACE(name);
    const std::string dir = ordo::test::data_path(std::string("checkpoints/") + name);
    const Model m = load(dir, std::nullopt);
    int files = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string ext = e.path().extension().string();
      if (ext != ".safetensors" && ext != ".bin") continue;
      ++files;
      const long kb = resident_kb_of_mapping(e.path().string());  // -1: no longer mapped at all
      EXPECT_LE(kb, 0) << e.path() << " still has " << kb << " kB resident after load";
    }
    EXPECT_GE(files, 1);
  }
}

// Every fixture family, its weights rounded to BF16 and stored BF16 and F32: the BF16 file (linear
// and head weights kept as stored, fused projections split in BF16, converted at load) gives the
// F32 file's outputs bit for bit, run as f32 (the default) and as int8.
TEST(WeightMemory, Bf16FilesOfEveryFamilyLoadAsTheirF32Values) {
  for (const char* fixture : {"llama", "gpt2", "gpt-neox", "gptj", "bloom", "mpt", "opt", "bert", "t5", "marian"}) {
    SCOPED_TRACE(fixture);
    const std::string src = ordo::test::model_dir(fixture);
    const ordo::SafeTensors in = ordo::SafeTensors::open(src + "/model.safetensors");
    std::vector<std::pair<std::string, Tensor>> as_bf16, as_f32;
    for (const auto& [name, t] : in.tensors()) {
      ASSERT_EQ(t.dtype, DType::F32) << name;
      Tensor h = Tensor::zeros(t.shape, DType::BF16), f = Tensor::zeros(t.shape);
      for (int64_t i = 0; i < t.numel(); ++i) {
        float x;
        std::memcpy(&x, static_cast<const char*>(t.data) + 4 * i, 4);
        const uint16_t b = ordo::f32_to_bf16(x);
        static_cast<uint16_t*>(h.data)[i] = b;
        f.f32()[i] = ordo::bf16_to_f32(b);
      }
      as_bf16.emplace_back(name, h);
      as_f32.emplace_back(name, f);
    }
    std::string dirs[2];
    for (int k = 0; k < 2; ++k) {
      dirs[k] = ordo::test::make_temp_dir(k ? "bf16-as-f32" : "bf16");
      ordo::write_safetensors(dirs[k] + "/model.safetensors", k ? as_f32 : as_bf16);
      for (const char* f : {"config.json", "generation_config.json"})
        if (std::ifstream(src + "/" + f)) std::ofstream(dirs[k] + "/" + f) << ordo::test::read_file(src + "/" + f);
    }
    for (std::optional<DType> run : {std::optional<DType>{}, std::optional<DType>{DType::I8}}) {
      const Model a = load(dirs[0], run), b = load(dirs[1], run);
      const std::vector<int32_t> ids = {3, 1, 4, 1, 5, 9, 2, 6};
      auto out = [&](const Model& m) {
        if (m.spec().graph == ordo::GraphKind::EncoderDecoder) return m.forward_seq2seq(ids, {0, 7, 8}).logits;
        ordo::ForwardOutput o = m.forward(ids);
        return o.logits.empty() ? o.hidden.back() : o.logits;
      };
      EXPECT_TRUE(same_bits(out(a), out(b))) << (run ? "int8" : "f32");
      for (const Linear* l : linears(a.spec())) {  // converted, then freed; a head tied to the embedding stays
        const bool tied = l->weight.data == a.spec().tok_embed.data;
        EXPECT_EQ(l->weight.empty(), !tied);
      }
    }
  }
}
