// `ordo quantize --format gguf` on bad input: non-finite or f16-overflowing weights, special token
// ids outside the vocabulary, a rope_scaling of the wrong shape, nested metadata arrays.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <tuple>

#include "../models/src/weights/gguf.hpp"
#include "../models/src/weights/gguf_writer.hpp"
#include "ordo/ordo.hpp"
#include "ordo/safetensors.hpp"
#include "support/cli.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

const std::string kStories = std::string(ORDO_SOURCE_DIR) + "/models/stories260K";
const std::string kQ = "model.layers.0.self_attn.q_proj.weight";

// A copy of the bundled model; element `index` of tensor `name` set to `value` when name is given,
// and config.json edited by `edit`.
std::string model_copy(const std::string& tag, const std::string& name = "", int64_t index = 0, float value = 0,
                       const std::function<void(json&)>& edit = nullptr) {
  const std::string dir = ordo::test::make_temp_dir(tag);
  for (const auto& e : fs::directory_iterator(kStories))
    if (e.is_regular_file() && e.path().filename() != "model.safetensors" && e.path().filename() != "config.json")
      fs::copy_file(e.path(), dir / e.path().filename());
  std::ifstream cf(kStories + "/config.json");
  json cfg = json::parse(cf);
  if (edit) edit(cfg);
  std::ofstream(dir + "/config.json") << cfg.dump(2);
  const ordo::SafeTensors st = ordo::SafeTensors::open(kStories + "/model.safetensors");
  std::vector<std::pair<std::string, ordo::Tensor>> tensors;
  for (const auto& [n, t] : st.tensors()) {
    ordo::Tensor c = ordo::Tensor::zeros(t.shape, t.dtype);
    std::memcpy(c.data, t.data, t.nbytes());
    if (n == name) c.f32()[index] = value;
    tensors.emplace_back(n, c);
  }
  ordo::write_safetensors(dir + "/model.safetensors", tensors, st.metadata());
  return dir;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

// NaN used to become 0 in q8_0 and the largest code in q4_0, inf an inf block scale, and 1e5 an
// f16 inf: each is now an Error naming the tensor, the value and its index, and no file is left.
TEST(GgufWriterErrors, NonFiniteAndF16OverflowNameTheTensor) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  for (const auto& [dtype, value, shown] : std::vector<std::tuple<std::string, float, std::string>>{
           {"q8_0", nan, "NaN"}, {"q4_0", nan, "NaN"}, {"q8_0", -inf, "-inf"}, {"f16", 1e5f, "100000"}}) {
    SCOPED_TRACE(dtype + " " + shown);
    const std::string dir = model_copy("gguf-bad", kQ, 64 + 5, value);
    const std::string out_dir = ordo::test::make_temp_dir("gguf-bad-out");
    const ordo::test::CliResult r =
        ordo::test::run_cli("quantize -m " + dir + " --format gguf --dtype " + dtype + " -o " + out_dir + "/m.gguf");
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(has(r.err, dir + ": tensor '" + kQ + "' holds " + shown + " at [1, 5] (element 69)")) << r.err;
    EXPECT_TRUE(fs::is_empty(out_dir)) << "a file was left";
    fs::remove_all(dir);
    fs::remove_all(out_dir);
  }
}

// "pad_token_id": -1 (early LLaMA configs) was written as 4294967295, an id past the vocabulary as
// it was; neither is written now (as llama.cpp's converter does), with a note naming the field.
TEST(GgufWriterErrors, SpecialIdsOutsideTheVocabularyAreNotWritten) {
  const std::string dir = model_copy("gguf-ids", "", 0, 0, [](json& c) {
    c["pad_token_id"] = -1;
    c["eos_token_id"] = 512;  // the vocabulary is 512
  });
  const std::string out = ordo::test::make_temp_dir("gguf-ids-out") + "/m.gguf";
  const ordo::test::CliResult r = ordo::test::run_cli("quantize -m " + dir + " --format gguf --dtype f32 -o " + out);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(has(r.err, "pad_token_id -1 is outside the vocabulary [0, 512)")) << r.err;
  EXPECT_TRUE(has(r.err, "eos_token_id 512 is outside the vocabulary [0, 512)")) << r.err;
  const ordo::GgufFile g = ordo::GgufFile::open(out);
  EXPECT_EQ(g.find("tokenizer.ggml.pad_token_id"), nullptr);
  EXPECT_EQ(g.find("tokenizer.ggml.eos_token_id"), nullptr);
  ASSERT_NE(g.find("tokenizer.ggml.bos_token_id"), nullptr);
  EXPECT_EQ(g.get_int("tokenizer.ggml.bos_token_id"), 1);
  fs::remove_all(dir);
}

// A rope_scaling that is not an object, or whose factor / original_max_position_embeddings has the
// wrong type, threw nlohmann's type_error; now an Error naming config.json and the field.
TEST(GgufWriterErrors, RopeScalingOfTheWrongTypeIsNamed) {
  for (const auto& [scaling, field] : std::vector<std::pair<json, std::string>>{
           {json("linear"), "rope_scaling"},
           {json{{"type", "linear"}, {"factor", "2"}}, "factor"},
           {json{{"rope_type", "yarn"}, {"factor", 2.0}, {"original_max_position_embeddings", "4096"}},
            "original_max_position_embeddings"}}) {
    SCOPED_TRACE(scaling.dump());
    const std::string dir =
        model_copy("gguf-rope", "", 0, 0, [value = scaling](json& c) { c["rope_scaling"] = value; });
    const std::string out = ordo::test::make_temp_dir("gguf-rope-out") + "/m.gguf";
    try {
      ordo::write_gguf_model(dir, out, "f32");
      ADD_FAILURE() << "no error";
    } catch (const ordo::Error& e) {
      EXPECT_TRUE(has(e.what(), dir + "/config.json")) << e.what();
      EXPECT_TRUE(has(e.what(), field)) << e.what();
    }
    EXPECT_FALSE(fs::exists(out));
    fs::remove_all(dir);
  }
}

TEST(GgufWriterErrors, NestedArraysNameTheKey) {
  ordo::GgufValue inner, outer;
  inner.type = ordo::GgufType::Array;
  outer.type = ordo::GgufType::Array;
  outer.elem = ordo::GgufType::Array;
  outer.items = {inner};
  ordo::GgufWriter w;
  try {
    w.add_value("general.nested", outer);
    ADD_FAILURE() << "no error";
  } catch (const ordo::Error& e) {
    EXPECT_TRUE(has(e.what(), "key 'general.nested'")) << e.what();
  }
}
