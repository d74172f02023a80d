// The rules every family file reads through one helper: when the LM head is the token embedding,
// and how head_dim follows from config.json. Each is checked on copies of the reference fixtures
// whose config.json and weights the test edits, against the tensors as stored in the file.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "ordo/ordo.hpp"
#include "ordo/safetensors.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

namespace fs = std::filesystem;
using ordo::Model;
using ordo::Tensor;

namespace {

using TensorList = std::vector<std::pair<std::string, Tensor>>;

// A writable copy of a fixture's model directory, its config.json and weights editable.
struct ModelCopy {
  std::string dir;
  nlohmann::json config;
  TensorList tensors;  // as stored, converted to F32 copies

  explicit ModelCopy(const std::string& fixture) : dir(ordo::test::make_temp_dir("family")) {
    const std::string src = ordo::test::model_dir(fixture);
    config = nlohmann::json::parse(ordo::test::read_file(src + "/config.json"));
    const ordo::SafeTensors st = ordo::SafeTensors::open(src + "/model.safetensors");
    for (const auto& [name, t] : st.tensors()) tensors.emplace_back(name, t.to_f32());
  }
  ~ModelCopy() { fs::remove_all(dir); }

  const Tensor* find(const std::string& name) const {
    for (const auto& [n, t] : tensors)
      if (n == name) return &t;
    return nullptr;
  }
  void remove(const std::string& name) {
    tensors.erase(std::remove_if(tensors.begin(), tensors.end(), [&](const auto& p) { return p.first == name; }),
                  tensors.end());
  }
  void set(const std::string& name, const Tensor& t) {
    remove(name);
    tensors.emplace_back(name, t);
  }
  // Writes config.json and model.safetensors, then loads the directory.
  Model load() const {
    std::ofstream(dir + "/config.json") << config.dump(2);
    ordo::write_safetensors(dir + "/model.safetensors", tensors);
    ordo::ModelOptions o;
    o.load_tokenizer = false;
    return Model::load(dir, o);
  }
  std::string load_error() const {
    return ordo::test::error_of([&] { load(); });
  }
};

bool same_values(const Tensor& a, const Tensor& b) {
  return a.shape == b.shape && std::memcmp(a.f32(), b.f32(), a.numel() * sizeof(float)) == 0;
}

// A [rows, cols] tensor unlike any trained weight.
Tensor pattern(int64_t rows, int64_t cols) {
  Tensor t = Tensor::zeros({rows, cols});
  for (int64_t i = 0; i < t.numel(); ++i) t.f32()[i] = 0.001f * static_cast<float>(i % 997) - 0.4f;
  return t;
}

void expect_has(const std::string& message, std::initializer_list<std::string> needles) {
  for (const auto& n : needles) EXPECT_NE(message.find(n), std::string::npos) << "'" << n << "' not in: " << message;
}

}  // namespace

// Tied (config.json's tie_word_embeddings, or the family's default when absent): the head is the
// token embedding and a stored head is not read, as Hugging Face overwrites it. Untied: the stored
// head, and a checkpoint without one is an Error naming the file and the tensor.
TEST(FamilyRules, LmHeadIsTheEmbeddingExactlyWhenTied) {
  struct Case {
    const char* fixture;
    const char* embed;
    const char* head;
    bool tied_by_default;
  };
  for (const Case& c : {Case{"llama", "model.embed_tokens.weight", "lm_head.weight", false},
                        Case{"gpt-neox", "gpt_neox.embed_in.weight", "embed_out.weight", false},
                        Case{"gptj", "transformer.wte.weight", "lm_head.weight", false},
                        Case{"gpt2", "transformer.wte.weight", "lm_head.weight", true},
                        Case{"opt", "model.decoder.embed_tokens.weight", "lm_head.weight", true},
                        Case{"bloom", "transformer.word_embeddings.weight", "lm_head.weight", true},
                        Case{"mpt", "transformer.wte.weight", "lm_head.weight", true},
                        Case{"marian", "model.shared.weight", "lm_head.weight", true},
                        Case{"t5-v1_1", "shared.weight", "lm_head.weight", true},
                        Case{"stories260K", "model.embed_tokens.weight", "lm_head.weight", false}}) {
    SCOPED_TRACE(c.fixture);
    ModelCopy m(c.fixture);
    ASSERT_NE(m.find(c.embed), nullptr) << c.embed;
    const Tensor embed = *m.find(c.embed);
    const Tensor head = pattern(embed.dim(0), embed.dim(1));
    m.set(c.head, head);

    m.config["tie_word_embeddings"] = true;
    EXPECT_TRUE(same_values(m.load().spec().lm_head.weight, embed)) << "tied: the embedding";
    m.config["tie_word_embeddings"] = false;
    EXPECT_TRUE(same_values(m.load().spec().lm_head.weight, head)) << "untied: the stored head";
    m.config.erase("tie_word_embeddings");
    EXPECT_TRUE(same_values(m.load().spec().lm_head.weight, c.tied_by_default ? embed : head)) << "default";

    m.remove(c.head);
    m.config["tie_word_embeddings"] = false;
    expect_has(m.load_error(), {"model.safetensors", std::string("missing tensor '") + c.head + "'"});
    m.config["tie_word_embeddings"] = true;
    EXPECT_TRUE(same_values(m.load().spec().lm_head.weight, embed)) << "tied, none stored";
  }
}

