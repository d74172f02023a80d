// Bad model directories and bad inputs: each a clear Error naming the file, field, tensor or token.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <new>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "ordo/ordo.hpp"
#include "ordo/safetensors.hpp"
#include "ordo/synthetic.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

namespace fs = std::filesystem;
using ordo::Error;
using ordo::Model;

namespace {

// A writable copy of the llama fixture's model directory.
class BrokenModel : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = ordo::test::make_temp_dir("model");
    for (const char* f : {"config.json", "model.safetensors", "generation_config.json"})
      fs::copy_file(ordo::test::model_dir("llama") + "/" + f, dir_ + "/" + f);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const std::string& name, const std::string& text) { std::ofstream(dir_ + "/" + name) << text; }
  std::string read(const std::string& name) {
    std::ifstream f(dir_ + "/" + name);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  // Expects loading to throw an Error whose message contains every needle.
  void expect_load_error(const std::vector<std::string>& needles) {
    ordo::ModelOptions o;
    o.load_tokenizer = false;
    try {
      Model::load(dir_, o);
      FAIL() << "loading succeeded";
    } catch (const Error& e) {
      for (const auto& n : needles) EXPECT_NE(std::string(e.what()).find(n), std::string::npos) << e.what();
    }
  }
  std::string dir_;
};

std::string replace(std::string s, const std::string& from, const std::string& to) {
  const size_t at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return at == std::string::npos ? s : s.replace(at, from.size(), to);
}

}  // namespace

TEST_F(BrokenModel, MalformedConfigJsonNamesFileAndLine) {
  write("config.json", "{\n  \"model_type\": \"llama\",\n  \"hidden_size\": 64,,\n}");
  expect_load_error({"config.json", "line 3"});
}

TEST_F(BrokenModel, WrongTypeFieldNamesField) {
  write("config.json", replace(read("config.json"), "\"hidden_size\": 64", "\"hidden_size\": \"64\""));
  expect_load_error({"config.json", "hidden_size"});
}

TEST_F(BrokenModel, MissingFieldNamesField) {
  write("config.json", replace(read("config.json"), "\"num_hidden_layers\": 2,", ""));
  expect_load_error({"config.json", "num_hidden_layers"});
}

TEST_F(BrokenModel, UnknownModelTypeListsKnownOnes) {
  write("config.json", replace(read("config.json"), "\"model_type\": \"llama\"", "\"model_type\": \"rwkv\""));
  expect_load_error({"config.json", "rwkv", "llama"});
}

TEST_F(BrokenModel, ConfigDisagreeingWithWeightsNamesTensor) {
  write("config.json", replace(read("config.json"), "\"intermediate_size\": 128", "\"intermediate_size\": 96"));
  expect_load_error({"model.safetensors", "model.layers.0.mlp.gate_proj.weight", "[96, 64]"});
}

TEST_F(BrokenModel, MissingTensorNamesTensor) {
  // Rewrite the weights without one tensor.
  ordo::SafeTensors st = ordo::SafeTensors::open(dir_ + "/model.safetensors");
  std::vector<std::pair<std::string, ordo::Tensor>> keep;
  for (const auto& n : st.names())
    if (n != "model.layers.1.self_attn.k_proj.weight") keep.push_back({n, st.get(n)});
  ordo::write_safetensors(dir_ + "/model.safetensors", keep);
  expect_load_error({"model.safetensors", "missing tensor 'model.layers.1.self_attn.k_proj.weight'"});
}

TEST_F(BrokenModel, TruncatedWeightsNameFile) {
  fs::resize_file(dir_ + "/model.safetensors", fs::file_size(dir_ + "/model.safetensors") / 2);
  expect_load_error({"model.safetensors"});
}

TEST_F(BrokenModel, MissingWeightsFile) {
  fs::remove(dir_ + "/model.safetensors");
  // What was looked for and what the directory holds.
  expect_load_error(
      {"no weights: looked for model.safetensors, model.safetensors.index.json, pytorch_model.bin and "
       "pytorch_model.bin.index.json",
       "found config.json, generation_config.json"});
}

TEST_F(BrokenModel, UnknownScalingTypeNamesIt) {
  write("config.json", replace(read("config.json"), "\"rope_scaling\": null",
                               "\"rope_scaling\": {\"type\": \"stretchy\", \"factor\": 2.0}"));
  expect_load_error({"stretchy", "yarn"});
}

// A spec built through the library whose head does not give one logit per vocabulary entry.
TEST(ModelErrors, LmHeadNotVocabByDModelNamesShapes) {
  const ordo::SyntheticShape tiny = ordo::parse_synthetic_shape("64,1,4,4,96,100");
  for (const std::vector<int64_t>& shape : {std::vector<int64_t>{90, 64}, std::vector<int64_t>{100, 32}}) {
    ordo::ModelSpec spec = ordo::synthetic_llama(tiny);
    spec.lm_head.weight = ordo::Tensor::zeros(shape);
    try {
      ordo::Transformer tf(spec);
      FAIL() << "no error for " << spec.lm_head.weight.shape_str();
    } catch (const Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("lm_head weight is " + spec.lm_head.weight.shape_str()), std::string::npos) << msg;
      EXPECT_NE(msg.find("vocab_size 100, d_model 64"), std::string::npos) << msg;
    }
  }
}

TEST(ModelErrors, TokenIdOutOfRangeNamesToken) {
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  Model m = Model::load(ordo::test::model_dir("llama"), o);
  try {
    m.forward({1, 2, 256});
    FAIL() << "forward accepted id 256 with vocab 256";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 256 at position 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(m.forward({-1}), Error);
}

TEST(ModelErrors, UnknownPositionSchemeListsKnownOnes) {
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  o.position = "wobble";
  try {
    Model::load(ordo::test::model_dir("llama"), o);
    FAIL();
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("wobble"), std::string::npos) << msg;
    for (const char* s : {"none", "learned", "sinusoidal", "relative", "rope", "alibi"})
      EXPECT_NE(msg.find(s), std::string::npos) << msg;
  }
}

