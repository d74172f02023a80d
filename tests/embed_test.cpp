// Model::embed against Hugging Face: mean/cls/last/pooler pooling and L2 normalisation of BERT,
// Llama (decoder-only) and T5's encoder, padded batches and inputs alone, sentence-transformers
// directories, and the load-time check that the tokenizer fits the model's vocabulary.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "ordo/ordo.hpp"
#include "support/cli.hpp"
#include "support/golden.hpp"

using namespace ordo;
using ordo::test::data_path;
using ordo::test::error_of;
using ordo::test::Golden;
using ordo::test::ids_of;
using ordo::test::make_temp_dir;
using ordo::test::model_dir;
using ordo::test::within_tolerance;

namespace fs = std::filesystem;

namespace {

Model load_fixture(const std::string& fixture) {
  ModelOptions o;
  o.load_tokenizer = false;
  return Model::load(model_dir(fixture), o);
}

EmbedOptions options(Pooling p, bool normalize = false, int batch = 32) {
  EmbedOptions o;
  o.pooling = p;
  o.normalize = normalize;
  o.batch = batch;
  return o;
}

// A [N, d] tensor from a JSON list of rows.
Tensor rows_tensor(const nlohmann::json& rows) {
  std::vector<float> v;
  for (const auto& r : rows)
    for (const auto& x : r) v.push_back(x.get<float>());
  return Tensor::from({static_cast<int64_t>(rows.size()), static_cast<int64_t>(rows[0].size())}, v);
}

// Row b of t [N, d] as [d].
Tensor row_of(const Tensor& t, int64_t b) {
  Tensor r = t.rows(b, b + 1);
  r.shape = {t.dim(1)};
  return r;
}

// The mean of rows of h [T, d] where mask is 1, computed here from Hugging Face's hidden state.
Tensor masked_mean(const float* h, int64_t T, int64_t d, const std::vector<int>& mask) {
  std::vector<double> sum(static_cast<size_t>(d), 0.0);
  double n = 0;
  for (int64_t t = 0; t < T; ++t) {
    if (!mask.empty() && !mask[static_cast<size_t>(t)]) continue;
    n += 1;
    for (int64_t i = 0; i < d; ++i) sum[static_cast<size_t>(i)] += h[t * d + i];
  }
  std::vector<float> v;
  for (double s : sum) v.push_back(static_cast<float>(s / n));
  return Tensor::from({d}, v);
}

Tensor l2_normalized(const Tensor& v) {
  double s = 0;
  for (int64_t i = 0; i < v.numel(); ++i) s += static_cast<double>(v.f32()[i]) * v.f32()[i];
  std::vector<float> r;
  for (int64_t i = 0; i < v.numel(); ++i) r.push_back(static_cast<float>(v.f32()[i] / std::sqrt(s)));
  return Tensor::from({v.numel()}, r);
}

const nlohmann::json& embed_golden() {
  static const nlohmann::json j = nlohmann::json::parse(ordo::test::read_file(data_path("fixtures/embed/golden.json")));
  return j;
}

// The golden batch's inputs: padded with their mask, or cut to their real tokens.
std::vector<EncodeRequest> golden_inputs(const nlohmann::json& c, bool padded) {
  std::vector<EncodeRequest> in;
  for (size_t b = 0; b < c.at("input_ids").size(); ++b) {
    std::vector<int32_t> ids = ids_of(c.at("input_ids")[b]);
    std::vector<uint8_t> mask;
    for (const auto& m : c.at("attention_mask")[b]) mask.push_back(static_cast<uint8_t>(m.get<int>()));
    std::vector<int32_t> types =
        c.contains("token_type_ids") ? ids_of(c.at("token_type_ids")[b]) : std::vector<int32_t>{};
    if (!padded) {
      const size_t n = static_cast<size_t>(std::count(mask.begin(), mask.end(), uint8_t{1}));
      ids.resize(n);
      if (!types.empty()) types.resize(n);
      mask.clear();
    }
    in.push_back(EncodeRequest{ids, types, mask});
  }
  return in;
}

bool parse_pooling(const std::string& s, Pooling& p) {
  for (Pooling q : {Pooling::Mean, Pooling::Cls, Pooling::Last, Pooling::Pooler})
    if (s == pooling_name(q)) {
      p = q;
      return true;
    }
  return false;
}

}  // namespace

