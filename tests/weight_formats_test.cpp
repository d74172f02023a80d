// The ways Hugging Face stores weights (tests/data/checkpoints/, written from the fixtures' weights
// by transformers' save_pretrained: tools/fixtures/make_checkpoints.py): pytorch_model.bin, sharded
// .bin and sharded safetensors with their index, F16 and BF16. Each is held to a PyTorch reference:
// F32 files to the fixture's golden (and bit-identical to loading model.safetensors), F16/BF16
// files to PyTorch's float32 run on the weights loaded back from those files.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "ordo/ordo.hpp"
#include "ordo/output_dir.hpp"
#include "ordo/safetensors.hpp"
#include "ordo/weights.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

namespace fs = std::filesystem;
using namespace ordo;
using ordo::test::ids_of;
using ordo::test::within_tolerance;

namespace {

std::string checkpoint(const std::string& name) { return ordo::test::data_path("checkpoints/" + name); }

Model load(const std::string& dir) {
  ModelOptions o;
  o.load_tokenizer = false;
  return Model::load(dir, o);
}

struct Variant {
  const char* dir;
  const char* fixture;
  const char* format;  // Weights::format()
  DType stored;        // dtype of the stored tensors
};

const Variant kVariants[] = {
    {"gpt2-bin", "gpt2", "pytorch", DType::F32},
    {"bert-bin", "bert", "pytorch", DType::F32},
    {"bert-bin-sharded", "bert", "pytorch, 2 shards", DType::F32},
    {"llama-safetensors-sharded", "llama", "safetensors, 3 shards", DType::F32},
    {"llama-bin-sharded-bf16", "llama", "pytorch, 2 shards", DType::BF16},
    {"t5-bin-f16", "t5", "pytorch", DType::F16},
};

// Every output of a case the model computes, by golden key (unbatched cases only).
std::map<std::string, Tensor> outputs(const Model& m, const nlohmann::json& c) {
  std::map<std::string, Tensor> out;
  const std::string n = c.at("name");
  const std::vector<int32_t> ids = ids_of(c.at("input_ids"));
  auto hidden = [&](const std::string& key, const std::vector<Tensor>& hs) {
    for (size_t i = 0; i < hs.size(); ++i) out[n + "." + key + "." + std::to_string(i)] = hs[i];
  };
  if (m.spec().graph == GraphKind::Encoder) {
    std::vector<Tensor> hs;
    const Tensor h = m.engine().encode(ids, ids_of(c.at("token_type_ids")), {}, &hs);
    out[n + ".last_hidden_state"] = h;
    out[n + ".pooler_output"] = m.engine().pool(h);
    hidden("hidden_states", hs);
  } else if (m.spec().graph == GraphKind::EncoderDecoder) {
    std::vector<Tensor> enc;
    ForwardOutput f = m.forward_seq2seq(ids, ids_of(c.at("decoder_input_ids")), true, &enc);
    out[n + ".logits"] = f.logits;
    hidden("encoder_hidden_states", enc);
    hidden("decoder_hidden_states", f.hidden);
  } else {
    ForwardOutput f = m.forward(ids, true);
    out[n + ".logits"] = f.logits;
    hidden("hidden_states", f.hidden);
  }
  return out;
}

class WeightFormat : public testing::TestWithParam<Variant> {};

TEST_P(WeightFormat, MatchesPyTorchReference) {
  const Variant& v = GetParam();
  const test::Golden fixture = test::Golden::load(v.fixture);
  // F32: the fixture's golden. F16/BF16: PyTorch (float32) on the weights as stored in these files.
  const SafeTensors reference =
      v.stored == DType::F32 ? fixture.tensors : SafeTensors::open(checkpoint(v.dir) + "/golden.safetensors");
  const Model m = load(checkpoint(v.dir));
  int compared = 0;
  for (const auto& c : fixture.json.at("cases")) {
    if (c.at("input_ids")[0].is_array()) continue;
    for (const auto& [key, got] : outputs(m, c)) {
      SCOPED_TRACE(key);
      ASSERT_TRUE(reference.has(key));
      ASSERT_EQ(got.numel(), reference.get(key).numel());
      EXPECT_TRUE(within_tolerance(got.f32(), reference.get(key)));
      ++compared;
    }
  }
  EXPECT_GT(compared, 5);
}

// The same weights from model.safetensors and from the .bin or shards: the same bits out.
TEST_P(WeightFormat, F32FilesGiveBitIdenticalOutputsToModelSafetensors) {
  const Variant& v = GetParam();
  if (v.stored != DType::F32) return;  // reduced precision is different weights: held above
  const test::Golden fixture = test::Golden::load(v.fixture);
  const Model a = load(checkpoint(v.dir)), b = load(test::model_dir(v.fixture));
  for (const auto& c : fixture.json.at("cases")) {
    if (c.at("input_ids")[0].is_array()) continue;
    const auto oa = outputs(a, c), ob = outputs(b, c);
    ASSERT_EQ(oa.size(), ob.size());
    for (const auto& [key, t] : oa) {
      SCOPED_TRACE(key);
      ASSERT_EQ(t.nbytes(), ob.at(key).nbytes());
      EXPECT_EQ(std::memcmp(t.data, ob.at(key).data, t.nbytes()), 0);
    }
  }
}

TEST_P(WeightFormat, ReportsFilesFormatAndStoredDtype) {
  const Variant& v = GetParam();
  const Weights w = Weights::open_dir(checkpoint(v.dir));
  EXPECT_EQ(w.format(), v.format);
  size_t files = 0;
  for (const auto& e : fs::directory_iterator(checkpoint(v.dir))) {
    const std::string n = e.path().filename().string();
    files += n.find(".bin") != std::string::npos ||
             (n.find("safetensors") != std::string::npos && n != "golden.safetensors");
  }
  EXPECT_EQ(w.files().size(), files);  // every shard and the index, nothing else
  // Same tensor names as the fixture (a .bin keeps tied copies the safetensors file drops).
  const SafeTensors st = SafeTensors::open(test::model_dir(v.fixture) + "/model.safetensors");
  for (const std::string& n : st.names()) {
    SCOPED_TRACE(n);
    ASSERT_TRUE(w.has(n));
    EXPECT_EQ(w.get(n).dtype, v.stored);
    EXPECT_EQ(w.get(n).shape, st.get(n).shape);
  }
}

std::string variant_name(const testing::TestParamInfo<Variant>& p) {
  std::string s = p.param.dir;
  for (char& ch : s)
    if (ch == '-') ch = '_';
  return s;
}

INSTANTIATE_TEST_SUITE_P(Checkpoints, WeightFormat, testing::ValuesIn(kVariants), variant_name);

// torch.save keeps tied tensors as one storage: every name points at the same mapped bytes.
TEST(WeightFormats, TiedTensorsShareOneStorage) {
  const Weights gpt2 = Weights::open_dir(checkpoint("gpt2-bin"));
  EXPECT_EQ(gpt2.get("lm_head.weight").data, gpt2.get("transformer.wte.weight").data);
  // Mapped, not copied: every tensor borrows the one mapping of the file.
  for (const std::string& n : gpt2.names()) EXPECT_EQ(gpt2.get(n).owner, gpt2.get("lm_head.weight").owner) << n;
  const Weights t5 = Weights::open_dir(checkpoint("t5-bin-f16"));
  EXPECT_EQ(t5.get("encoder.embed_tokens.weight").data, t5.get("shared.weight").data);
  EXPECT_EQ(t5.get("decoder.embed_tokens.weight").data, t5.get("shared.weight").data);
  EXPECT_EQ(t5.get("lm_head.weight").data, t5.get("shared.weight").data);  // this T5 ties its head
}

// transformers < 4.31 saved BERT's int64 position_ids buffer: unread, and named if asked for.
TEST(WeightFormats, UnsupportedDtypeIsNamedOnlyWhenUsed) {
  const Weights w = Weights::open_dir(checkpoint("bert-bin"));
  EXPECT_TRUE(w.has("embeddings.position_ids"));
  EXPECT_EQ(w.unsupported().size(), 1u);
  const std::string e = test::error_of([&] { w.get("embeddings.position_ids"); });
  EXPECT_NE(e.find("pytorch_model.bin: tensor 'embeddings.position_ids': unsupported dtype (torch.LongStorage)"),
            std::string::npos)
      << e;
}

TEST(WeightFormats, InspectListsTheFilesItLoaded) {
  auto r = test::run_cli("inspect -m " + test::shell_quote(checkpoint("llama-safetensors-sharded")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* s :
       {"weights:      safetensors, 3 shards", "model.safetensors.index.json", "model-00001-of-00003.safetensors",
        "model-00003-of-00003.safetensors", "(model-00002-of-00003.safetensors)"})
    EXPECT_NE(r.out.find(s), std::string::npos) << s << " not in:\n" << r.out;
  r = test::run_cli("inspect --no-tensors -m " + test::shell_quote(checkpoint("bert-bin")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("weights:      pytorch\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pytorch_model.bin"), std::string::npos) << r.out;
}

// `ordo quantize` of shards or a .bin writes one model.safetensors (and no copies of the inputs)
// that loads to the same model as loading the input with that dtype.
TEST(WeightFormats, QuantizeOfShardsAndBinWritesOneSafetensors) {
  for (const char* name : {"llama-bin-sharded-bf16", "llama-safetensors-sharded", "gpt2-bin"}) {
    SCOPED_TRACE(name);
    const std::string out = test::make_temp_dir(std::string("quant-") + name);
    auto r = test::run_cli("quantize -m " + test::shell_quote(checkpoint(name)) + " --dtype int8 -o " +
                           test::shell_quote(out));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(out))
      if (e.path().filename() != "golden.safetensors" && e.path().filename() != ordo::kOutputDirManifest)
        files.push_back(e.path().filename().string());  // test data; ordo's own manifest
    std::sort(files.begin(), files.end());
    const bool gen = fs::exists(checkpoint(name) + "/generation_config.json");
    std::vector<std::string> expected = {"config.json", "model.safetensors"};
    if (gen) expected.insert(expected.begin() + 1, "generation_config.json");
    EXPECT_EQ(files, expected);
    EXPECT_EQ(SafeTensors::open(out + "/model.safetensors").metadata().at("format"), "pt");
    ModelOptions o;
    o.load_tokenizer = false;
    o.dtype = DType::I8;
    const Model direct = Model::load(checkpoint(name), o);
    const Model written = load(out);
    const std::vector<int32_t> ids = {1, 5, 9, 200, 17, 3};
    const Tensor a = direct.forward(ids).logits, b = written.forward(ids).logits;
    ASSERT_EQ(a.nbytes(), b.nbytes());
    EXPECT_EQ(std::memcmp(a.data, b.data, a.nbytes()), 0);
  }
}

}  // namespace
