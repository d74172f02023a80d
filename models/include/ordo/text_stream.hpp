// Generated ids to text as they come: stop strings end the text (and the generation), and text
// that could still turn into a stop string is held back (Model::generate, `ordo serve`).
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "ordo/tokenizer.hpp"

namespace ordo {

class TextStream {
 public:
  // context: ids already shown (the prompt), so a leading space is kept or dropped as a full decode
  // would; stop_ids: ids that end the generation, whose text is not shown (the EOS ids, the
  // caller's); skip_special: special tokens show no text. on_text receives the released text.
  TextStream(const Tokenizer& tok, std::vector<int32_t> context, std::vector<std::string> stop_strings,
             std::vector<int32_t> stop_ids, std::function<bool(const std::string&)> on_text, bool skip_special = false);

  // Takes one generated id; false: stop generating (a stop string was seen, or on_text said stop).
  bool push(int32_t id);
  // After the generation: the rest of the text, unless the caller stopped it.
  void finish();
  // Whether a stop string ended the text.
  bool hit_stop_string() const { return hit_stop_; }

  std::string text;  // generated text so far (stop string and stop ids' text excluded)

 private:
  void release(bool final);

  StreamDecoder stream_;
  std::vector<std::string> stop_strings_;
  std::vector<int32_t> stop_ids_;
  std::function<bool(const std::string&)> on_text_;
  size_t shown_ = 0;  // bytes of text already passed to on_text
  bool stopped_ = false, hit_stop_ = false;
};

}  // namespace ordo
