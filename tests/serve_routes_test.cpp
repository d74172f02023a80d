// `ordo serve`'s routes before the model has loaded: /health is 503 without a key, the rest need the
// key first and then answer 503 "loading", all in OpenAI's error shape.
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "serve.hpp"

namespace ordo::cli::serve {
namespace {

using json = nlohmann::json;

// A server on a free loopback port with its routes over a State whose model never loads (the
// window `ordo serve` has between binding its port and finishing the load).
class LoadingServer {
 public:
  explicit LoadingServer(const std::string& key) {
    state_.opt.api_key = key;
    add_routes(http_, state_);
    port_ = http_.bind_to_any_port("127.0.0.1");
    // bind_to_any_port already listens: connections wait in the backlog until the thread accepts.
    // stop() only stops a server that runs, so the destructor needs the listener to have started.
    listener_ = std::thread([this] { http_.listen_after_bind(); });
    while (port_ > 0 && !http_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~LoadingServer() {
    http_.stop();
    listener_.join();
  }
  int port() const { return port_; }

 private:
  State state_;
  httplib::Server http_;
  int port_ = -1;
  std::thread listener_;
};

void expect_openai_error(const httplib::Result& r, int status, const std::string& type, const std::string& text) {
  ASSERT_TRUE(r) << httplib::to_string(r.error());
  EXPECT_EQ(r->status, status);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  const json body = json::parse(r->body);
  ASSERT_TRUE(body.contains("error")) << r->body;
  EXPECT_EQ(body["error"]["code"], status);
  EXPECT_EQ(body["error"]["type"], type);
  EXPECT_NE(body["error"]["message"].get<std::string>().find(text), std::string::npos) << r->body;
}

TEST(ServeRoutes, HealthIs503WhileLoadingAndNeedsNoKey) {
  LoadingServer server("k3y");
  ASSERT_GT(server.port(), 0);
  httplib::Client client("127.0.0.1", server.port());
  expect_openai_error(client.Get("/health"), 503, "unavailable_error", "loading the model");
}

TEST(ServeRoutes, OtherRoutesAskForTheKeyBeforeSayingLoading) {
  LoadingServer server("k3y");
  httplib::Client client("127.0.0.1", server.port());
  const std::string body = R"({"prompt":"x","max_tokens":1})";
  expect_openai_error(client.Post("/v1/completions", body, "application/json"), 401, "authentication_error", "API key");
  const httplib::Headers key = {{"Authorization", "Bearer k3y"}};
  expect_openai_error(client.Post("/v1/completions", key, body, "application/json"), 503, "unavailable_error",
                      "loading the model");
  for (const char* route : {"/metrics", "/v1/models"})
    expect_openai_error(client.Get(route, key), 503, "unavailable_error", "loading the model");
}

TEST(ServeRoutes, WithoutAKeyEveryRouteSaysLoading) {
  LoadingServer server("");
  httplib::Client client("127.0.0.1", server.port());
  expect_openai_error(client.Post("/tokenize", R"({"content":"x"})", "application/json"), 503, "unavailable_error",
                      "loading the model");
  expect_openai_error(client.Get("/health"), 503, "unavailable_error", "loading the model");
}

}  // namespace
}  // namespace ordo::cli::serve
