// Greedy and beam search against Hugging Face generate() (tests/data/fixtures/generate.json, made
// by tools/fixtures/make_generate_goldens.py): ids exactly, beam scores within 1e-4.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

#include "ordo/beam_search.hpp"
#include "ordo/ordo.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

namespace fs = std::filesystem;

namespace ordo::test {
namespace {

const nlohmann::json& goldens() {
  static const nlohmann::json j = nlohmann::json::parse(read_file(data_path("fixtures/generate.json")));
  return j;
}

std::string dir_of(const nlohmann::json& c) {
  return std::string(ORDO_SOURCE_DIR) + "/" + c.at("dir").get<std::string>();
}

const Model& model_for(const nlohmann::json& c) {
  static std::map<std::string, std::unique_ptr<Model>> models;
  std::unique_ptr<Model>& m = models[dir_of(c)];
  if (!m) {
    ModelOptions o;
    o.load_tokenizer = false;
    m = std::make_unique<Model>(Model::load(dir_of(c), o));
  }
  return *m;
}

std::vector<int32_t> eos_of(const nlohmann::json& c) {
  const nlohmann::json& e = c.at("eos_token_id");
  return e.is_array() ? e.get<std::vector<int32_t>>() : std::vector<int32_t>{e.get<int32_t>()};
}

// The case's settings as ordo's parameters.
GenerateParams params_of(const nlohmann::json& c) {
  GenerateParams p;
  p.max_new_tokens = c.at("max_new_tokens");
  p.stop_ids = eos_of(c);
  p.sampling.temperature = 0;
  p.sampling.repetition_penalty = c.value("repetition_penalty", 1.0f);
  p.sampling.no_repeat_ngram_size = c.value("no_repeat_ngram_size", 0);
  if (c.contains("bad_words_ids"))
    p.sampling.bad_words_ids = c.at("bad_words_ids").get<std::vector<std::vector<int32_t>>>();
  p.min_length = c.value("min_length", 0);
  p.min_new_tokens = c.value("min_new_tokens", 0);
  if (c.contains("forced_eos_token_id")) p.forced_eos_ids = {c.at("forced_eos_token_id").get<int32_t>()};
  p.renormalize = c.value("renormalize_logits", false);
  p.beams.num_beams = c.at("num_beams");
  if (p.beams.num_beams > 1) {
    p.beams.length_penalty = c.at("length_penalty");
    const nlohmann::json& es = c.at("early_stopping");
    p.beams.early_stopping = es.is_string()   ? EarlyStopping::Never
                             : es.get<bool>() ? EarlyStopping::OnFull
                                              : EarlyStopping::Heuristic;
    p.beams.num_return_sequences = c.at("num_return_sequences");
  }
  return p;
}

std::string describe(const nlohmann::json& c) {
  nlohmann::json d = c;
  d.erase("sequences");
  d.erase("sequence_scores");
  d.erase("input_ids");
  return d.dump();
}

// ordo's result against the case: HF writes a hypothesis's stop id as eos_token_id[0].
void expect_matches(const nlohmann::json& c, const GenerateResult& r) {
  const std::vector<int32_t> eos = eos_of(c);
  const auto want = c.at("sequences").get<std::vector<std::vector<int32_t>>>();
  if (c.at("num_beams").get<int>() == 1) {
    ASSERT_EQ(want.size(), 1u);
    EXPECT_EQ(r.ids, want[0]) << describe(c);
    EXPECT_TRUE(r.sequences.empty());
    return;
  }
  const auto scores = c.at("sequence_scores").get<std::vector<double>>();
  ASSERT_EQ(r.sequences.size(), want.size()) << describe(c);
  for (size_t k = 0; k < want.size(); ++k) {
    std::vector<int32_t> got = r.sequences[k].ids;
    if (!got.empty() && std::find(eos.begin(), eos.end(), got.back()) != eos.end()) got.back() = eos[0];
    EXPECT_EQ(got, want[k]) << describe(c) << " hypothesis " << k;
    EXPECT_NEAR(r.sequences[k].score, scores[k], 1e-4 * std::max(1.0, std::abs(scores[k])))
        << describe(c) << " hypothesis " << k;
  }
  EXPECT_EQ(r.ids, r.sequences[0].ids);
}

TEST(BeamSearchGolden, EveryCaseMatchesHuggingFace) {
  int beams = 0, greedy = 0;
  std::map<std::string, int> per_model;
  for (const nlohmann::json& c : goldens().at("cases")) {
    const Model& m = model_for(c);
    const GenerateResult r = m.generate_ids(c.at("input_ids").get<std::vector<int32_t>>(), params_of(c));
    expect_matches(c, r);
    (c.at("num_beams").get<int>() > 1 ? beams : greedy)++;
    per_model[c.at("model")]++;
  }
  EXPECT_EQ(beams, 90);
  EXPECT_EQ(greedy, 20);
  for (const char* name : {"t5", "marian", "llama", "gpt2", "stories260K"}) EXPECT_EQ(per_model[name], 22) << name;
}

// Every case of a model in one generate_batch call: the beams of several requests share each
// decode step (up to 6 sequences in flight), with the greedy requests run alongside.
TEST(BeamSearchGolden, BatchedRequestsMatchHuggingFace) {
  std::map<std::string, std::vector<const nlohmann::json*>> by_dir;
  for (const nlohmann::json& c : goldens().at("cases")) by_dir[dir_of(c)].push_back(&c);
  for (const auto& [dir, cases] : by_dir) {
    const Model& m = model_for(*cases[0]);
    std::vector<GenerateRequest> reqs;
    std::vector<Tensor> enc(cases.size());
    const bool seq2seq = m.spec().graph == GraphKind::EncoderDecoder;
    for (size_t i = 0; i < cases.size(); ++i) {
      const auto ids = cases[i]->at("input_ids").get<std::vector<int32_t>>();
      GenerateRequest r;
      r.params = params_of(*cases[i]);
      if (seq2seq) {
        enc[i] = m.engine().encode(ids, {}, {});
        r.prompt = {m.spec().decoder_start_id};
        r.encoder_out = &enc[i];
      } else {
        r.prompt = ids;
      }
      reqs.push_back(std::move(r));
    }
    size_t calls = 0;
    const std::vector<GenerateResult> res =
        generate_batch(m.engine(), reqs, 6, [&](size_t, int32_t) { return ++calls, true; });
    size_t ids = 0;
    for (size_t i = 0; i < cases.size(); ++i) {
      expect_matches(*cases[i], res[i]);
      ids += res[i].ids.size();
    }
    EXPECT_EQ(calls, ids) << dir;  // on_token saw every returned id once
  }
}

// A copy of the bundled stories260K whose generation_config.json says `gen`.
std::string stories_with(const std::string& tag, const nlohmann::json& gen) {
  const std::string dir = make_temp_dir(tag);
  for (const auto& e : fs::directory_iterator(model_dir("stories260K")))
    if (e.path().filename() != "generation_config.json")
      fs::copy_file(e.path(), dir + "/" + e.path().filename().string());
  std::ofstream(dir + "/generation_config.json") << gen.dump();
  return dir;
}

const nlohmann::json& find_case(const std::string& model, int beams, const nlohmann::json& eos,
                                const nlohmann::json& extra = nlohmann::json::object()) {
  for (const nlohmann::json& c : goldens().at("cases")) {
    if (c.at("model") != model || c.at("num_beams") != beams || c.at("eos_token_id") != eos) continue;
    bool all = true;
    for (const auto& [k, v] : extra.items()) all = all && c.contains(k) && c.at(k) == v;
    // Only cases without penalties or length rules unless asked for.
    for (const char* k : {"repetition_penalty", "min_length", "min_new_tokens"})
      all = all && (extra.contains(k) || !c.contains(k));
    if (all) return c;
  }
  throw std::runtime_error("no golden case for " + model);
}

// "eos_token_id": [2, 286] in generation_config.json: every id ends a sequence (HF stops the
// once_upon prompt at 286, its third token), in ids, text and the CLI.
TEST(EosList, EveryIdEndsGeneration) {
  const nlohmann::json& c = find_case("stories260K", 1, {2, 286});
  const auto want = c.at("sequences")[0].get<std::vector<int32_t>>();
  ASSERT_EQ(want.back(), 286);
  const std::string dir = stories_with("eos-list", {{"bos_token_id", 1}, {"eos_token_id", {2, 286}}});
  const Model m = Model::load(dir);
  EXPECT_EQ(m.spec().eos_ids, (std::vector<int32_t>{2, 286}));
  EXPECT_EQ(m.spec().eos_id, 2);
  GenerateParams p;
  p.max_new_tokens = 24;
  const GenerateResult g = m.generate_ids(c.at("input_ids").get<std::vector<int32_t>>(), p);
  EXPECT_EQ(g.ids, want);
  EXPECT_TRUE(g.stopped_by_eos);
  TextGenerateParams tp;
  tp.max_new_tokens = 24;
  const TextResult t = m.generate("Once upon a time", tp);
  EXPECT_EQ(t.generation.ids, want);
  // The stop id's text is not part of it: the text is that of the two tokens before it.
  TextGenerateParams two = tp;
  two.max_new_tokens = 2;
  EXPECT_EQ(t.text, m.generate("Once upon a time", two).text);
  const CliResult r = run_cli("run -m " + shell_quote(dir) + " -p 'Once upon a time' --temp 0 -n 24 -q --print-ids");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("432,383,286\n"), std::string::npos) << r.out;
  // Beam search ends hypotheses at any of them too (HF writes the stop id as the list's first).
  const nlohmann::json& b = find_case("stories260K", 4, {286, 2});
  GenerateParams bp = params_of(b);
  bp.stop_ids.clear();  // the model's own list
  const GenerateResult br = m.generate_ids(b.at("input_ids").get<std::vector<int32_t>>(), bp);
  ASSERT_EQ(br.sequences.size(), 2u);
  EXPECT_EQ(br.sequences[0].ids, b.at("sequences")[0].get<std::vector<int32_t>>());
  EXPECT_NEAR(br.sequences[0].score, b.at("sequence_scores")[0].get<double>(), 1e-4);
  fs::remove_all(dir);
}

// --stop-id adds stop ids to the model's EOS: the bundled model stops at 286 as HF does with that
// id in its EOS list.
TEST(EosList, StopIdFlag) {
  const nlohmann::json& c = find_case("stories260K", 1, {2, 286});
  const std::string ids = "1,403,407,261,378";
  ASSERT_EQ(c.at("input_ids").dump(), "[" + ids + "]");
  for (const std::string flag : {"--stop-id 286", "--stop-id 7,286", "--stop-id 7 --stop-id 286"}) {
    const CliResult r = run_cli("run --ids " + ids + " --temp 0 -n 24 -q " + flag);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out, "432,383,286\n") << flag;
  }
  const CliResult bad = run_cli("run --ids " + ids + " --stop-id -3");
  EXPECT_EQ(bad.exit_code, 2);  // a usage error
  EXPECT_NE(bad.err.find("--stop-id"), std::string::npos) << bad.err;
}