// BERT fixture: the pooler is HF's pooler_output, cls is row 0 of HF's last_hidden_state, mean is
// the mean of HF's last_hidden_state rows over the attention mask (computed here), for one
// segment, two segments and the right-padded batch.
TEST(Embed, BertPoolingsMatchHuggingFaceHiddenState) {
  Golden g = Golden::load("bert");
  Model m = load_fixture("bert");
  const int64_t d = m.spec().d_model;
  for (const auto& c : g.json.at("cases")) {
    const std::string name = c.at("name");
    const bool batched = c.at("input_ids")[0].is_array();
    const size_t B = batched ? c.at("input_ids").size() : 1;
    std::vector<EncodeRequest> in;
    std::vector<std::vector<int>> masks;
    for (size_t b = 0; b < B; ++b) {
      const auto& ids = batched ? c.at("input_ids")[b] : c.at("input_ids");
      const auto& types = batched ? c.at("token_type_ids")[b] : c.at("token_type_ids");
      std::vector<int> mask(ids.size(), 1);
      if (c.contains("attention_mask")) mask = c.at("attention_mask")[b].get<std::vector<int>>();
      in.push_back(EncodeRequest{ids_of(ids), ids_of(types), std::vector<uint8_t>(mask.begin(), mask.end())});
      masks.push_back(mask);
    }
    const Tensor& h = g.tensor(name + ".last_hidden_state");  // [T, d] or [B, T, d]
    const Tensor& pooler = g.tensor(name + ".pooler_output");
    const int64_t T = h.dim(-2);
    const Tensor mean = m.embed_ids(in, options(Pooling::Mean));
    const Tensor mean_n = m.embed_ids(in, options(Pooling::Mean, true));
    const Tensor cls = m.embed_ids(in, options(Pooling::Cls));
    const Tensor pool = m.embed_ids(in, options(Pooling::Pooler));
    ASSERT_EQ(mean.shape, (std::vector<int64_t>{static_cast<int64_t>(B), d}));
    for (size_t b = 0; b < B; ++b) {
      SCOPED_TRACE(name + " row " + std::to_string(b));
      const float* hb = h.f32() + static_cast<int64_t>(b) * T * d;
      const Tensor ref_mean = masked_mean(hb, T, d, masks[b]);
      EXPECT_TRUE(within_tolerance(row_of(mean, b).f32(), ref_mean));
      EXPECT_TRUE(within_tolerance(row_of(mean_n, b).f32(), l2_normalized(ref_mean)));
      EXPECT_TRUE(within_tolerance(row_of(cls, b).f32(), Tensor::from({d}, std::vector<float>(hb, hb + d))));
      const Tensor ref_pool = batched ? row_of(pooler, static_cast<int64_t>(b)) : pooler;
      EXPECT_TRUE(within_tolerance(row_of(pool, b).f32(), ref_pool));
    }
  }
}

