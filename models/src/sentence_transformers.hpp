// The embedding a sentence-transformers directory asks for (modules.json and its Pooling and
// Normalize modules), private to ordo_models.
#pragma once

#include <optional>
#include <string>

#include "ordo/ordo.hpp"

namespace ordo {

struct SentenceTransformersSetup {
  Pooling pooling = Pooling::Mean;
  bool normalize = false;  // a Normalize module
  // Why ordo cannot reproduce the setup ("" if it can): a pooling mode other than one of cls,
  // mean, lasttoken, or a module such as Dense; it names the file and the field.
  std::string problem;
};

// nullopt when dir has no modules.json. A malformed file is an Error naming it.
std::optional<SentenceTransformersSetup> read_sentence_transformers(const std::string& dir);

}  // namespace ordo