// generation_config.json's beam settings apply without flags, and ordo says so; flags override.
TEST(GenerationConfig, FileSettingsApplyUnlessFlagged) {
  const nlohmann::json& c = find_case("stories260K", 4, 286, {{"length_penalty", 2.0}, {"early_stopping", "never"}});
  const std::string dir = stories_with("gen-beams", {{"bos_token_id", 1},
                                                     {"eos_token_id", 286},
                                                     {"do_sample", false},
                                                     {"num_beams", 4},
                                                     {"length_penalty", 2.0},
                                                     {"early_stopping", "never"},
                                                     {"max_new_tokens", 24}});
  const Model m = Model::load(dir);
  const GenerationConfig& g = m.generation_config();
  EXPECT_EQ(g.num_beams, 4);
  EXPECT_EQ(g.do_sample, false);
  EXPECT_EQ(g.early_stopping, EarlyStopping::Never);
  EXPECT_EQ(g.source.at("num_beams"), "generation_config.json");
  std::vector<GenerationSetting> used;
  const TextGenerateParams p = m.generation_params({}, &used);
  EXPECT_EQ(p.beams.num_beams, 4);
  EXPECT_EQ(p.max_new_tokens, 24);
  const GenerateResult r = m.generate_ids(c.at("input_ids").get<std::vector<int32_t>>(), p);
  ASSERT_EQ(r.sequences.size(), 1u);
  EXPECT_EQ(r.ids, c.at("sequences")[0].get<std::vector<int32_t>>());
  EXPECT_NEAR(r.sequences[0].score, c.at("sequence_scores")[0].get<double>(), 1e-4);

  const CliResult cli = run_cli("run -m " + shell_quote(dir) + " -p 'Once upon a time' --print-ids");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find("\n432,383,286\n"), std::string::npos) << cli.out;
  EXPECT_NE(cli.err.find("decoding beam search (generation_config.json)"), std::string::npos) << cli.err;
  EXPECT_NE(cli.err.find("num_beams 4 (generation_config.json)"), std::string::npos) << cli.err;
  EXPECT_NE(cli.err.find("early_stopping never (generation_config.json)"), std::string::npos) << cli.err;
  EXPECT_NE(cli.err.find("max_new_tokens 24 (generation_config.json)"), std::string::npos) << cli.err;
  // Flags win: greedy, 3 tokens (HF greedy's first three: the stop id 286 is the third).
  const CliResult flagged =
      run_cli("run -m " + shell_quote(dir) + " -p 'Once upon a time' --num-beams 1 -n 2 --print-ids");
  ASSERT_EQ(flagged.exit_code, 0) << flagged.err;
  EXPECT_NE(flagged.out.find("\n432,383\n"), std::string::npos) << flagged.out;
  EXPECT_NE(flagged.err.find("decoding greedy (generation_config.json)"), std::string::npos) << flagged.err;
  EXPECT_NE(flagged.err.find("max_new_tokens 2 (flag)"), std::string::npos) << flagged.err;
  fs::remove_all(dir);
}

