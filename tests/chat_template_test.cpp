// Chat templates: ordo's interpreter against python3-jinja2 rendering real model templates as
// transformers' apply_chat_template does (tests/data/chat_templates/goldens.json), plus the
// constructs it must refuse by name and the model-directory loader.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>

#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "ordo/chat_template.hpp"
#include "ordo/tensor.hpp"
#include "support/temp_dirs.hpp"

namespace {

using ordered = nlohmann::ordered_json;

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

const std::string kDir = std::string(ORDO_TEST_DATA) + "/chat_templates/";

TEST(ChatTemplateGolden, RealTemplatesMatchJinja2) {
  // The goldens were rendered by jinja2 on 2026-11-26: templates that print today's date (SmolLM3's
  // strftime_now) render that day.
  setenv("SOURCE_DATE_EPOCH", "1795694400", 1);  // 2026-11-26 12:00 UTC
  const ordered g = ordered::parse(read_text(kDir + "goldens.json"));
  std::map<std::string, std::unique_ptr<ordo::ChatTemplate>> templates;
  size_t outputs = 0, raises = 0, errors = 0;
  for (const auto& c : g["cases"]) {
    const std::string name = c["template"];
    auto& t = templates[name];
    if (!t) {
      std::vector<std::pair<std::string, std::string>> special;
      for (auto it = g["special_tokens"][name].begin(); it != g["special_tokens"][name].end(); ++it)
        special.emplace_back(it.key(), it.value().get<std::string>());
      t = std::make_unique<ordo::ChatTemplate>(read_text(kDir + name + ".jinja"), special);
    }
    const ordered& conv = g["conversations"][c["conversation"].get<size_t>()];
    ordered extra = conv["extra"];
    extra["date_string"] = "26 Jul 2024";
    for (const auto& n : g["tool_use_only"])
      if (n == name && !extra.contains("tools")) extra["tools"] = g["conversations"][16]["extra"]["tools"];
    const std::string what = name + " / " + conv["title"].get<std::string>() +
                             (c["add_generation_prompt"].get<bool>() ? " / gen prompt" : "");
    if (c.contains("output")) {
      try {
        EXPECT_EQ(t->apply_json(conv["messages"].dump(), c["add_generation_prompt"], extra.dump()),
                  c["output"].get<std::string>())
            << what;
      } catch (const ordo::Error& e) {
        ADD_FAILURE() << what << ": " << e.what();
      }
      ++outputs;
    } else if (c.contains("raises")) {
      try {
        t->apply_json(conv["messages"].dump(), c["add_generation_prompt"], extra.dump());
        ADD_FAILURE() << what << ": expected raise_exception(" << c["raises"] << ")";
      } catch (const ordo::Error& e) {
        EXPECT_EQ(std::string(e.what()), c["raises"].get<std::string>()) << what;
      }
      ++raises;
    } else {
      EXPECT_THROW(t->apply_json(conv["messages"].dump(), c["add_generation_prompt"], extra.dump()), ordo::Error)
          << what << ": jinja2 failed with " << c["error"];
      ++errors;
    }
  }
  EXPECT_GE(templates.size(), 20u);
  EXPECT_GE(outputs, 800u);
  EXPECT_GE(raises, 100u);
  EXPECT_GT(errors, 0u);
  unsetenv("SOURCE_DATE_EPOCH");
}

// strftime_now renders SOURCE_DATE_EPOCH's day when it is set (UTC), else today's local date.
TEST(ChatTemplate, StrftimeNowHonoursSourceDateEpoch) {
  const ordo::ChatTemplate t("{{ strftime_now('%Y-%m-%d %H:%M') }}", {});
  setenv("SOURCE_DATE_EPOCH", "1795694400", 1);
  EXPECT_EQ(t.apply_json("[]", false, "{}"), "2026-11-26 12:00");
  setenv("SOURCE_DATE_EPOCH", "0", 1);
  EXPECT_EQ(t.apply_json("[]", false, "{}"), "1970-01-01 00:00");
  unsetenv("SOURCE_DATE_EPOCH");
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  localtime_r(&now, &tm);
  char today[16];
  std::strftime(today, sizeof today, "%Y-%m-%d", &tm);
  EXPECT_EQ(t.apply_json("[]", false, "{}").substr(0, 10), today);
}

TEST(ChatTemplateGolden, ConstructsMatchJinja2) {
  const ordered g = ordered::parse(read_text(kDir + "constructs.json"));
  size_t n = 0;
  for (const auto& c : g["cases"]) {
    const std::string src = c["template"];
    const std::string vars = c["vars"].dump();
    ++n;
    try {
      const ordo::ChatTemplate t(src);
      const std::string got = t.render_json(vars);
      if (c.contains("output"))
        EXPECT_EQ(got, c["output"].get<std::string>()) << src;
      else
        ADD_FAILURE() << src << ": rendered '" << got << "' where jinja2 failed: " << c.dump();
    } catch (const ordo::Error& e) {
      if (c.contains("raises"))
        EXPECT_EQ(std::string(e.what()), c["raises"].get<std::string>()) << src;
      else
        EXPECT_TRUE(c.contains("error")) << src << ": ordo failed (" << e.what() << "), jinja2 gave " << c["output"];
    }
  }
  EXPECT_GE(n, 60u);
}

}  // namespace

