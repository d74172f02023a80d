// Hostile input (issue 15): every class of crash, hang, foreign exception or silent run an outside
// probe found is now an ordo::Error naming the file and field, the flag or the token. The inputs
// are written here byte by byte; each expectation is the message ordo must give.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <stdexcept>

#include "ordo/generate.hpp"
#include "ordo/input.hpp"
#include "ordo/ops.hpp"
#include "ordo/ordo.hpp"
#include "ordo/safetensors.hpp"
#include "ordo/tokenizer.hpp"
#include "support/cli.hpp"
#include "support/errors.hpp"
#include "support/golden.hpp"

namespace fs = std::filesystem;
using ordo::Error;

using ordo::test::error_of;
using ordo::test::expect_has;
using ordo::test::write_bytes;

namespace {

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

// A directory with a copy of a fixture's files (names given) that a test then damages.
class HostileDir : public testing::Test {
 protected:
  void SetUp() override { dir_ = ordo::test::make_temp_dir("hostile"); }
  void TearDown() override { fs::remove_all(dir_); }
  void copy_from(const std::string& src_dir, std::initializer_list<const char*> names) {
    for (const char* n : names) fs::copy_file(src_dir + "/" + n, dir_ + "/" + n, fs::copy_options::overwrite_existing);
  }
  void model(const std::string& fixture) {
    copy_from(ordo::test::model_dir(fixture), {"config.json", "model.safetensors"});
  }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string read(const std::string& name) const {
    std::ifstream f(path(name), std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  }
  // config.json with `from` replaced by `to` (which must be present once).
  void edit_config(const std::string& from, const std::string& to) {
    std::string s = read("config.json");
    const size_t at = s.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    write_bytes(path("config.json"), s.replace(at, from.size(), to));
  }
  std::string load_error() const {
    return error_of([&] {
      ordo::ModelOptions o;
      o.load_tokenizer = false;
      ordo::Model::load(dir_, o);
    });
  }
  void fifo(const std::string& name) {
    fs::remove(path(name));
    ASSERT_EQ(mkfifo(path(name).c_str(), 0600), 0);
  }
  std::string dir_;
};

const std::string kTokData = std::string(ORDO_TEST_DATA) + "/fixtures/tokenizers";

// A minimal byte-level BPE tokenizer.json; `extra` is spliced into the top-level object.
std::string tokenizer_json(const std::string& vocab, const std::string& merges, const std::string& extra = "") {
  return R"({"model": {"type": "BPE", "vocab": )" + vocab + R"(, "merges": )" + merges +
         R"(}, "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false})" + extra + "}";
}

}  // namespace

// ---- tokenizers ----------------------------------------------------------------------------------

TEST_F(HostileDir, WordPieceDecodeOfInvalidUtf8VocabularyStaysInBounds) {
  // Cut-off multi-byte sequences at the end of a token: the whitespace strip of decode walked past them.
  write_bytes(path("vocab.txt"), "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n\xF0\x9F\nab \xE2\n\xC3\n");
  const auto tok = ordo::load_wordpiece(path("vocab.txt"));
  EXPECT_EQ(tok->decode({5}), "\xF0\x9F");
  EXPECT_EQ(tok->decode({6}), "ab \xE2");
  EXPECT_EQ(tok->decode({7}), "\xC3");
  EXPECT_EQ(tok->decode({5, 6, 7}), "\xF0\x9F ab \xE2 \xC3");
}

TEST_F(HostileDir, AddedTokenIdMinusOneInTokenizerConfigIsNamed) {
  copy_from(kTokData + "/bert", {"vocab.txt"});
  write_bytes(path("tokenizer_config.json"),
              R"({"added_tokens_decoder": {"-1": {"content": "[X]", "special": true}}})");
  expect_has(error_of([&] { ordo::load_tokenizer(dir_); }),
             {"tokenizer_config.json", "added_tokens_decoder key '-1'", "is not a token id"});
  fs::remove(path("vocab.txt"));
  copy_from(kTokData + "/gpt2", {"vocab.json", "merges.txt"});
  expect_has(error_of([&] { ordo::load_tokenizer(dir_); }), {"tokenizer_config.json", "key '-1'"});
}