TEST(ModelErrors, LearnedSchemeWithoutTableSaysSo) {
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  o.position = "learned";
  try {
    Model::load(ordo::test::model_dir("llama"), o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("learned position table"), std::string::npos) << e.what();
  }
}

TEST(ModelErrors, ScalingThatDoesNotApplyIsRejected) {
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  o.position = "none";
  ordo::Scaling s;
  s.type = ordo::ScalingType::YaRN;
  s.factor = 4;
  o.scaling = s;
  EXPECT_THROW(Model::load(ordo::test::model_dir("llama"), o), Error);
}

TEST(ModelErrors, SequenceLongerThanLearnedTableSuggestsInterpolation) {
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  Model m = Model::load(ordo::test::model_dir("gpt2"), o);  // n_positions 64
  std::vector<int32_t> ids(80, 5);
  try {
    m.forward(ids);
    FAIL() << "80 positions accepted with a 64-row table";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("64"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--scaling linear"), std::string::npos) << msg;
  }
  ordo::Scaling s;
  s.type = ordo::ScalingType::Linear;
  s.factor = 2;
  o.scaling = s;
  Model stretched = Model::load(ordo::test::model_dir("gpt2"), o);
  ordo::ForwardOutput out = stretched.forward(ids);
  EXPECT_EQ(out.logits.dim(0), 80);
  for (int64_t i = 0; i < out.logits.numel(); ++i) ASSERT_TRUE(std::isfinite(out.logits.f32()[i]));
}

// Every family reads its activation through one table of Hugging Face's names: OPT accepts the
// tanh-form names GPT-NeoX does, and an unknown name is an Error naming the file, field and the
// known names.
TEST(ModelErrors, ActivationNamesAreOneTableForEveryFamily) {
  struct Case {
    const char* fixture;
    const char* field;
  };
  for (const Case& c :
       {Case{"opt", "activation_function"}, Case{"gpt-neox", "hidden_act"}, Case{"gpt2", "activation_function"},
        Case{"bert", "hidden_act"}, Case{"marian", "activation_function"}}) {
    SCOPED_TRACE(c.fixture);
    const std::string dir = ordo::test::make_temp_dir("activation");
    for (const auto& e : fs::directory_iterator(ordo::test::model_dir(c.fixture)))
      fs::copy(e.path(), dir + "/" + e.path().filename().string());
    nlohmann::json cfg = nlohmann::json::parse(ordo::test::read_file(dir + "/config.json"));
    ordo::ModelOptions o;
    o.load_tokenizer = false;
    for (const char* name : {"gelu_pytorch_tanh", "gelu_fast", "gelu_new"}) {
      cfg[c.field] = name;
      std::ofstream(dir + "/config.json") << cfg.dump();
      const Model m = Model::load(dir, o);
      const auto& layers =
          m.spec().graph == ordo::GraphKind::Encoder ? m.spec().encoder.layers : m.spec().decoder.layers;
      EXPECT_EQ(layers.at(0).ffn.act, ordo::Activation::GeluTanh) << name;
    }
    cfg[c.field] = "gelu_tanh_typo";
    std::ofstream(dir + "/config.json") << cfg.dump();
    const std::string msg = ordo::test::error_of([&] { Model::load(dir, o); });
    for (const std::string& needle :
         {std::string("config.json: field '") + c.field + "'", std::string("'gelu_tanh_typo' is not supported"),
          std::string("gelu_pytorch_tanh")})
      EXPECT_NE(msg.find(needle), std::string::npos) << msg;
    fs::remove_all(dir);
  }
}

// ordo's calls throw ordo::Error only, but an exception the caller's own callback throws is the
// caller's: it must come back as it was thrown, not converted or swallowed.
TEST(ModelErrors, CallbackExceptionsReachTheCallerUnchanged) {
  Model m = Model::load(ordo::test::model_dir("stories260K"));
  ordo::TextGenerateParams p;
  p.max_new_tokens = 8;
  struct Mine {
    int code;
  };
  try {
    m.generate("Once upon a time", p, [](const std::string&) -> bool { throw std::runtime_error("from on_text"); });
    FAIL() << "generate swallowed the callback's exception";
  } catch (const Error& e) {
    FAIL() << "converted to ordo::Error: " << e.what();
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "from on_text");
  }
  const std::vector<int32_t> prompt = m.encode("Once upon a time");
  int calls = 0;
  try {
    m.generate_ids(prompt, p, [&](int32_t) -> bool {
      if (++calls == 3) throw Mine{42};
      return true;
    });
    FAIL() << "generate_ids swallowed the callback's exception";
  } catch (const Mine& mine) {
    EXPECT_EQ(mine.code, 42);
    EXPECT_EQ(calls, 3);
  }
  try {
    m.generate_batch({"Once", "Lily"}, p, 2, [](size_t i, const std::string&) -> bool {
      if (i == 1) throw std::bad_alloc();
      return true;
    });
    FAIL() << "generate_batch swallowed the callback's exception";
  } catch (const Error& e) {
    FAIL() << "converted to ordo::Error: " << e.what();
  } catch (const std::bad_alloc&) {
  }
  // ordo's own failures still arrive as ordo::Error, and the model is usable afterwards.
  EXPECT_THROW(m.generate_ids({}, p), Error);
  EXPECT_EQ(m.generate_ids(prompt, p).ids.size(), 8u);
}