// Decoder-only: the default pooling is the last token, whose vector is HF's final hidden state
// (hidden_states.L, after the final norm) at the last position.
TEST(Embed, DecoderLastTokenIsHuggingFaceFinalHiddenState) {
  for (const char* fixture : {"llama", "gpt2", "stories260K"}) {
    SCOPED_TRACE(fixture);
    Golden g = Golden::load(fixture);
    Model m = load_fixture(fixture);
    EXPECT_EQ(*m.embed_options().pooling, Pooling::Last);
    EXPECT_FALSE(*m.embed_options().normalize);
    const std::string L = std::to_string(m.spec().decoder.layers.size());
    std::vector<EncodeRequest> in;
    std::vector<std::string> names;
    for (const auto& c : g.json.at("cases")) {
      if (c.at("input_ids")[0].is_array()) continue;
      in.push_back(EncodeRequest{ids_of(c.at("input_ids")), {}, {}});
      names.push_back(c.at("name"));
    }
    const Tensor last = m.embed_ids(in);
    const Tensor mean = m.embed_ids(in, options(Pooling::Mean));
    for (size_t i = 0; i < in.size(); ++i) {
      SCOPED_TRACE(names[i]);
      const Tensor& h = g.tensor(names[i] + ".hidden_states." + L);
      const int64_t T = h.dim(0), d = h.dim(1);
      const Tensor ref = h.rows(T - 1, T);
      EXPECT_TRUE(within_tolerance(row_of(last, static_cast<int64_t>(i)).f32(),
                                   Tensor::from({d}, std::vector<float>(ref.f32(), ref.f32() + d))));
      EXPECT_TRUE(within_tolerance(row_of(mean, static_cast<int64_t>(i)).f32(), masked_mean(h.f32(), T, d, {})));
    }
  }
}

// tests/data/fixtures/embed/golden.json: each pooling of a right-padded batch run through HF in
// one forward and pooled as sentence-transformers pools. ordo gets the same batch padded (with its
// mask, two inputs per forward) and each input alone.
TEST(Embed, PaddedBatchesMatchSentenceTransformersPooling) {
  for (const auto& [key, c] : embed_golden().at("cases").items()) {
    SCOPED_TRACE(key);
    Model m = load_fixture(key.substr(0, key.find('-')));  // "bert-text": the bert fixture
    int checked = 0;
    for (const auto& [pooled, rows] : c.at("pooled").items()) {
      SCOPED_TRACE(pooled);
      const bool normalize = pooled.size() > 11 && pooled.substr(pooled.size() - 11) == "_normalized";
      Pooling p = Pooling::Mean;
      ASSERT_TRUE(parse_pooling(normalize ? pooled.substr(0, pooled.size() - 11) : pooled, p));
      const Tensor ref = rows_tensor(rows);
      for (bool padded : {true, false}) {
        SCOPED_TRACE(padded ? "padded batch" : "each alone, unpadded");
        const Tensor got = m.embed_ids(golden_inputs(c, padded), options(p, normalize, 2));
        ASSERT_EQ(got.shape, ref.shape);
        EXPECT_TRUE(within_tolerance(got.f32(), ref));
      }
      ++checked;
    }
    EXPECT_GE(checked, 6);
  }
}

// A left-padded input (padding first, mask 0) pools its real tokens: the same vectors as the
// reference's right-padded rows.
TEST(Embed, LeftPaddingIsLeftOutOfEveryPooling) {
  const auto& c = embed_golden().at("cases").at("llama");
  Model m = load_fixture("llama");
  std::vector<EncodeRequest> in = golden_inputs(c, false);
  for (EncodeRequest& r : in) {
    const size_t pad = 3;
    r.ids.insert(r.ids.begin(), pad, 0);
    r.mask.assign(r.ids.size(), 1);
    std::fill(r.mask.begin(), r.mask.begin() + pad, uint8_t{0});
  }
  for (const char* key : {"mean", "cls", "last"}) {
    SCOPED_TRACE(key);
    Pooling p = Pooling::Mean;
    ASSERT_TRUE(parse_pooling(key, p));
    EXPECT_TRUE(within_tolerance(m.embed_ids(in, options(p)).f32(), rows_tensor(c.at("pooled").at(key))));
  }
}