// A directory without generation settings keeps ordo's defaults (sampling at 0.8, top-k 40,
// top-p 0.95, 128 tokens) and says they are the defaults.
TEST(GenerationConfig, NoSettingsKeepOrdoDefaults) {
  const Model m = Model::load(model_dir("stories260K"));
  std::vector<GenerationSetting> used;
  const TextGenerateParams p = m.generation_params({}, &used);
  EXPECT_FLOAT_EQ(p.sampling.temperature, 0.8f);
  EXPECT_EQ(p.sampling.top_k, 40);
  EXPECT_FLOAT_EQ(p.sampling.top_p, 0.95f);
  EXPECT_EQ(p.max_new_tokens, 128);
  EXPECT_EQ(p.beams.num_beams, 1);
  for (const GenerationSetting& s : used) EXPECT_EQ(s.source, "default") << s.name;
  const CliResult r = run_cli("run -p 'Once upon a time' -n 4 --seed 1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("[settings: decoding sampling (default), temperature 0.8 (default), top_k 40 (default), "
                       "top_p 0.95 (default), repetition_penalty 1 (default), max_new_tokens 4 (flag)]"),
            std::string::npos)
      << r.err;
}

// Hugging Face's max_length counts the prompt: 8 with a 5-token prompt leaves 3 new tokens (HF's
// greedy ids' first three).
TEST(GenerationConfig, MaxLengthCountsThePrompt) {
  const nlohmann::json& c = find_case("stories260K", 1, 2);
  const std::string dir = stories_with("gen-maxlen", {{"eos_token_id", 2}, {"do_sample", false}, {"max_length", 8}});
  const Model m = Model::load(dir);
  const TextGenerateParams p = m.generation_params();
  const GenerateResult r = m.generate_ids(c.at("input_ids").get<std::vector<int32_t>>(), p);
  const auto want = c.at("sequences")[0].get<std::vector<int32_t>>();
  EXPECT_EQ(r.ids, std::vector<int32_t>(want.begin(), want.begin() + 3));
  // A prompt that already fills max_length is an error saying so, not an empty answer.
  const std::string e = error_of([&] { m.generate_ids({1, 403, 407, 261, 378, 432, 383, 286}, p); });
  EXPECT_NE(e.find("the prompt (8 tokens) already reaches max_length (8)"), std::string::npos) << e;
  fs::remove_all(dir);
}