TEST_F(HostileDir, AddedTokenIdBeyondTheVocabularyIsNamed) {
  copy_from(kTokData + "/bert", {"vocab.txt"});
  write_bytes(path("tokenizer_config.json"), R"({"added_tokens_decoder": {"2147483647": {"content": "[X]"}}})");
  expect_has(error_of([&] { ordo::load_tokenizer(dir_); }),
             {"wordpiece tokenizer", "added token '[X]'", "token id 2147483647 is out of range", "must be below"});
  write_bytes(path("tokenizer_config.json"), R"({"added_tokens_decoder": {"99999999999": {"content": "[X]"}}})");
  expect_has(error_of([&] { ordo::load_tokenizer(dir_); }), {"key '99999999999'", "is not a token id"});
}

TEST_F(HostileDir, TokenizerJsonIdsOutOfRangeAreNamed) {
  write_bytes(path("tokenizer.json"), tokenizer_json(R"({"a": 0, "b": 100000000})", "[]"));
  expect_has(error_of([&] { ordo::load_bpe_tokenizer_json(path("tokenizer.json")); }),
             {"tokenizer.json: model.vocab: token 'b' has id 100000000", "out of range: 0 <= id < 2^24"});
  write_bytes(path("tokenizer.json"),
              tokenizer_json(R"({"a": 0})", "[]", R"(, "added_tokens": [{"id": -1, "content": "<x>"}])"));
  expect_has(error_of([&] { ordo::load_bpe_tokenizer_json(path("tokenizer.json")); }),
             {"tokenizer.json: added_tokens[0].id: must be an integer with 0 <= id < 2^24, got -1"});
  write_bytes(path("tokenizer.json"),
              tokenizer_json(R"({"a": 0})", "[]", R"(, "added_tokens": [{"id": 2147483647, "content": "<x>"}])"));
  expect_has(error_of([&] { ordo::load_bpe_tokenizer_json(path("tokenizer.json")); }),
             {"tokenizer.json: added_tokens[0].id", "0 <= id < 2^24, got 2147483647"});
  write_bytes(path("tokenizer.json"), tokenizer_json(R"({"a": 4294967296})", "[]"));
  expect_has(error_of([&] { ordo::load_bpe_tokenizer_json(path("tokenizer.json")); }),
             {"model.vocab: token 'a' has id 4294967296", "out of range"});
}

TEST_F(HostileDir, MergesNamingUnknownTokensAreRefused) {
  write_bytes(path("tokenizer.json"), tokenizer_json(R"({"a": 0, "b": 1, "ab": 2})", R"(["a b", "x y"])"));
  expect_has(error_of([&] { ordo::load_bpe_tokenizer_json(path("tokenizer.json")); }),
             {"tokenizer.json: model.merges: merge 'x y' uses a token that is not in the vocabulary"});
  write_bytes(path("tokenizer.json"), tokenizer_json(R"({"a": 0, "b": 1})", R"(["a b"])"));
  expect_has(error_of([&] { ordo::load_bpe_tokenizer_json(path("tokenizer.json")); }),
             {"merge 'a b' makes 'ab', which is not in the vocabulary"});
}

TEST_F(HostileDir, EncodeCannotEmitIdsDecodeRejects) {
  // A template whose special token id is not in the vocabulary: encode would emit an id decode refuses.
  const std::string post =
      R"(, "post_processor": {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>"}},
      {"Sequence": {"id": "A"}}], "special_tokens": {"<s>": {"id": "<s>", "ids": [999], "tokens": ["<s>"]}}})";
  write_bytes(path("tokenizer.json"), tokenizer_json(R"({"a": 0})", "[]", post));
  expect_has(error_of([&] { ordo::load_bpe_tokenizer_json(path("tokenizer.json")); }),
             {"tokenizer.json: the post-processor's special token '<s>' is token id 999", "not in the vocabulary"});
  // An EOS id from the options (config.json's eos_token_id) that the WordPiece vocabulary lacks.
  ordo::TokenizerOptions o;
  o.eos_id = 5000;
  expect_has(error_of([&] { ordo::load_wordpiece(kTokData + "/bert/vocab.txt", o); }),
             {"vocab.txt: the id added after the text is token id 5000"});
}

