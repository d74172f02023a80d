// Chat templates: ordo's interpreter against python3-jinja2 rendering real model templates as
// transformers' apply_chat_template does (tests/data/chat_templates/goldens.json), plus the
// constructs it must refuse by name and the model-directory loader.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ordo/chat_template.hpp"
#include "ordo/tensor.hpp"

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
}

}  // namespace
