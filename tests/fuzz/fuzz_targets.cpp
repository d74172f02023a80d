// The fuzz targets: each feeds the raw bytes to one parser or entry point.
#include "fuzz_targets.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "../../tokenizer/src/leftmost_longest.hpp"
#include "common.hpp"  // the CLI's parsing (tools/cli)
#include "ordo/ordo.hpp"
#include "ordo/safetensors.hpp"
#include "ordo/tokenizer.hpp"
#include "ordo/weights.hpp"
#include "serve_api.hpp"  // `ordo serve`'s request parsing (tools/cli)

namespace fs = std::filesystem;

namespace ordo::fuzz {
namespace {

[[noreturn]] void broken(const std::string& what) {
  std::fprintf(stderr, "fuzz property broken: %s\n", what.c_str());
  std::abort();
}

// A scratch directory of this process, emptied for each input and removed when the process exits
// (libFuzzer ends a timed run with exit(); after a crash it stays, with what the input wrote).
struct ScratchDir {
  std::string path = (fs::temp_directory_path() / "ordo-fuzz-XXXXXX").string();
  ScratchDir() {
    if (!mkdtemp(path.data())) broken("cannot create a scratch directory");
  }
  ~ScratchDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

const std::string& scratch() {
  static const ScratchDir dir;
  return dir.path;
}

std::string fresh_dir() {
  const std::string d = scratch() + "/in";
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

void write_file(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}
void write_file(const std::string& path, const std::string& text) {
  write_file(path, reinterpret_cast<const uint8_t*>(text.data()), text.size());
}

// Runs f; an ordo::Error is a correct answer, anything else escapes (a crash for libFuzzer).
template <class F>
void expect_ordo_errors(F&& f) {
  try {
    f();
  } catch (const Error&) {
  }
}

std::string data_path(const std::string& rel) { return std::string(ORDO_TEST_DATA) + "/" + rel; }

// Text from the input, for encode: the bytes as they are (invalid UTF-8 included).
std::string as_text(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// The properties every loaded tokenizer must keep for `text`: decode accepts every id encode
// makes, and streaming decode gives what whole decode gives.
void check_tokenizer(const Tokenizer& tok, const std::string& text) {
  for (bool special : {true, false}) {
    const std::vector<int32_t> ids = tok.encode(text, special);
    for (int32_t id : ids)
      if (id < 0 || id >= tok.vocab_size()) broken("encode made id " + std::to_string(id) + " outside the vocabulary");
    std::string whole;
    try {
      whole = tok.decode(ids, true);
    } catch (const Error& e) {
      broken(std::string("decode rejected ids that encode made: ") + e.what());
    }
    StreamDecoder stream(tok, {}, true);
    std::string streamed;
    for (int32_t id : ids) streamed += stream.push(id);
    streamed += stream.flush();
    if (streamed != whole) broken("streaming decode '" + streamed + "' differs from decode '" + whole + "'");
    tok.decode(ids, false);
    tok.tokenize(text);
  }
}

const char* kSampleText = "Hello world! <s> Once upon a time, 12 caf\xC3\xA9s \xE4\xBD\xA0\xE5\xA5\xBD.\n";

void after_load(const std::unique_ptr<Tokenizer>& tok, const uint8_t* data, size_t size) {
  check_tokenizer(*tok, kSampleText);
  check_tokenizer(*tok, as_text(data, std::min<size_t>(size, 256)));
  // Ids from the input bytes: decode either answers or says which id is bad.
  std::vector<int32_t> ids;
  for (size_t i = 0; i + 2 <= std::min<size_t>(size, 64); i += 2)
    ids.push_back(static_cast<int32_t>(data[i] | (data[i + 1] << 8)) - 1024);
  expect_ordo_errors([&] { tok->decode(ids); });
}

// Splits the input at its first NUL byte (two files in one input).
std::pair<std::string, std::string> split_nul(const uint8_t* data, size_t size) {
  const std::string s = as_text(data, size);
  const size_t at = s.find('\0');
  if (at == std::string::npos) return {s, std::string()};
  return {s.substr(0, at), s.substr(at + 1)};
}

// Added-token matching: the automaton against trying every pattern at every byte. Input: patterns
// separated by '\n', a 0 byte, then the text.
int fuzz_added_tokens(const uint8_t* data, size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  const size_t zero = in.find('\0');
  if (zero == std::string::npos) return 0;
  std::vector<std::string> patterns;
  for (size_t b = 0; b <= zero && patterns.size() < 64;) {
    size_t e = in.find('\n', b);
    if (e == std::string::npos || e > zero) e = zero;
    patterns.push_back(in.substr(b, std::min<size_t>(e - b, 64)));
    b = e + 1;
  }
  const std::string text = in.substr(zero + 1, 8192);
  const tokenizer_detail::LeftmostLongest matcher(patterns);
  tokenizer_detail::LeftmostLongest::Match got;
  for (size_t from = 0;;) {
    size_t begin = 0, len = 0, which = 0;
    for (size_t i = from; i < text.size() && !len; ++i) {
      for (size_t p = 0; p < patterns.size(); ++p)
        if (patterns[p].size() > len && text.compare(i, patterns[p].size(), patterns[p]) == 0)
          begin = i, len = patterns[p].size(), which = p;
    }
    const bool found = matcher.find(text, from, got);
    if (found != (len > 0)) broken("added_tokens: match found by one matcher only, from byte " + std::to_string(from));
    if (!found) return 0;
    if (got.begin != begin || got.end != begin + len || got.pattern != which)
      broken("added_tokens: match at " + std::to_string(got.begin) + ".." + std::to_string(got.end) + " (pattern " +
             std::to_string(got.pattern) + "), want " + std::to_string(begin) + ".." + std::to_string(begin + len) +
             " (pattern " + std::to_string(which) + ")");
    from = got.end;
  }
}

int fuzz_safetensors(const uint8_t* data, size_t size) {
  const std::string path = fresh_dir() + "/model.safetensors";
  write_file(path, data, size);
  expect_ordo_errors([&] {
    const SafeTensors st = SafeTensors::open(path);
    for (const auto& name : st.names()) {
      const Tensor& t = st.get(name);
      if (t.numel() > 0 && t.numel() < (1 << 16) && t.dtype != DType::I8) (void)t.to_f32();
    }
  });
  return 0;
}

// A zip of STORED entries, as torch.save writes them (CRCs left zero: ordo does not read them).
std::string stored_zip(const std::vector<std::pair<std::string, std::string>>& entries) {
  std::string z, cd;
  auto u16 = [](std::string& s, uint32_t v) { s.append({char(v & 255), char((v >> 8) & 255)}); };
  auto u32 = [&](std::string& s, uint32_t v) { u16(s, v & 0xffff), u16(s, v >> 16); };
  for (const auto& [name, data] : entries) {
    const uint32_t local = static_cast<uint32_t>(z.size());
    u32(z, 0x04034b50), u16(z, 20), u16(z, 0), u16(z, 0), u16(z, 0), u16(z, 0), u32(z, 0);
    u32(z, data.size()), u32(z, data.size()), u16(z, name.size()), u16(z, 0);
    z += name + data;
    u32(cd, 0x02014b50), u16(cd, 20), u16(cd, 20), u16(cd, 0), u16(cd, 0), u16(cd, 0), u16(cd, 0), u32(cd, 0);
    u32(cd, data.size()), u32(cd, data.size()), u16(cd, name.size()), u16(cd, 0), u16(cd, 0), u16(cd, 0);
    u16(cd, 0), u32(cd, 0), u32(cd, local);
    cd += name;
  }
  const uint32_t cd_offset = static_cast<uint32_t>(z.size());
  z += cd;
  u32(z, 0x06054b50), u16(z, 0), u16(z, 0), u16(z, entries.size()), u16(z, entries.size());
  u32(z, cd.size()), u32(z, cd_offset), u16(z, 0);
  return z;
}

// Every tensor of a loaded Weights read whole (a view past its storage would be caught by ASan).
void touch(const Weights& w) {
  for (const auto& kv : w.tensors())
    if (kv.second.numel() < (1 << 16) && kv.second.dtype != DType::I8) (void)kv.second.to_f32();
}

// pytorch_model.bin: input starting "PK" is the file; anything else is the data.pkl of a zip whose
// storages "0" and "1" hold 64 floats each, so mutations reach the unpickler directly.
int fuzz_checkpoint(const uint8_t* data, size_t size) {
  const std::string path = fresh_dir() + "/pytorch_model.bin";
  if (size >= 2 && data[0] == 'P' && data[1] == 'K') {
    write_file(path, data, size);
  } else {
    const std::string storage(256, '\x01');
    write_file(path, stored_zip({{"archive/data.pkl", as_text(data, size)},
                                 {"archive/data/0", storage},
                                 {"archive/data/1", storage}}));
  }
  expect_ordo_errors([&] { touch(Weights::open_file(path)); });
  return 0;
}

// model.safetensors.index.json beside the three shards of the sharded llama checkpoint: a load
// that succeeds must have read only files inside the directory.
int fuzz_weights_index(const uint8_t* data, size_t size) {
  const std::string dir = fresh_dir();
  const std::string source = data_path("checkpoints/llama-safetensors-sharded");
  for (const char* s :
       {"model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors", "model-00003-of-00003.safetensors"})
    fs::create_symlink(source + "/" + s, dir + "/" + s);
  write_file(dir + "/model.safetensors.index.json", data, size);
  expect_ordo_errors([&] {
    const Weights w = Weights::open_dir(dir);
    for (const std::string& f : w.files())
      if (fs::path(f).parent_path() != fs::path(dir)) broken("the index made ordo read " + f);
    touch(w);
  });
  return 0;
}

// config.json -> spec: the config sits beside the weights of the fixture of its model_type.
int fuzz_config(const uint8_t* data, size_t size) {
  static const std::map<std::string, std::string> weights = {
      {"llama", "fixtures/llama"}, {"mistral", "fixtures/llama"},     {"qwen2", "fixtures/llama"},
      {"gpt2", "fixtures/gpt2"},   {"bert", "fixtures/bert"},         {"bloom", "fixtures/bloom"},
      {"gptj", "fixtures/gptj"},   {"gpt_neox", "fixtures/gpt-neox"}, {"marian", "fixtures/marian"},
      {"mpt", "fixtures/mpt"},     {"opt", "fixtures/opt"},           {"t5", "fixtures/t5"}};
  const std::string dir = fresh_dir();
  const std::string text = as_text(data, size);
  write_file(dir + "/config.json", text);
  const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  std::string type = j.is_object() && j.contains("model_type") && j["model_type"].is_string()
                         ? j["model_type"].get<std::string>()
                         : "";
  const auto it = weights.find(type);
  const std::string source =
      it != weights.end() ? data_path(it->second) : std::string(ORDO_SOURCE_DIR) + "/models/zoo/lm/rope-s1";
  fs::create_symlink(source + "/model.safetensors", dir + "/model.safetensors");
  expect_ordo_errors([&] {
    ModelOptions o;
    o.load_tokenizer = false;
    o.threads = 1;
    const Model m = Model::load(dir, o);
    if (m.spec().graph == GraphKind::Decoder) (void)m.forward({0, 1});
  });
  return 0;
}

int fuzz_sentencepiece(const uint8_t* data, size_t size) {
  const std::string path = fresh_dir() + "/tokenizer.model";
  write_file(path, data, size);
  expect_ordo_errors([&] { after_load(load_sentencepiece(path), data, size); });
  return 0;
}

int fuzz_wordpiece(const uint8_t* data, size_t size) {
  const std::string path = fresh_dir() + "/vocab.txt";
  write_file(path, data, size);
  expect_ordo_errors([&] { after_load(load_wordpiece(path), data, size); });
  return 0;
}

// vocab.json, a NUL byte, merges.txt.
int fuzz_bpe_files(const uint8_t* data, size_t size) {
  const std::string dir = fresh_dir();
  const auto [vocab, merges] = split_nul(data, size);
  write_file(dir + "/vocab.json", vocab);
  write_file(dir + "/merges.txt", merges);
  expect_ordo_errors([&] { after_load(load_bpe(dir + "/vocab.json", dir + "/merges.txt"), data, size); });
  return 0;
}

int fuzz_tokenizer_json(const uint8_t* data, size_t size) {
  const std::string dir = fresh_dir();
  write_file(dir + "/tokenizer.json", data, size);
  expect_ordo_errors([&] { after_load(load_tokenizer(dir), data, size); });
  return 0;
}

// tokenizer_config.json beside one of the fixture tokenizers (chosen by the first byte).
int fuzz_tokenizer_config(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::string dir = fresh_dir();
  switch (data[0] % 3) {
    case 0: fs::create_symlink(data_path("fixtures/tokenizers/bert/vocab.txt"), dir + "/vocab.txt"); break;
    case 1:  // GPT-2's first 300 merges: the whole vocabulary takes seconds to load under ASan
      fs::create_symlink(std::string(ORDO_SOURCE_DIR) + "/tests/fuzz/data/gpt2-small/vocab.json", dir + "/vocab.json");
      fs::create_symlink(std::string(ORDO_SOURCE_DIR) + "/tests/fuzz/data/gpt2-small/merges.txt", dir + "/merges.txt");
      break;
    default: fs::create_symlink(data_path("fixtures/tokenizers/llama2/tokenizer.model"), dir + "/tokenizer.model");
  }
  write_file(dir + "/tokenizer_config.json", data + 1, size - 1);
  expect_ordo_errors([&] { after_load(load_tokenizer(dir), data + 1, size - 1); });
  return 0;
}

// Text through every fixture tokenizer.
int fuzz_roundtrip(const uint8_t* data, size_t size) {
  static const std::vector<std::unique_ptr<Tokenizer>> toks = [] {
    std::vector<std::unique_ptr<Tokenizer>> v;
    v.push_back(load_wordpiece(data_path("fixtures/tokenizers/bert/vocab.txt")));
    v.push_back(
        load_bpe(data_path("fixtures/tokenizers/gpt2/vocab.json"), data_path("fixtures/tokenizers/gpt2/merges.txt")));
    v.push_back(load_sentencepiece(data_path("fixtures/tokenizers/llama2/tokenizer.model")));
    TokenizerOptions t5;
    t5.extra_ids = 100;
    v.push_back(load_sentencepiece(data_path("fixtures/tokenizers/t5/spiece.model"), t5));
    return v;
  }();
  const std::string text = as_text(data, size);
  for (const auto& tok : toks) check_tokenizer(*tok, text);
  return 0;
}

// The CLI's argument parsing and flag checks: NUL-separated arguments.
int fuzz_cli_args(const uint8_t* data, size_t size) {
  std::vector<std::string> args{"ordo"};
  std::string cur;
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == 0) {
      args.push_back(cur);
      cur.clear();
    } else {
      cur += static_cast<char>(data[i]);
    }
  }
  if (!cur.empty()) args.push_back(cur);
  if (args.size() > 64) return 0;
  std::vector<const char*> argv;
  for (const auto& a : args) argv.push_back(a.c_str());
  cli::CliApp app;
  cli::Command* command = nullptr;
  try {
    command = app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError&) {
    return 0;
  } catch (const Error&) {  // an unknown subcommand: a usage error naming the nearest one
    return 0;
  }
  if (command) expect_ordo_errors([&] { command->validate(); });
  return 0;
}

}  // namespace

// A chat template (the input) parsed and rendered over a fixed conversation with tools and the
// usual special tokens: any template must render or end in an ordo::Error, within the renderer's
// bounds on nesting, steps and output.
int fuzz_chat_template(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  expect_ordo_errors([&] {
    const ChatTemplate t(source, {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
    const std::string messages =
        R"([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi {{ x }} \u00e9"},)"
        R"( {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": {"a": 1.5}}}]},)"
        R"( {"role": "tool", "content": "22"}, {"role": "user", "content": [{"type": "text", "text": "parts"}]}])";
    t.apply_json(messages, true, R"({"tools": [{"type": "function", "function": {"name": "f", "parameters": {}}}]})");
    t.apply(std::vector<ChatMessage>{}, false);
  });
  return 0;
}