namespace {

std::string error_of(const std::string& src, const std::string& vars = "{}") {
  try {
    ordo::ChatTemplate(src).render_json(vars);
  } catch (const ordo::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// A construct outside the subset is refused by name with its line:col, before anything renders.
TEST(ChatTemplateRefusal, NamesTheConstruct) {
  EXPECT_EQ(error_of("ok\n{% include 'other.jinja' %}"), "chat template: unsupported tag 'include' at 2:4");
  EXPECT_EQ(error_of("{% extends 'base' %}"), "chat template: unsupported tag 'extends' at 1:4");
  EXPECT_EQ(error_of("{% import 'm' as m %}"), "chat template: unsupported tag 'import' at 1:4");
  EXPECT_EQ(error_of("{% call foo() %}x{% endcall %}"), "chat template: unsupported tag 'call' at 1:4");
  EXPECT_EQ(error_of("{% raw %}{{ x }}{% endraw %}"), "chat template: unsupported tag 'raw' at 1:4");
  EXPECT_EQ(error_of("{% filter upper %}x{% endfilter %}"), "chat template: unsupported tag 'filter' at 1:4");
  // Unknown filters and tests are refused even in a branch that would not run (jinja2 refuses them
  // when compiling).
  EXPECT_EQ(error_of("{% if false %}{{ x | pprint }}{% endif %}"),
            "chat template: unsupported filter 'pprint' at 1:20");
  EXPECT_EQ(error_of("{{ x is escaped }}"), "chat template: unsupported test 'escaped' at 1:6");
  EXPECT_EQ(error_of("{% for x in y recursive %}{% endfor %}"),
            "chat template: unsupported loop modifier 'recursive' at 1:15");
  EXPECT_EQ(error_of("{{ f(*args) }}"), "chat template: unsupported argument unpacking '*' at 1:6");
  EXPECT_EQ(error_of("{{ 'caf\\N{LATIN SMALL LETTER E WITH ACUTE}' }}"),
            "chat template: unsupported \\N{...} escape in string literal at 1:4");
  // Case mapping of non-ASCII text is refused rather than done differently from Python.
  EXPECT_EQ(error_of("{{ 'É'.lower() }}"), "chat template: lower() of non-ASCII text is not supported");
  // Python's integers are unbounded; ordo's int64 refuses to wrap.
  for (const char* big : {"{{ 2 ** 64 }}", "{{ 9223372036854775807 + 1 }}", "{{ -(-9223372036854775807 - 1) }}",
                          "{{ 3037000500 * 3037000500 }}", "{{ (-9223372036854775807 - 1) // -1 }}",
                          "{{ (-9223372036854775807 - 1) | abs }}", "{{ [9223372036854775807, 1] | sum }}"})
    EXPECT_EQ(error_of(big), "chat template: integer result beyond 64 bits is not supported") << big;
  EXPECT_EQ(error_of("{{ 'one two' | wordcount }}"), "chat template: unsupported filter 'wordcount' at 1:14");
  EXPECT_EQ(error_of("{{ 'a\\rb' | indent }}"),
            "chat template: indent of text with line breaks other than \\n is not supported");
}

TEST(ChatTemplateRefusal, SyntaxErrorsNameThePlace) {
  EXPECT_EQ(error_of("{% if x %}unclosed"),
            "chat template: missing end tag: expected one of 'elif', 'else', 'endif' before the end of the template; "
            "at 1:19");
  EXPECT_EQ(error_of("{{ x "), "chat template: unterminated '{{' tag at 1:6");
  EXPECT_EQ(error_of("{{ 'abc }}"), "chat template: unterminated string literal at 1:4");
  EXPECT_EQ(error_of("{# no end"), "chat template: unterminated comment at 1:1");
  EXPECT_EQ(error_of("{{ x ? y }}"), "chat template: unexpected character '?' at 1:6");
  EXPECT_EQ(error_of("{% endfor %}"), "chat template: unexpected tag 'endfor' at 1:4");
}

TEST(ChatTemplateRefusal, HostileTemplatesFailInsteadOfHanging) {
  EXPECT_NE(error_of("{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}")
                .find("nesting deeper than 200 levels"),
            std::string::npos);
  std::string ifs;
  for (int k = 0; k < 5000; ++k) ifs += "{% if true %}";
  EXPECT_NE(error_of(ifs).find("nesting deeper than 200 levels"), std::string::npos);
  const std::string loops =
      error_of("{% for i in range(100000) %}{% for j in range(100000) %}{{ j }}{% endfor %}{% endfor %}");
  EXPECT_TRUE(loops.find("steps") != std::string::npos || loops.find("allocates more than") != std::string::npos)
      << loops;
  EXPECT_NE(error_of("{% set ns = namespace(n=0) %}{% for i in range(100000) %}{% for j in range(1000) %}"
                     "{% set ns.n = ns.n + 1 %}{% endfor %}{% endfor %}")
                .find("rendering takes more than 5000000 steps"),
            std::string::npos);
  EXPECT_NE(error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}").find("macro recursion deeper than 200"),
            std::string::npos);
  EXPECT_NE(
      error_of("{% set ns = namespace(s='xxxxxxxx') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}")
          .find("exceeds 64 MiB"),
      std::string::npos);
  EXPECT_EQ(error_of("{% set s = 'x' * 40000000 %}{{ [s, s] | join }}"), "chat template: text longer than 64 MiB");
  EXPECT_EQ(error_of("{% set s = 'x' * 1000000 %}{% set ns = namespace(l=[s]) %}{% for i in range(20) %}"
                     "{% set ns.l = ns.l + ns.l %}{% endfor %}"),
            "chat template: rendering allocates more than 1024 MiB");
  EXPECT_EQ(error_of("{{ range(1000000) | length }}"),
            "chat template: Range too big. The sandbox blocks ranges larger than MAX_RANGE (100000).");
}

TEST(ChatTemplateApi, ChatMessagesAndSpecialTokens) {
  // Zephyr's template (tests/data/chat_templates/zephyr-7b-beta.jinja) through the ChatMessage API;
  // expected text from python3-jinja2 (goldens.json, "system + user" with add_generation_prompt).
  const ordered g = ordered::parse(read_text(kDir + "goldens.json"));
  std::string want;
  for (const auto& c : g["cases"])
    if (c["template"] == "zephyr-7b-beta" && c["conversation"] == 1 && c["add_generation_prompt"] == true)
      want = c["output"];
  ASSERT_FALSE(want.empty());
  const ordo::ChatTemplate t(read_text(kDir + "zephyr-7b-beta.jinja"), {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
  EXPECT_EQ(ordo::apply_chat_template(t, {{"system", "You are a helpful assistant."}, {"user", "Hello"}}, true), want);
  EXPECT_EQ(t.special_token("eos_token"), "</s>");
  EXPECT_EQ(t.special_token("pad_token"), "");
  EXPECT_THROW(t.apply_json("{\"not\": \"a list\"}", true), ordo::Error);
  EXPECT_THROW(t.apply_json("[", true), ordo::Error);
  EXPECT_THROW(t.apply_json("[]", true, "[1]"), ordo::Error);
}

}  // namespace

namespace {

std::string temp_dir(const std::string& tag) { return ordo::test::make_temp_dir("chat-" + tag); }

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

std::string load_error(const std::string& dir) {
  try {
    ordo::load_chat_template(dir);
  } catch (const ordo::Error& e) {
    return e.what();
  }
  return "(no error)";
}

// Where transformers finds a template: chat_template.jinja, tokenizer_config.json (a string or
// named templates, "default" used), chat_template.json; special tokens as strings or AddedToken
// objects, missing ones from special_tokens_map.json.
TEST(ChatTemplateLoader, FindsTemplatesAndSpecialTokens) {
  const std::string d = temp_dir("load");
  EXPECT_FALSE(ordo::load_chat_template(d).has_value());
  write(d + "/tokenizer_config.json",
        R"({"bos_token": {"__type": "AddedToken", "content": "<B>", "lstrip": false}, "eos_token": "<E>",
            "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "{{ bos_token }}D{{ eos_token }}{{ pad_token }}"}]})");
  write(d + "/special_tokens_map.json", R"({"eos_token": "<ignored>", "pad_token": {"content": "<P>"}})");
  auto t = ordo::load_chat_template(d);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->apply({}, true), "<B>D<E><P>");
  EXPECT_EQ(t->special_token("bos_token"), "<B>");
  write(d + "/chat_template.json", R"({"chat_template": "from chat_template.json"})");
  EXPECT_EQ(ordo::load_chat_template(d)->apply({}, true), "<B>D<E><P>");  // tokenizer_config.json first
  write(d + "/chat_template.jinja", "from .jinja {{ messages | length }}\n");
  EXPECT_EQ(ordo::load_chat_template(d)->apply({{"user", "x"}}, true), "from .jinja 1");

  const std::string e = temp_dir("load-json");
  write(e + "/tokenizer_config.json", R"({"eos_token": "</s>"})");
  write(e + "/chat_template.json", R"({"chat_template": "{{ eos_token }}!"})");
  EXPECT_EQ(ordo::load_chat_template(e)->apply({}, false), "</s>!");
}

TEST(ChatTemplateLoader, MalformedFieldsAreNamed) {
  const std::string d = temp_dir("bad");
  write(d + "/tokenizer_config.json", R"({"chat_template": 5})");
  EXPECT_EQ(load_error(d),
            "chat template: " + d +
                "/tokenizer_config.json: field 'chat_template' must be a string or a list of named templates");
  write(d + "/tokenizer_config.json", R"({"chat_template": [{"name": "rag", "template": "x"}]})");
  EXPECT_EQ(load_error(d),
            "chat template: " + d +
                "/tokenizer_config.json: field 'chat_template' has named templates but none named 'default'");
  write(d + "/tokenizer_config.json", R"({"eos_token": 7, "chat_template": "x"})");
  EXPECT_EQ(load_error(d),
            "chat template: " + d +
                "/tokenizer_config.json: field 'eos_token' must be a string or an object with a 'content' string");
  write(d + "/tokenizer_config.json", R"({"chat_template": "{% if %}"})");
  EXPECT_EQ(load_error(d), d + "/tokenizer_config.json: chat template: unexpected token at 1:7");
  write(d + "/tokenizer_config.json", "{not json");
  EXPECT_NE(load_error(d).find("tokenizer_config.json is not valid JSON"), std::string::npos);
}

}  // namespace

namespace {

// strftime_now (transformers: datetime.now().strftime(fmt)) as Llama 3.2's template calls it when
// no date_string is given: today's date in the C locale, e.g. "26 Jul 2024".
TEST(ChatTemplateApi, StrftimeNowGivesTodaysDate) {
  const std::string got =
      ordo::ChatTemplate("{{ strftime_now('%d %b %Y') }}|{{ strftime_now('%Y') | int > 2000 }}").render_json("{}");
  ASSERT_EQ(got.size(), std::string("26 Jul 2024|True").size()) << got;
  EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(got[0])) && std::isdigit(static_cast<unsigned char>(got[1])));
  EXPECT_EQ(got.substr(11), "|True");
  static const std::vector<std::string> months{"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                               "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  EXPECT_NE(std::find(months.begin(), months.end(), got.substr(3, 3)), months.end()) << got;
  // Llama 3.2 without date_string: its header carries that date.
  const ordo::ChatTemplate llama(read_text(kDir + "llama-3.2-11b-vision-instruct.jinja"),
                                 {{"bos_token", "<|begin_of_text|>"}});
  const std::string prompt = llama.apply({{"user", "Hi"}}, true);
  EXPECT_NE(prompt.find("Today Date: " + got.substr(0, 11) + "\n"), std::string::npos) << prompt;
}

// One parsed template rendered from many threads at once gives the same text as alone.
TEST(ChatTemplateApi, SharedAcrossThreads) {
  const ordo::ChatTemplate t(read_text(kDir + "qwen2.5-7b-instruct.jinja"), {{"eos_token", "<|im_end|>"}});
  const std::vector<ordo::ChatMessage> conv{{"system", "S"}, {"user", "Hello"}, {"assistant", "Hi"}, {"user", "Bye"}};
  const std::string want = t.apply(conv, true);
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int k = 0; k < 4; ++k)
    threads.emplace_back([&] {
      for (int i = 0; i < 200; ++i)
        if (t.apply(conv, true) != want) ++bad;
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

}  // namespace
