// TextStreamer: Model::generate (or generate_ids with a StreamDecoder) on a worker thread.
#include "stream.hpp"

#include <algorithm>
#include <mutex>

namespace ordo::py {

TextStreamer::TextStreamer(std::shared_ptr<const SharedModel> model, std::string prompt,
                           std::optional<std::vector<int32_t>> ids, TextGenerateParams params, bool keep_logits)
    : model_(std::move(model)),
      prompt_(std::move(prompt)),
      ids_(std::move(ids)),
      params_(std::move(params)),
      keep_logits_(keep_logits) {
  worker_ = std::thread([this] { run(); });
}

TextStreamer::~TextStreamer() { close(); }

bool TextStreamer::cancelled() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cancelled_;
}

bool TextStreamer::push(const std::string& piece) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return false;
  queue_.push_back(piece);
  cv_.notify_all();
  return true;
}

void TextStreamer::run() {
  try {
    std::shared_lock<std::shared_mutex> shared(model_->mu);
    const Model& m = model_->m;
    if (ids_) {
      // Ids in, text out: the tokenizer's streaming decoder, the prompt as its context.
      StreamDecoder dec(m.tokenizer(), m.spec().graph == GraphKind::EncoderDecoder ? std::vector<int32_t>{} : *ids_);
      const std::vector<int32_t>& eos = m.spec().eos_ids;  // their text is not shown, as Model::generate
      result_.generation = m.generate_ids(
          *ids_, params_,
          [&](int32_t id) {
            const bool stop = std::find(eos.begin(), eos.end(), id) != eos.end();
            const std::string piece = stop ? std::string() : dec.push(id);
            result_.text += piece;
            return piece.empty() ? !cancelled() : push(piece);
          },
          keep_logits_);
      if (!cancelled()) {
        const std::string rest = dec.flush();
        result_.text += rest;
        if (!rest.empty()) push(rest);
      }
    } else {
      result_ = std::move(m.generate_batch(
          {prompt_}, params_, 1, [this](size_t, const std::string& piece) { return push(piece); }, keep_logits_)[0]);
    }
  } catch (...) {
    std::lock_guard<std::mutex> lock(mu_);
    error_ = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mu_);
  done_ = true;
  cv_.notify_all();
}

std::optional<std::string> TextStreamer::next() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return !queue_.empty() || done_; });
  if (!queue_.empty()) {
    std::string piece = std::move(queue_.front());
    queue_.pop_front();
    return piece;
  }
  if (error_) {
    std::exception_ptr e = error_;
    error_ = nullptr;  // raised once
    std::rethrow_exception(e);
  }
  return std::nullopt;
}

void TextStreamer::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    cancelled_ = true;
  }
  if (worker_.joinable()) worker_.join();
}

bool TextStreamer::finished() const {
  std::lock_guard<std::mutex> lock(mu_);
  return done_ && queue_.empty();
}

}  // namespace ordo::py