// A batch of inputs of different lengths gives each row as that input alone: equal up to float
// rounding (the linear layers see a different number of rows), far inside the fixtures' tolerance.
TEST(Embed, BatchEqualsOneAtATime) {
  for (const char* fixture : {"bert", "llama", "t5"}) {
    SCOPED_TRACE(fixture);
    Model m = load_fixture(fixture);
    const std::vector<EncodeRequest> in = golden_inputs(embed_golden().at("cases").at(fixture), false);
    const Tensor all = m.embed_ids(in, options(Pooling::Mean));
    for (size_t i = 0; i < in.size(); ++i) {
      const Tensor one = m.embed_ids({in[i]}, options(Pooling::Mean));
      EXPECT_TRUE(within_tolerance(row_of(all, static_cast<int64_t>(i)).f32(), row_of(one, 0), {}, 2e-6));
    }
  }
}

// Threads sharing one Model embed with the bits of a call alone (the Model threading promise).
TEST(Embed, ThreadsSharingAModelGetTheBitsOfACallAlone) {
  for (const char* fixture : {"bert", "llama"}) {
    SCOPED_TRACE(fixture);
    const Model m = load_fixture(fixture);
    const std::vector<EncodeRequest> in = golden_inputs(embed_golden().at("cases").at(fixture), true);
    const Tensor alone = m.embed_ids(in, options(Pooling::Mean, true));
    std::vector<Tensor> got(4);
    std::vector<std::thread> threads;
    for (size_t t = 0; t < got.size(); ++t)
      threads.emplace_back([&, t] {
        for (int k = 0; k < 5; ++k) got[t] = m.embed_ids(in, options(Pooling::Mean, true));
      });
    for (std::thread& t : threads) t.join();
    for (const Tensor& g : got) {
      ASSERT_EQ(g.shape, alone.shape);
      EXPECT_TRUE(std::equal(g.f32(), g.f32() + g.numel(), alone.f32()));
    }
  }
}

TEST(Embed, DefaultsAndErrors) {
  Model bert = load_fixture("bert"), t5 = load_fixture("t5"), llama = load_fixture("llama");
  EXPECT_EQ(*bert.embed_options().pooling, Pooling::Mean);
  EXPECT_EQ(*t5.embed_options().pooling, Pooling::Mean);
  EXPECT_FALSE(*bert.embed_options().normalize);
  // No pooler: the error names the model and the poolings it has.
  for (const Model* m : {&t5, &llama}) {
    const std::string e = error_of([&] { m->embed_ids({EncodeRequest{{5, 6}, {}, {}}}, options(Pooling::Pooler)); });
    EXPECT_NE(e.find(m->dir()), std::string::npos) << e;
    EXPECT_NE(e.find("has no pooler: it embeds with mean, cls or last pooling"), std::string::npos) << e;
  }
  EXPECT_NE(error_of([&] {
              bert.embed_ids({EncodeRequest{{5, 6}, {}, {0, 0}}});
            }).find("input 0: every token is padding"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              bert.embed_ids({EncodeRequest{{5, 6}, {}, {}}, EncodeRequest{}});
            }).find("input 1: no tokens"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              llama.embed_ids({EncodeRequest{{5, 6}, {0, 1}, {}}});
            }).find("decoder-only"),
            std::string::npos);
  EXPECT_NE(error_of([&] { bert.embed({"hello"}); }).find("no tokenizer loaded"), std::string::npos);
  EXPECT_EQ(bert.embed_ids({}).numel(), 0);
}

namespace {

// A copy of the BERT fixture (weights linked) with the given extra files.
std::string bert_dir_with(const std::string& tag, const std::vector<std::pair<std::string, std::string>>& files) {
  const std::string dir = make_temp_dir(tag);
  for (const char* f : {"config.json", "model.safetensors"})
    fs::create_symlink(fs::absolute(model_dir("bert") + "/" + f), dir + "/" + f);
  for (const auto& [name, text] : files) {
    fs::create_directories(fs::path(dir + "/" + name).parent_path());
    std::ofstream(dir + "/" + name) << text;
  }
  return dir;
}

const char* kModules =
    R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
 {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
 {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])";

}  // namespace