TEST_F(HostileDir, DeeplyNestedJsonIsRefusedBeforeParsing) {
  write_bytes(path("tokenizer.json"), tokenizer_json(R"({"a": 0})", "[]", R"(, "normalizer": )" + nested(200000)));
  expect_has(error_of([&] { ordo::load_tokenizer(dir_); }),
             {"tokenizer.json", "JSON nests arrays/objects more than 128 levels deep"});
  // Brackets inside strings do not count.
  write_bytes(path("tokenizer.json"), tokenizer_json(R"({"a": 0, ")" + std::string(300, '[') + R"(": 1})", "[]"));
  EXPECT_EQ(ordo::load_tokenizer(dir_)->vocab_size(), 2);
}

TEST_F(HostileDir, NonRegularTokenizerFilesAreRefusedNotWaitedOn) {
  fifo("tokenizer.json");
  expect_has(error_of([&] { ordo::load_tokenizer(dir_); }), {"tokenizer.json: not a regular file"});
  fifo("vocab.txt");
  expect_has(error_of([&] { ordo::load_wordpiece(path("vocab.txt")); }), {"vocab.txt: not a regular file"});
  fifo("tokenizer.model");
  expect_has(error_of([&] { ordo::load_sentencepiece(path("tokenizer.model")); }),
             {"tokenizer.model: not a regular file"});
}

// ---- config.json and safetensors ----------------------------------------------------------------

TEST_F(HostileDir, ZeroHeadsAreNamedNotDividedBy) {
  model("llama");
  edit_config("\"head_dim\": 16,", "");
  edit_config("\"num_attention_heads\": 4", "\"num_attention_heads\": 0");
  expect_has(load_error(), {"config.json: field 'num_attention_heads' must be an integer in [1, 2147483647], got 0"});
  fs::remove_all(dir_);
  fs::create_directories(dir_);
  model("marian");
  edit_config("\"encoder_attention_heads\": 4", "\"encoder_attention_heads\": 0");
  edit_config("\"decoder_attention_heads\": 4", "\"decoder_attention_heads\": 0");
  expect_has(load_error(),
             {"config.json: field 'encoder_attention_heads' must be an integer in [1, 2147483647], got 0"});
}

TEST_F(HostileDir, EpsilonsMustBePositiveAndFinite) {
  model("llama");
  for (const char* bad : {"-1", "0", "1e-50"}) {
    SCOPED_TRACE(bad);
    const std::string before = read("config.json");
    edit_config("\"rms_norm_eps\": 1e-05", std::string("\"rms_norm_eps\": ") + bad);
    expect_has(load_error(), {"config.json: field 'rms_norm_eps' must be a finite number > 0"});
    write_bytes(path("config.json"), before);
  }
}

TEST_F(HostileDir, OutOfRangeFieldsAreNamed) {
  model("llama");
  const std::string good = read("config.json");
  struct Case {
    std::string from, to, message;
  };
  const std::vector<Case> cases = {
      {"\"rope_theta\": 10000.0", "\"rope_theta\": 10000.0, \"partial_rotary_factor\": 1e300",
       "config.json: field 'partial_rotary_factor' must be in (0, 1]"},
      {"\"rope_theta\": 10000.0", "\"rope_theta\": 10000.0, \"partial_rotary_factor\": 0.01",
       "config.json: field 'partial_rotary_factor' 0.01 of head_dim 16 leaves no rotary dimensions"},
      {"\"eos_token_id\": 2", "\"eos_token_id\": 2147483648",
       "field 'eos_token_id' must be a token id in [-1, 2147483647], got 2147483648"},
      {"\"hidden_size\": 64", "\"hidden_size\": 1e400",
       "config.json: field 'hidden_size': number overflow parsing '1e400'"},
      {"\"hidden_size\": 64", "\"hidden_size\": 99999999999",
       "field 'hidden_size' must be an integer in [1, 2147483647], got 99999999999"},
      {"\"rope_scaling\": null", "\"rope_scaling\": " + nested(200000),
       "config.json: JSON nests arrays/objects more than 128 levels deep"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.to.substr(0, 60));
    write_bytes(path("config.json"), good);
    edit_config(c.from, c.to);
    expect_has(load_error(), {c.message});
  }
}