// Without a head_dim field, head_dim = d_model / n_heads, and a head count that does not divide
// d_model is an Error naming the file and both fields, in every family's own spelling.
TEST(FamilyRules, HeadCountMustDivideTheWidth) {
  struct Case {
    const char* fixture;
    const char* width;
    const char* heads;
  };
  for (const Case& c : {Case{"llama", "hidden_size", "num_attention_heads"}, Case{"gpt2", "n_embd", "n_head"},
                        Case{"mpt", "d_model", "n_heads"}, Case{"marian", "d_model", "encoder_attention_heads"},
                        Case{"bert", "hidden_size", "num_attention_heads"}, Case{"bloom", "hidden_size", "n_head"}}) {
    SCOPED_TRACE(c.fixture);
    ModelCopy m(c.fixture);
    m.config.erase("head_dim");
    const Model ok = m.load();
    EXPECT_EQ(ok.spec().head_dim, 16);  // 64 / 4
    m.config[c.heads] = 3;
    if (std::string(c.fixture) == "marian") m.config["decoder_attention_heads"] = 3;
    expect_has(m.load_error(),
               {"config.json: ", std::string(c.width) + " (64) is not a multiple of " + c.heads + " (3)"});
  }
}

// A head_dim field is taken as given: heads need not tile d_model (Llama's head_dim, T5's d_kv).
// Llama with 3 heads of 16 on a width of 64: the fixture's projections cut to 48 query rows,
// one key/value head, and 48 output columns.
TEST(FamilyRules, GivenHeadDimNeedNotTileTheWidth) {
  ModelCopy m("llama");
  m.config["num_attention_heads"] = 3;
  m.config["num_key_value_heads"] = 1;
  for (int l = 0; l < 2; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".self_attn.";
    for (const auto& [name, rows] : {std::pair<const char*, int64_t>{"q_proj", 48}, {"k_proj", 16}, {"v_proj", 16}}) {
      Tensor cut = Tensor::zeros({rows, 64});
      std::memcpy(cut.f32(), m.find(p + name + ".weight")->f32(), cut.nbytes());
      m.set(p + name + ".weight", cut);
    }
    const Tensor& o = *m.find(p + "o_proj.weight");
    Tensor cut = Tensor::zeros({64, 48});
    for (int64_t r = 0; r < 64; ++r) std::memcpy(cut.f32() + r * 48, o.f32() + r * 64, 48 * sizeof(float));
    m.set(p + "o_proj.weight", cut);
  }
  const Model three = m.load();
  EXPECT_EQ(three.spec().n_heads, 3);
  EXPECT_EQ(three.spec().head_dim, 16);
  EXPECT_EQ(three.spec().decoder.layers.at(0).self_attn.q.weight.shape, (std::vector<int64_t>{48, 64}));
  m.config.erase("head_dim");
  expect_has(m.load_error(),
             {"config.json: hidden_size (64) is not a multiple of num_attention_heads (3) and there is no head_dim"});
}