// A GGUF file loaded as a model with its tokenizer: the reader, the metadata -> config mapping, the
// family build and the tokenizer lists.
int fuzz_gguf(const uint8_t* data, size_t size) {
  const std::string path = fresh_dir() + "/model.gguf";
  write_file(path, data, size);
  expect_ordo_errors([&] {
    ModelOptions o;
    o.threads = 1;
    const Model m = Model::load(path, o);
    if (m.has_tokenizer()) (void)m.encode("Once upon a time", true);
  });
  return 0;
}

// An `ordo serve` request body (the input) through every route's parser: a typed request or an
// ordo::Error (the server's 400), and a parsed request keeps the limits the server relies on.
int fuzz_serve_request(const uint8_t* data, size_t size) {
  namespace serve = cli::serve;
  const std::string body(reinterpret_cast<const char*>(data), size);
  nlohmann::json j;
  try {
    j = serve::parse_body(body);
  } catch (const Error&) {
    return 0;
  }
  expect_ordo_errors([&] {
    const serve::CompletionRequest r = serve::parse_completion(j);
    if (r.stop.size() > serve::kMaxStops || r.logprobs > serve::kMaxLogprobs) broken("completion limits not kept");
    if (!r.prompt_text && r.prompt_ids.empty()) broken("a completion without a prompt");
  });
  expect_ordo_errors([&] {
    if (serve::parse_chat(j).messages.empty()) broken("a chat request without messages");
  });
  expect_ordo_errors([&] { serve::parse_tokenize(j); });
  expect_ordo_errors([&] {
    for (int32_t id : serve::parse_detokenize(j))
      if (id < 0) broken("a negative token id");
  });
  expect_ordo_errors([&] {
    const serve::EmbeddingRequest r = serve::parse_embeddings(j);
    if (r.texts.empty() == r.ids.empty() || r.texts.size() + r.ids.size() > serve::kMaxInputs)
      broken("embedding inputs not one kind within the limit");
  });
  return 0;
}

const std::vector<TargetInfo>& targets() {
  static const std::vector<TargetInfo> all = {{"safetensors", fuzz_safetensors},
                                              {"config", fuzz_config},
                                              {"sentencepiece", fuzz_sentencepiece},
                                              {"wordpiece", fuzz_wordpiece},
                                              {"bpe_files", fuzz_bpe_files},
                                              {"tokenizer_json", fuzz_tokenizer_json},
                                              {"tokenizer_config", fuzz_tokenizer_config},
                                              {"roundtrip", fuzz_roundtrip},
                                              {"cli_args", fuzz_cli_args},
                                              {"checkpoint", fuzz_checkpoint},
                                              {"weights_index", fuzz_weights_index},
                                              {"added_tokens", fuzz_added_tokens},
                                              {"chat_template", fuzz_chat_template},
                                              {"gguf", fuzz_gguf},
                                              {"serve_request", fuzz_serve_request}};
  return all;
}

Target find_target(const std::string& name) {
  for (const auto& t : targets())
    if (name == t.name) return t.run;
  return nullptr;
}

}  // namespace ordo::fuzz
