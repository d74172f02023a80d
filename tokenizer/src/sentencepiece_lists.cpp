// A SentencePiece tokenizer.model as the lists a GGUF file stores (VocabLists), read as llama.cpp's
// converter reads it: each piece, its score and its type, padded with unused "[PADi]" pieces to the
// model's vocabulary size.
#include <sentencepiece_processor.h>

#include "files.hpp"
#include "ordo/tokenizer.hpp"

namespace ordo {

VocabLists sentencepiece_vocab_lists(const std::string& model_file, int64_t vocab_size) {
  sentencepiece::SentencePieceProcessor sp;
  const auto st = sp.LoadFromSerializedProto(tokenizer_detail::read_file(model_file));
  if (!st.ok()) throw Error("sentencepiece tokenizer: cannot load " + model_file + ": " + st.ToString());
  const int n = sp.GetPieceSize();
  if (vocab_size <= 0) vocab_size = n;
  if (vocab_size > (int64_t{1} << 24))
    throw Error(model_file + ": a vocabulary of " + std::to_string(vocab_size) + " pieces is more than ordo writes");
  VocabLists v;
  v.model = "llama";
  v.pre = "default";
  for (int64_t id = 0; id < vocab_size; ++id) {
    if (id >= n) {  // the converter's padding up to config.json's vocab_size
      v.tokens.push_back("[PAD" + std::to_string(id) + "]");
      v.scores.push_back(-10000.0f);
      v.types.push_back(5);
      continue;
    }
    const int i = static_cast<int>(id);
    v.tokens.push_back(sp.IdToPiece(i));
    v.scores.push_back(sp.GetScore(i));
    // SentencePiece's own type numbers, as GGUF stores them (unknown first, as the converter checks).
    v.types.push_back(sp.IsUnknown(i) ? 2 : sp.IsControl(i) ? 3 : sp.IsUnused(i) ? 5 : sp.IsByte(i) ? 6 : 1);
  }
  return v;
}

}  // namespace ordo