// min_new_tokens and forced_eos_token_id from generation_config.json apply as in HF's greedy run.
TEST(GenerationConfig, LengthRulesFromTheFile) {
  const nlohmann::json& c = find_case("stories260K", 1, 286, {{"min_new_tokens", 5}});
  const std::string dir = stories_with("gen-rules", {{"eos_token_id", 286},
                                                     {"do_sample", false},
                                                     {"max_new_tokens", 24},
                                                     {"min_new_tokens", 5},
                                                     {"forced_eos_token_id", 2}});
  const Model m = Model::load(dir);
  std::vector<GenerationSetting> used;
  const TextGenerateParams p = m.generation_params({}, &used);
  EXPECT_EQ(p.min_new_tokens, 5);
  EXPECT_EQ(p.forced_eos_ids, std::vector<int32_t>{2});
  const GenerateResult r = m.generate_ids(c.at("input_ids").get<std::vector<int32_t>>(), p);
  EXPECT_EQ(r.ids, c.at("sequences")[0].get<std::vector<int32_t>>());
  EXPECT_EQ(r.ids.back(), 2);
  fs::remove_all(dir);
}

// The rules between flags, file and defaults.
TEST(GenerationConfig, Resolution) {
  GenerationConfig file;
  file.num_beams = 4;
  file.source["num_beams"] = "config.json";
  GenerationConfig flags;
  // The file's beams without do_sample: greedy beams (HF's do_sample default).
  EXPECT_EQ(resolve_generation(flags, file).beams.num_beams, 4);
  EXPECT_EQ(resolve_generation(flags, file).sampling.temperature, 0.0f);
  // A sampling flag replaces the file's beams.
  flags.temperature = 0.7f;
  TextGenerateParams p = resolve_generation(flags, file);
  EXPECT_EQ(p.beams.num_beams, 1);
  EXPECT_FLOAT_EQ(p.sampling.temperature, 0.7f);
  // Beam sampling asked by the file is an error naming where each came from.
  GenerationConfig sampling_beams = file;
  sampling_beams.do_sample = true;
  sampling_beams.source["do_sample"] = "generation_config.json";
  const std::string e = error_of([&] { resolve_generation({}, sampling_beams); });
  EXPECT_NE(e.find("beam sampling (do_sample from generation_config.json with num_beams 4 from config.json)"),
            std::string::npos)
      << e;
  // num_return_sequences beyond num_beams, or without beams from a flag.
  GenerationConfig many;
  many.num_beams = 2;
  many.num_return_sequences = 3;
  EXPECT_NE(error_of([&] { resolve_generation(many, {}); }).find("num_return_sequences (3)"), std::string::npos);
  GenerationConfig no_beams;
  no_beams.num_return_sequences = 2;
  EXPECT_NE(error_of([&] { resolve_generation(no_beams, {}); }).find("needs beam search"), std::string::npos);
  // The file's sampling settings apply under do_sample.
  GenerationConfig chat;
  chat.do_sample = true;
  chat.temperature = 0.6f;
  chat.top_p = 0.9f;
  p = resolve_generation({}, chat);
  EXPECT_FLOAT_EQ(p.sampling.temperature, 0.6f);
  EXPECT_FLOAT_EQ(p.sampling.top_p, 0.9f);
  EXPECT_EQ(p.sampling.top_k, 40);
}