// A sentence-transformers directory: embed's default is its Pooling module's mode, normalized when
// it has a Normalize module (golden: HF cls pooling, normalized).
TEST(Embed, SentenceTransformersDirectorySetsTheDefault) {
  const std::string dir = bert_dir_with(
      "embed-st", {{"modules.json", kModules},
                   {"1_Pooling/config.json", R"({"word_embedding_dimension": 64, "pooling_mode_cls_token": true,
                      "pooling_mode_mean_tokens": false, "pooling_mode_max_tokens": false,
                      "pooling_mode_mean_sqrt_len_tokens": false})"}});
  ModelOptions o;
  o.load_tokenizer = false;
  Model m = Model::load(dir, o);
  EXPECT_EQ(*m.embed_options().pooling, Pooling::Cls);
  EXPECT_TRUE(*m.embed_options().normalize);
  const auto& c = embed_golden().at("cases").at("bert");
  EXPECT_TRUE(
      within_tolerance(m.embed_ids(golden_inputs(c, true)).f32(), rows_tensor(c.at("pooled").at("cls_normalized"))));
  // An explicit pooling keeps the directory's normalisation unless that is set too.
  EXPECT_TRUE(within_tolerance(m.embed_ids(golden_inputs(c, true),
                                           [] {
                                             EmbedOptions e;
                                             e.pooling = Pooling::Mean;
                                             return e;
                                           }())
                                   .f32(),
                               rows_tensor(c.at("pooled").at("mean_normalized"))));
  fs::remove_all(dir);
}

TEST(Embed, SentenceTransformersSetupOrdoCannotFollowNeedsAnExplicitPooling) {
  const std::string max_dir = bert_dir_with(
      "embed-st-max", {{"modules.json", kModules}, {"1_Pooling/config.json", R"({"pooling_mode_max_tokens": true})"}});
  const std::string dense_dir = bert_dir_with(
      "embed-st-dense", {{"modules.json",
                          R"([{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
          {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
          {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}])"},
                         {"1_Pooling/config.json", R"({"pooling_mode_mean_tokens": true})"}});
  ModelOptions o;
  o.load_tokenizer = false;
  const std::vector<EncodeRequest> in = {EncodeRequest{{5, 6, 7}, {}, {}}};
  for (const auto& [dir, expect] :
       {std::pair<std::string, std::string>{max_dir, "1_Pooling/config.json: field 'pooling_mode_max_tokens' is true"},
        {dense_dir,
         "modules.json: module 2: type 'sentence_transformers.models.Dense' is a module ordo does not "
         "apply"}}) {
    Model m = Model::load(dir, o);
    const std::string e = error_of([&] { m.embed_ids(in); });
    EXPECT_NE(e.find(expect), std::string::npos) << e;
    EXPECT_NE(e.find("choose a pooling"), std::string::npos) << e;
    EXPECT_EQ(m.embed_ids(in, options(Pooling::Mean)).dim(0), 1);
    fs::remove_all(dir);
  }
}

// From text: the BERT fixture with a WordPiece vocab.txt; HF's BertTokenizer gives the ids and
// BertModel the vectors the golden pools (golden.json "bert-text").
TEST(Embed, TextsMatchHuggingFaceTokenizerAndModel) {
  const auto& c = embed_golden().at("cases").at("bert-text");
  const std::string dir =
      bert_dir_with("embed-text", {{"vocab.txt", ordo::test::read_file(data_path("fixtures/embed/vocab.txt"))}});
  Model m = Model::load(dir);
  const std::vector<std::string> texts = c.at("texts").get<std::vector<std::string>>();
  const std::vector<EncodeRequest> ids = golden_inputs(c, false);
  for (size_t i = 0; i < texts.size(); ++i) EXPECT_EQ(m.encode(texts[i]), ids[i].ids) << texts[i];
  for (const char* key : {"mean", "mean_normalized", "cls", "pooler_normalized"}) {
    SCOPED_TRACE(key);
    const std::string k = key;
    Pooling p = Pooling::Mean;
    ASSERT_TRUE(parse_pooling(k.substr(0, k.find('_')), p));
    const Tensor got = m.embed(texts, options(p, k.find("_normalized") != std::string::npos, 3));
    EXPECT_TRUE(within_tolerance(got.f32(), rows_tensor(c.at("pooled").at(key))));
  }
  // The CLI, a text per line: one JSON line each, mean pooling by default.
  const std::string path = dir + "/texts.txt";
  {
    std::ofstream f(path);
    for (const std::string& t : texts) f << t << "\n";
  }
  ordo::test::CliResult r = ordo::test::run_cli("embed -m " + ordo::test::shell_quote(dir) + " -f " +
                                                ordo::test::shell_quote(path) + " --batch 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::istringstream lines(r.out);
  const Tensor ref = rows_tensor(c.at("pooled").at("mean"));
  size_t n = 0;
  for (std::string line; std::getline(lines, line); ++n) {
    ASSERT_LT(n, texts.size());
    const nlohmann::json j = nlohmann::json::parse(line);
    EXPECT_EQ(j.at("text"), texts[n]);
    EXPECT_EQ(j.at("pooling"), "mean");
    const std::vector<float> v = j.at("embedding").get<std::vector<float>>();
    EXPECT_TRUE(within_tolerance(v.data(), row_of(ref, static_cast<int64_t>(n))));
  }
  EXPECT_EQ(n, texts.size());
  fs::remove_all(dir);
}

// A malformed modules.json, or a Pooling path that leaves the directory, is an Error naming the file.
TEST(Embed, HostileSentenceTransformersFiles) {
  ModelOptions o;
  o.load_tokenizer = false;
  const std::vector<EncodeRequest> in = {EncodeRequest{{5, 6, 7}, {}, {}}};
  for (const auto& [modules, expect] : std::vector<std::pair<std::string, std::string>>{
           {"[", "modules.json: malformed JSON"},
           {"{}", "modules.json: not a JSON array of modules"},
           {"[3]", "modules.json: module 0: field 'type' missing or not a string"},
           {R"([{"type": "sentence_transformers.models.Pooling", "path": "../../etc"}])",
            "modules.json: module 0: field 'path' must name the Pooling module's folder"},
           {R"([{"type": "sentence_transformers.models.Pooling", "path": "nowhere"}])", "nowhere/config.json"}}) {
    SCOPED_TRACE(modules);
    const std::string dir = bert_dir_with("embed-st-hostile", {{"modules.json", modules}});
    Model m = Model::load(dir, o);
    const std::string e = error_of([&] { m.embed_ids(in); });
    EXPECT_NE(e.find(expect), std::string::npos) << e;
    fs::remove_all(dir);
  }
}

// A tokenizer with more ids than the embedding has rows is an error at load naming the file and
// both sizes; a smaller one (padded embeddings, as many real models) loads.
TEST(Embed, TokenizerLargerThanTheVocabularyIsALoadError) {
  auto vocab = [](int n) {
    std::string v = "[PAD]\n[UNK]\n[CLS]\n[SEP]\n[MASK]\n";
    for (int i = 5; i < n; ++i) v += "w" + std::to_string(i) + "\n";
    return v;
  };
  const std::string big = bert_dir_with("embed-vocab-big", {{"vocab.txt", vocab(300)}});
  const std::string e = error_of([&] { Model::load(big); });
  EXPECT_NE(e.find(big + ": vocab.txt has ids up to 299 (300 tokens) but the model's vocabulary has 256"),
            std::string::npos)
      << e;
  const std::string small = bert_dir_with("embed-vocab-small", {{"vocab.txt", vocab(200)}});
  Model m = Model::load(small);
  EXPECT_EQ(m.tokenizer().vocab_size(), 200);
  EXPECT_EQ(m.embed({"w7 w9"}, options(Pooling::Cls)).dim(0), 1);
  fs::remove_all(big);
  fs::remove_all(small);
}
