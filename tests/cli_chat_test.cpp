// Chat end to end: a copy of models/stories260K with tests/data/chat/tokenizer_config.json (a
// chat template over the model's own tokens). The rendered conversation's ids are held to
// transformers' apply_chat_template(tokenize=True) (tests/data/chat/goldens.json), and each reply
// of `ordo chat` / `ordo run --chat` to `ordo run --ids <those ids>` greedy output.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include "ordo/ordo.hpp"
#include "support/cli.hpp"

namespace {

namespace fs = std::filesystem;
using ordo::test::make_temp_dir;
using ordo::test::run_cli;
using ordo::test::shell_quote;

const std::string kData = std::string(ORDO_TEST_DATA) + "/chat/";

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// stories260K's files plus the chat tokenizer_config.json, in a fresh directory.
std::string chat_model_dir(const std::string& tag) {
  const std::string dir = make_temp_dir(tag);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors", "tokenizer.model"})
    fs::copy_file(fs::path(ORDO_SOURCE_DIR) / "models/stories260K" / f, fs::path(dir) / f);
  fs::copy_file(kData + "tokenizer_config.json", fs::path(dir) / "tokenizer_config.json");
  return dir;
}

std::vector<ordo::ChatMessage> messages_of(const nlohmann::json& j) {
  std::vector<ordo::ChatMessage> out;
  for (const auto& m : j) out.push_back({m["role"], m["content"]});
  return out;
}

std::string ids_arg(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += (s.empty() ? "" : ",") + std::to_string(id);
  return s;
}

// `ordo run --ids` greedy: the generated ids (up to the stop id </s>), decoded alone and without
// special tokens, as transformers' decode(new_ids, skip_special_tokens=True) shows a reply.
std::string greedy_reply(const std::string& dir, const std::vector<int32_t>& ids, int n) {
  const auto r =
      run_cli("run -m " + shell_quote(dir) + " --ids " + ids_arg(ids) + " --temp 0 -q -n " + std::to_string(n));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<int32_t> out;
  std::stringstream ss(r.out);
  for (std::string id; std::getline(ss, id, ',');) out.push_back(std::stoi(id));
  if (!out.empty() && out.back() == 2) out.pop_back();
  return ordo::Model::load(dir).tokenizer().decode(out, true);
}

// `ordo <args>` with stdin from `input_file`.
ordo::test::CliResult run_with_stdin(const std::string& args, const std::string& input_file) {
  const std::string dir = make_temp_dir("chat-cli");
  const std::string cmd =
      shell_quote(ORDO_CLI) + " " + args + " <" + shell_quote(input_file) + " >" + dir + "/out 2>" + dir + "/err";
  const int status = std::system(cmd.c_str());
  ordo::test::CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = read_text(dir + "/out");
  r.err = read_text(dir + "/err");
  return r;
}

TEST(ChatModel, RenderedIdsMatchTransformers) {
  const std::string dir = chat_model_dir("chat-ids");
  const ordo::Model m = ordo::Model::load(dir);
  ASSERT_TRUE(m.has_chat_template());
  const auto g = nlohmann::json::parse(read_text(kData + "goldens.json"));
  for (const auto& c : g["cases"]) {
    const auto msgs = messages_of(c["messages"]);
    EXPECT_EQ(m.apply_chat_template(msgs, c["add_generation_prompt"]), c["text"].get<std::string>());
    EXPECT_EQ(m.encode_chat(msgs, c["add_generation_prompt"]), c["ids"].get<std::vector<int32_t>>()) << c["text"];
  }
  EXPECT_EQ(m.chat_stop_ids(), std::vector<int32_t>{2});  // eos </s> (config, generation_config, template)
}

TEST(ChatCli, RunChatAppliesTheTemplate) {
  const std::string dir = chat_model_dir("chat-run");
  const auto g = nlohmann::json::parse(read_text(kData + "goldens.json"));
  const auto& c = g["cases"][2];  // system + user, add_generation_prompt
  ASSERT_EQ(c["messages"].size(), 2u);
  const auto r = run_cli("run --chat -m " + shell_quote(dir) + " --system " + shell_quote(c["messages"][0]["content"]) +
                         " -p " + shell_quote(c["messages"][1]["content"]) + " --temp 0 -n 40 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, greedy_reply(dir, c["ids"].get<std::vector<int32_t>>(), 40) + "\n");
}

TEST(ChatCli, ConversationKeepsHistory) {
  const std::string dir = chat_model_dir("chat-conv");
  const std::string sys = "You are a storyteller.", u1 = "Tell me a story about a cat.", u2 = "What did the dog do?";
  const auto r = run_with_stdin("chat -m " + shell_quote(dir) + " --system " + shell_quote(sys) + " --temp 0 -n 40 -q",
                                kData + "two_turns.txt");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Turn 1: the prompt transformers renders for [system, user] (goldens.json case 2).
  const auto g = nlohmann::json::parse(read_text(kData + "goldens.json"));
  const std::string reply1 = greedy_reply(dir, g["cases"][2]["ids"].get<std::vector<int32_t>>(), 40);
  ASSERT_EQ(r.out.compare(0, reply1.size() + 1, reply1 + "\n"), 0) << r.out;
  // Turn 2: the whole conversation again, with turn 1's reply as the assistant's message.
  const ordo::Model m = ordo::Model::load(dir);
  const std::vector<int32_t> ids2 = m.encode_chat({{"system", sys}, {"user", u1}, {"assistant", reply1}, {"user", u2}});
  const std::string reply2 = greedy_reply(dir, ids2, 40);
  EXPECT_EQ(r.out, reply1 + "\n" + reply2 + "\n");
  EXPECT_NE(reply1, reply2);
}

TEST(ChatCli, ExitCommandAndBlankLines) {
  const std::string dir = chat_model_dir("chat-exit");
  const auto r = run_with_stdin("chat -m " + shell_quote(dir) + " --temp 0 -n 5 -q", kData + "exit_first.txt");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "");  // blank lines are skipped, /exit ends before any turn
}

TEST(ChatCli, NoTemplateNamesTokenizerConfig) {
  const auto r = run_cli("chat -m " + shell_quote(std::string(ORDO_SOURCE_DIR) + "/models/stories260K") + " -q");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("stories260K/tokenizer_config.json: no \"chat_template\""), std::string::npos) << r.err;
  const auto run = run_cli("run --chat -p hi -m " + shell_quote(std::string(ORDO_SOURCE_DIR) + "/models/stories260K"));
  EXPECT_EQ(run.exit_code, 1);
  EXPECT_NE(run.err.find("tokenizer_config.json: no \"chat_template\""), std::string::npos) << run.err;
  const auto sys_alone = run_cli("run -p hi --system x");
  EXPECT_EQ(sys_alone.exit_code, 2);  // --system needs --chat
}

// Stop strings are not followed in a chat reply: refused by name rather than ignored.
TEST(ChatCli, StopStringsAreRefusedNotIgnored) {
  const std::string stories = shell_quote(std::string(ORDO_SOURCE_DIR) + "/models/stories260K");
  for (const std::string& args : {"chat -m " + stories + " --stop x -q", "run --chat -p hi --stop x -m " + stories}) {
    SCOPED_TRACE(args);
    const auto r = run_cli(args);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("--stop:"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("--stop-id"), std::string::npos) << r.err;
  }
}

TEST(ChatCli, BrokenTemplateIsNamedWhenChatIsUsed) {
  const std::string dir = chat_model_dir("chat-broken");
  std::ofstream(fs::path(dir) / "chat_template.jinja") << "{% for m in messages %}{% include 'x' %}{% endfor %}";
  // Plain generation still works; chat names the file and the construct.
  EXPECT_EQ(run_cli("run -m " + shell_quote(dir) + " -p Hi -n 3 -q").exit_code, 0);
  const auto r = run_cli("run --chat -m " + shell_quote(dir) + " -p Hi -n 3 -q");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("chat_template.jinja: chat template: unsupported tag 'include' at 1:27"), std::string::npos)
      << r.err;
}

}  // namespace