// Bad generation_config.json values are errors naming the file and field.
TEST(GenerationConfig, BadFieldsNamed) {
  const std::vector<std::pair<nlohmann::json, std::string>> bad = {
      {{{"num_beams", 0}}, "field 'num_beams'"},
      {{{"early_stopping", "sometimes"}}, "field 'early_stopping'"},
      {{{"top_p", 1.5}}, "field 'top_p'"},
      {{{"bad_words_ids", {1, 2}}}, "field 'bad_words_ids'"},
      {{{"temperature", "hot"}}, "field 'temperature'"},
  };
  for (const auto& [gen, field] : bad) {
    const std::string dir = stories_with("gen-bad", gen);
    const std::string e = error_of([&] { Model::load(dir); });
    EXPECT_NE(e.find("generation_config.json: " + field), std::string::npos) << gen.dump() << ": " << e;
    fs::remove_all(dir);
  }
}

// opus-mt's config.json (num_beams 4, max_length, bad_words_ids [[pad]]; no generation_config.json)
// on the Marian fixture: decoded with beams by default, as transformers does.
TEST(GenerationConfig, OpusMtConfigDecodesWithBeams) {
  const nlohmann::json& o = goldens().at("opus_mt");
  // The fields are the bundled opus-mt config's (the banned pad and max_length mapped to the fixture).
  const nlohmann::json opus = nlohmann::json::parse(read_file(data_path("tokenizers/opus-mt-en-mg/config.json")));
  EXPECT_EQ(opus.at("num_beams"), o.at("config_fields").at("num_beams"));
  EXPECT_EQ(opus.at("bad_words_ids")[0][0], opus.at("pad_token_id"));
  const std::string dir = make_temp_dir("opus-mt-beams");
  nlohmann::json cfg = nlohmann::json::parse(read_file(model_dir("marian") + "/config.json"));
  cfg.update(o.at("config_fields"));
  std::ofstream(dir + "/config.json") << cfg.dump();
  fs::copy_file(model_dir("marian") + "/model.safetensors", dir + "/model.safetensors");
  ModelOptions opts;
  opts.load_tokenizer = false;
  const Model m = Model::load(dir, opts);
  EXPECT_EQ(m.generation_config().source.at("num_beams"), "config.json");
  const TextGenerateParams p = m.generation_params();
  EXPECT_EQ(p.beams.num_beams, 4);
  EXPECT_EQ(p.max_length, 40);
  const GenerateResult r = m.generate_ids(o.at("input_ids").get<std::vector<int32_t>>(), p);
  ASSERT_EQ(r.sequences.size(), 1u);
  EXPECT_EQ(r.ids, o.at("sequences")[0].get<std::vector<int32_t>>());
  EXPECT_NEAR(r.sequences[0].score, o.at("sequence_scores")[0].get<double>(), 1e-4);
  const CliResult cli = run_cli("run -m " + shell_quote(dir) + " --ids " +
                                o.at("input_ids").dump().substr(1, o.at("input_ids").dump().size() - 2) + " -q");
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  std::string want;
  for (int32_t id : o.at("sequences")[0].get<std::vector<int32_t>>())
    want += (want.empty() ? "" : ",") + std::to_string(id);
  EXPECT_NE(cli.out.find(want + "\n"), std::string::npos) << cli.out;
  fs::remove_all(dir);
}

