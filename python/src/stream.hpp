// Streaming generation for Python: decoding runs on its own thread and hands text pieces over a
// queue, so the consumer waits without the GIL and can stop the decoding between two tokens.
#pragma once

#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "bindings.hpp"

namespace ordo::py {

class TextStreamer {
 public:
  // A text prompt (stop strings apply) or, when `ids` is set, a token-id prompt.
  TextStreamer(std::shared_ptr<const SharedModel> model, std::string prompt, std::optional<std::vector<int32_t>> ids,
               TextGenerateParams params, bool keep_logits);
  ~TextStreamer();
  TextStreamer(const TextStreamer&) = delete;
  TextStreamer& operator=(const TextStreamer&) = delete;

  // The next piece of text (complete UTF-8), blocking; nullopt once decoding ended. Rethrows the
  // decoding's error. Call without the GIL.
  std::optional<std::string> next();
  // Stops decoding after the step in progress and waits for the thread; idempotent.
  void close();
  bool finished() const;
  // The whole result, once next() returned nullopt (or after close()).
  const TextResult& result() const { return result_; }

 private:
  bool push(const std::string& piece);  // the decoding thread's callback; false: stop
  void run();
  bool cancelled() const;

  std::shared_ptr<const SharedModel> model_;
  std::string prompt_;
  std::optional<std::vector<int32_t>> ids_;
  TextGenerateParams params_;
  bool keep_logits_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::string> queue_;
  bool done_ = false, cancelled_ = false;
  std::exception_ptr error_;
  TextResult result_;
  std::thread worker_;
};

}  // namespace ordo::py
