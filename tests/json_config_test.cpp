// Tests of JsonConfig: typed fields, missing and null values, key paths, malformed files.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

// Private helper of ordo_models (not installed); the test reaches it by relative path.
#include "../models/src/json_config.hpp"

using ordo::JsonConfig;

namespace {

void expect_error(const std::function<void()>& fn, const std::vector<std::string>& parts) {
  try {
    fn();
  } catch (const ordo::Error& e) {
    std::string msg = e.what();
    for (const std::string& p : parts) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
    return;
  }
  ADD_FAILURE() << "no ordo::Error thrown";
}

const char* kConfig = R"({
  "hidden_size": 64,
  "n_layer": 2.0,
  "bad_int": 2.5,
  "huge": 1e300,
  "big_unsigned": 18446744073709551615,
  "as_string": "64",
  "rms_norm_eps": 1e-05,
  "rope_theta": 10000,
  "tie_word_embeddings": false,
  "one": 1,
  "hidden_act": "silu",
  "nothing": null,
  "factors": [1, 1.5, 2.0],
  "mixed": [1, "x"],
  "eos_token_id": [1, 2],
  "bos_token_id": 0,
  "rope_scaling": {"factor": 4.0, "rope_type": "yarn", "inner": {"a": "b"}}
})";

JsonConfig cfg() { return JsonConfig::parse(kConfig, "cfg.json"); }

}  // namespace