// `ordo run --prompts-file` with beams: two prompts' beams in flight together (--batch 8), each line's
// hypotheses HF's.
TEST(BeamSearch, CliFileRunsBeamsInBatches) {
  const nlohmann::json& c = find_case("stories260K", 4, 2, {{"length_penalty", 1.0}, {"num_return_sequences", 2}});
  const std::string dir = make_temp_dir("beam-file");
  std::ofstream(dir + "/p.jsonl") << "{\"prompt\": \"Once upon a time\"}\n{\"prompt\": \"Once upon a time\"}\n";
  const CliResult r = run_cli("run --prompts-file " + shell_quote(dir + "/p.jsonl") +
                              " --num-beams 4 --num-return-sequences 2 -n 24 --batch 8 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  std::string line;
  int n = 0;
  while (std::getline(lines, line)) {
    const nlohmann::json j = nlohmann::json::parse(line);
    ASSERT_EQ(j.at("sequences").size(), 2u) << line;
    for (size_t k = 0; k < 2; ++k) {
      EXPECT_EQ(j.at("sequences")[k].at("ids"), c.at("sequences")[k]) << line;
      EXPECT_NEAR(j.at("sequences")[k].at("score").get<double>(), c.at("sequence_scores")[k].get<double>(), 1e-4);
    }
    EXPECT_EQ(j.at("ids"), c.at("sequences")[0]);
    EXPECT_EQ(j.at("text"), j.at("sequences")[0].at("text"));
    ++n;
  }
  EXPECT_EQ(n, 2);
  fs::remove_all(dir);
}

// Beam search's own errors.
TEST(BeamSearch, BadParamsAreErrors) {
  ModelOptions o;
  o.load_tokenizer = false;
  const Model m = Model::load(model_dir("llama"), o);
  GenerateParams p;
  p.beams.num_beams = 2;
  p.beams.num_return_sequences = 3;
  EXPECT_NE(error_of([&] {
              m.generate_ids({1, 2}, p);
            }).find("num_return_sequences must be in [1, num_beams = 2]"),
            std::string::npos);
  p.beams.num_return_sequences = 1;
  p.beams.num_beams = 5000;
  EXPECT_NE(error_of([&] {
              m.generate_ids({1, 2}, p);
            }).find("num_beams must be in [2, 1024], got 5000"),
            std::string::npos);
  p.beams.num_beams = 2;
  p.beams.length_penalty = std::nan("");
  EXPECT_NE(error_of([&] { m.generate_ids({1, 2}, p); }).find("length_penalty"), std::string::npos);
  const CliResult r = run_cli("run --ids 1,2 --num-beams 2 --num-return-sequences 3");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("num_return_sequences (3) must not exceed num_beams (2)"), std::string::npos) << r.err;
  const CliResult s = run_cli("run --ids 1,2 --num-beams 2 --temp 0.5");
  EXPECT_EQ(s.exit_code, 1);
  EXPECT_NE(s.err.find("beam sampling"), std::string::npos) << s.err;
}

}  // namespace
}  // namespace ordo::test