TEST_F(HostileDir, SafetensorsHeaderNumbersAndNestingAreNamed) {
  auto file = [&](const std::string& header) {
    std::string len(8, '\0');
    for (int i = 0; i < 8; ++i) len[i] = static_cast<char>((header.size() >> (8 * i)) & 0xFF);
    write_bytes(path("x.safetensors"), len + header);
  };
  file(R"({"w": {"dtype": "F32", "shape": [1e400], "data_offsets": [0, 4]}})");
  expect_has(error_of([&] { ordo::SafeTensors::open(path("x.safetensors")); }),
             {"x.safetensors: field 'shape': number overflow parsing '1e400'"});
  file(R"({"__metadata__": )" + nested(100000) + "}");
  expect_has(error_of([&] { ordo::SafeTensors::open(path("x.safetensors")); }),
             {"x.safetensors: JSON nests arrays/objects more than 128 levels deep"});
}

TEST_F(HostileDir, FifosInPlaceOfModelFilesAreRefused) {
  model("llama");
  fifo("config.json");
  expect_has(load_error(), {"config.json: not a regular file"});
  fs::remove(path("config.json"));
  model("llama");
  fifo("model.safetensors");
  expect_has(load_error(), {"model.safetensors: not a regular file"});
  expect_has(error_of([] { ordo::read_input_file("/dev/zero", 1 << 20, "a test file"); }),
             {"/dev/zero: not a regular file"});
}

// ---- the engine's and the API's own checks -------------------------------------------------------

TEST(HostileValues, SamplingParametersRejectNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto sampler_error = [](auto set) {
    ordo::SamplingParams p;
    set(p);
    return error_of([&] { ordo::Sampler s(p); });
  };
  expect_has(sampler_error([&](ordo::SamplingParams& p) { p.temperature = nan; }),
             {"temperature must be a finite number >= 0"});
  expect_has(sampler_error([&](ordo::SamplingParams& p) { p.top_p = nan; }), {"top_p must be in (0, 1]"});
  expect_has(sampler_error([&](ordo::SamplingParams& p) { p.repetition_penalty = nan; }),
             {"repetition_penalty must be a finite number > 0"});
  expect_has(sampler_error([&](ordo::SamplingParams& p) { p.temperature = INFINITY; }), {"temperature"});
}

TEST(HostileValues, ThreadCountsOutsideTheLimitAreRefused) {
  expect_has(error_of([] { ordo::set_num_threads(100000); }),
             {"threads must be between 0 (all cores) and 1024, got 100000"});
  expect_has(error_of([] { ordo::set_num_threads(-3); }), {"got -3"});
}

TEST(HostileValues, ScalingFactorsAndContextAreBoundedBeforeAllocating) {
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  for (double f : {0.0, 1e308, std::nan("")}) {
    ordo::Scaling s;
    s.type = ordo::ScalingType::Linear;
    s.factor = f;
    o.scaling = s;
    expect_has(error_of([&] { ordo::Model::load(ordo::test::model_dir("llama"), o); }),
               {"linear scaling needs a factor in (0, 1024]"});
  }
  o.scaling.reset();
  ordo::Model m = ordo::Model::load(ordo::test::model_dir("llama"), o);
  // The llama fixture was trained on 64 positions: the default limit is 16 x 64.
  EXPECT_EQ(m.engine().context_limit(), 1024);
  ordo::GenerateParams p;
  p.max_new_tokens = 1000000000;
  expect_has(error_of([&] {
               m.generate_ids({1, 2}, p);
             }),
             {"max_new_tokens (1000000000) needs 1000000002 positions, more than the context limit of 1024",
              "16 x the trained length 64", "ordo -c/--ctx-size N"});
  m.engine().set_context_limit(4096);
  p.max_new_tokens = 2;
  EXPECT_EQ(m.generate_ids({1, 2}, p).ids.size(), 2u);
  expect_has(error_of([&] { m.engine().new_sequence(5000); }),
             {"a sequence needs 5000 positions", "limit of 4096 (as set)"});
}