TEST(JsonConfig, ReadsTypedFields) {
  JsonConfig c = cfg();
  EXPECT_EQ(c.origin(), "cfg.json");
  EXPECT_EQ(c.get_int("hidden_size"), 64);
  EXPECT_DOUBLE_EQ(c.get_double("rms_norm_eps"), 1e-5);
  EXPECT_DOUBLE_EQ(c.get_double("rope_theta"), 10000.0);  // integer accepted where a number is expected
  EXPECT_FALSE(c.get_bool("tie_word_embeddings"));
  EXPECT_EQ(c.get_string("hidden_act"), "silu");
  EXPECT_EQ(c.get_double_array("factors"), (std::vector<double>{1.0, 1.5, 2.0}));
  EXPECT_EQ(c.get_int_array("eos_token_id"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(c.get_int_array("bos_token_id"), (std::vector<int64_t>{0}));
  EXPECT_EQ(c.raw().at("hidden_act"), "silu");
}

TEST(JsonConfig, FloatValuedIntegerAcceptedNonIntegralRejected) {
  JsonConfig c = cfg();
  EXPECT_EQ(c.get_int("n_layer"), 2);
  expect_error([&] { c.get_int("bad_int"); }, {"cfg.json", "field 'bad_int' must be an integer, got number 2.5"});
  expect_error([&] { c.get_int("huge"); }, {"cfg.json", "field 'huge' must be an integer"});
  expect_error([&] { c.get_int("big_unsigned"); }, {"cfg.json", "field 'big_unsigned' is out of range"});
  expect_error([&] { c.get_int("bad_int", 7); }, {"field 'bad_int'"});  // a default does not hide a bad value
}

TEST(JsonConfig, WrongTypeNamesTheField) {
  JsonConfig c = cfg();
  expect_error([&] { c.get_int("as_string"); }, {"cfg.json: field 'as_string' must be an integer, got string \"64\""});
  expect_error([&] { c.get_double("hidden_act"); }, {"cfg.json: field 'hidden_act' must be a number, got string"});
  expect_error([&] { c.get_bool("one"); }, {"cfg.json: field 'one' must be a boolean, got number 1"});
  expect_error([&] { c.get_string("hidden_size"); }, {"cfg.json: field 'hidden_size' must be a string, got number 64"});
  expect_error([&] { c.get_double_array("mixed"); }, {"cfg.json: field 'mixed' entry 1 must be a number"});
  expect_error([&] { c.get_double_array("hidden_size"); }, {"field 'hidden_size' must be an array of numbers"});
  expect_error([&] { c.get_int_array("factors"); }, {"field 'factors' entry 1 must be an integer, got number 1.5"});
  expect_error([&] { c.child("hidden_act"); }, {"cfg.json: field 'hidden_act' must be an object"});
}

TEST(JsonConfig, MissingAndNullFields) {
  JsonConfig c = cfg();
  EXPECT_TRUE(c.has("hidden_size"));
  EXPECT_FALSE(c.has("absent"));
  EXPECT_FALSE(c.has("nothing"));  // null counts as absent
  expect_error([&] { c.get_int("absent"); }, {"cfg.json: field 'absent' missing"});
  expect_error([&] { c.get_string("nothing"); }, {"cfg.json: field 'nothing' missing"});
  expect_error([&] { c.child("nothing"); }, {"cfg.json: field 'nothing' missing"});
  EXPECT_EQ(c.get_int("absent", 5), 5);
  EXPECT_EQ(c.get_int("nothing", -1), -1);
  EXPECT_DOUBLE_EQ(c.get_double("absent", 0.5), 0.5);
  EXPECT_TRUE(c.get_bool("absent", true));
  EXPECT_EQ(c.get_string("absent", "gelu"), "gelu");
  EXPECT_EQ(c.get_int("hidden_size", 5), 64);
}

TEST(JsonConfig, FirstPresentOfSeveralNames) {
  JsonConfig c = cfg();
  EXPECT_EQ(c.get_int_any({"n_embd", "hidden_size", "d_model"}), 64);
  EXPECT_EQ(c.get_int_any({"nothing", "n_layer"}), 2);
  EXPECT_EQ(c.get_int_any({"n_embd", "d_model"}, 32), 32);
  EXPECT_DOUBLE_EQ(c.get_double_any({"layer_norm_epsilon", "rms_norm_eps"}), 1e-5);
  EXPECT_DOUBLE_EQ(c.get_double_any({"layer_norm_eps"}, 1e-12), 1e-12);
  EXPECT_EQ(c.first_present({"n_embd", "hidden_size"}), std::optional<std::string>("hidden_size"));
  EXPECT_FALSE(c.first_present({"n_embd", "nothing"}).has_value());
  expect_error(
      [&] {
        c.get_int_any({"n_embd", "d_model"});
      },
      {"cfg.json: none of the fields 'n_embd', 'd_model' is present"});
  expect_error([&] { c.get_int_any({"n_embd", "as_string"}); }, {"field 'as_string' must be an integer"});
}

TEST(JsonConfig, ChildObjectsCarryTheirKeyPath) {
  JsonConfig r = cfg().child("rope_scaling");
  EXPECT_EQ(r.origin(), "cfg.json: rope_scaling");
  EXPECT_DOUBLE_EQ(r.get_double("factor"), 4.0);
  EXPECT_EQ(r.get_int("factor"), 4);
  EXPECT_EQ(r.get_string("rope_type"), "yarn");
  expect_error([&] { r.get_double("original_max_position_embeddings"); },
               {"cfg.json: rope_scaling: field 'original_max_position_embeddings' missing"});
  JsonConfig inner = r.child("inner");
  EXPECT_EQ(inner.origin(), "cfg.json: rope_scaling.inner");
  expect_error([&] { inner.get_int("a"); }, {"cfg.json: rope_scaling.inner: field 'a' must be an integer"});
}

TEST(JsonConfig, MalformedJsonNamesFileLineAndColumn) {
  expect_error([] { JsonConfig::parse("{\n  \"a\": 1,\n  \"b\": }\n", "bad.json"); },
               {"bad.json: malformed JSON at line 3, column 8: ", "unexpected '}'"});
  expect_error([] { JsonConfig::parse("", "empty.json"); }, {"empty.json: malformed JSON at line 1, column 1"});
  expect_error([] { JsonConfig::parse("{\"a\": 1} x", "trail.json"); },
               {"trail.json: malformed JSON at line 1, column 10"});
  expect_error([] { JsonConfig::parse("[1, 2]", "arr.json"); }, {"arr.json: expected a JSON object, got array"});
}

TEST(JsonConfig, LoadsFilesAndReportsFileErrors) {
  JsonConfig c = JsonConfig::load(std::string(ORDO_TEST_DATA) + "/fixtures/llama/config.json");
  EXPECT_EQ(c.get_int("hidden_size"), 64);
  EXPECT_EQ(c.get_int_any({"num_key_value_heads", "num_attention_heads"}), 2);
  EXPECT_DOUBLE_EQ(c.get_double("rope_theta"), 10000.0);
  EXPECT_FALSE(c.has("rope_scaling"));  // "rope_scaling": null
  EXPECT_EQ(c.get_string("model_type"), "llama");

  JsonConfig y = JsonConfig::load(std::string(ORDO_TEST_DATA) + "/fixtures/llama-yarn/config.json");
  EXPECT_EQ(y.child("rope_scaling").get_string("rope_type"), "yarn");

  std::string tmpl = ::testing::TempDir() + "ordo_json_XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string dir = tmpl;
  const std::string bad = dir + "/config.json";
  std::ofstream(bad) << "{\n  \"hidden_size\": 64,\n  \"vocab_size\": 256,,\n}\n";
  expect_error([&] { JsonConfig::load(bad); }, {bad + ": malformed JSON at line 3, column"});
  expect_error([&] { JsonConfig::load(dir + "/absent.json"); }, {dir + "/absent.json: cannot open"});
  expect_error([&] { JsonConfig::load(dir); }, {dir + ": cannot open", "directory"});
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}