TEST(HostileValues, ForeignExceptionsLeaveTheApiAsOrdoErrors) {
  expect_has(error_of([] { ordo::with_ordo_errors("x.json", [] { return std::string().at(1); }); }), {"x.json: "});
  expect_has(error_of([] { ordo::with_ordo_errors("big", []() -> int { throw std::bad_alloc(); }); }),
             {"big: out of memory"});
  EXPECT_EQ(ordo::with_ordo_errors("ok", [] { return 7; }), 7);
}

// ---- the CLI -------------------------------------------------------------------------------------

TEST(HostileCli, BadFlagValuesAreNamedAndFail) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run -p x --threads 100000", "--threads must be in [0, 1024], got 100000"},
      {"run -p x --threads -3", "--threads must be in [0, 1024], got -3"},
      {"run -p x --temp nan", "--temp"},
      {"run -p x --top-p nan", "--top-p"},
      {"run -p x --repeat-penalty nan", "--repeat-penalty must be a number > 0"},
      {"run -p x --scaling linear --factor 0", "--factor must be in (0, 1024], got 0"},
      {"run -p x --scaling linear --factor 1e308", "--factor must be in (0, 1024]"},
      {"run --ids 1,,2", "--ids: id list '1,,2' has an empty entry"},
      {"run --ids 1,2,", "has an empty entry"},
      {"run -p x -n 1000000000 -q", "more than the context limit of 8192"},
      {"run -p x --self-extend 4", "--self-extend: expected G,W"},
      {"run -p x --self-extend 0,64", "--self-extend: expected G,W"},
      {"run -p x --self-extend 4,x", "--self-extend: expected G,W"},
      {"run -p x --self-extend 4,64,2", "--self-extend: expected G,W"},
      {"run -p x --self-extend 4,99999999999", "--self-extend: expected G,W"},
      {"run -p x --sinks 4", "--sinks needs --window N"},
      {"run -p x --window 60", "--window needs --sinks K"},
      {"run -p x --sinks -1 --window 60", "--sinks must be in [0, 1.07374e+09], got -1"},
      {"run -p x --sinks -9223372036854775808", "--sinks needs --window N"},
      {"run -p x --sinks 4 --window 0", "--window must be in [1, 1.07374e+09], got 0"},
      {"run -p x --sinks 4 --window 60 --self-extend 4,64", "cannot be combined; choose one"},
      {"run -p x --position sinusoidal --self-extend 4,64", "does not apply to the sinusoidal scheme"},
      {"run -p x --sinks 4 --window 60 --scaling dynamic --factor 2", "cannot be combined with dynamic scaling"},
      {"ppl --text " + std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt --scaling sinks:x",
       "--scaling: 'x' in 'sinks:x' is not an integer"},
      {"ppl --text " + std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt --scaling self-extend:0:64",
       "--scaling: '0' in 'self-extend:0:64' is not an integer in [1,"},
      {"ppl --text " + std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt --scaling self-extend:4:8:1",
       "has more than two parameters"},
      {"ppl --text " + std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt --stride -1", "--stride must be >= 0"},
      {"ppl --text " + std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt --ctx 1000000000",
       "--ctx-lengths 1000000000 is longer than"},
  };
  for (const auto& [args, needle] : cases) {
    SCOPED_TRACE(args);
    const auto r = ordo::test::run_cli(args);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
    EXPECT_EQ(r.out.find("tokens"), std::string::npos) << "a result row was printed: " << r.out;
  }
}

TEST(HostileCli, FifosGivenAsInputFilesAreRefused) {
  const std::string dir = ordo::test::make_temp_dir("cli-fifo");
  const std::string fifo = dir + "/text.txt";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& args : {"ppl --text " + fifo, "run -f " + fifo}) {
    SCOPED_TRACE(args);
    const auto r = ordo::test::run_cli(args);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("text.txt: not a regular file"), std::string::npos) << r.err;
  }
  fs::remove_all(dir);
}
