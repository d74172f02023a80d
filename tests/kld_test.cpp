// ordo::write_kld_base / compare_kld_base (ordo/kld.hpp): a model against its own base is at zero
// divergence, and a file that is not a base, a truncated one or another vocabulary is a named error.
// The figures themselves are held to numpy in python/tests/test_kld.py.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "ordo/finite.hpp"
#include "ordo/kld.hpp"
#include "ordo/ordo.hpp"
#include "support/cli.hpp"

namespace {

const std::string kStories = std::string(ORDO_SOURCE_DIR) + "/models/stories260K";

std::vector<int32_t> some_ids(const ordo::Model& m) {
  return m.encode(
      "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. "
      "One day, she saw a big red ball and ran to get it. Her mom smiled and said they could go home.",
      false);
}

std::string message(const std::function<void()>& f) {
  try {
    f();
  } catch (const ordo::Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A CLI run that must fail with `code` and a message holding `needle`.
void expect_refused(const std::string& args, int code, const std::string& needle) {
  const ordo::test::CliResult r = ordo::test::run_cli(args);
  EXPECT_EQ(r.exit_code, code) << args << "\n" << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << args << "\n" << r.err;
}

const std::string kText = std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt";

}  // namespace

TEST(Kld, AModelAgainstItsOwnBaseIsAtZero) {
  const ordo::Model m = ordo::Model::load(kStories);
  const std::string base = ordo::test::make_temp_dir("kld-self") + "/b.kld";
  const int64_t n = ordo::write_kld_base(m, some_ids(m), 16, 0, base);
  const ordo::KldStats s = ordo::compare_kld_base(m, base);
  EXPECT_EQ(s.tokens, n);
  EXPECT_EQ(s.ctx, 16);
  EXPECT_EQ(n, s.chunks * 7);  // rows 8..14 of each chunk of 16
  EXPECT_NEAR(s.kld, 0.0, 1e-6);
  EXPECT_NEAR(s.ppl_ratio(), 1.0, 1e-6);
  EXPECT_EQ(s.same_top, 1.0);
  EXPECT_GT(s.ppl_base, 1.0);
}

TEST(Kld, BadBasesAreNamedErrors) {
  const ordo::Model m = ordo::Model::load(kStories);
  const std::string d = ordo::test::make_temp_dir("kld-bad");
  { std::ofstream(d + "/text.kld") << "not a base"; }
  EXPECT_NE(message([&] { ordo::compare_kld_base(m, d + "/text.kld"); }).find("not an ordo KL divergence base"),
            std::string::npos);
  const std::string base = d + "/b.kld";
  ordo::write_kld_base(m, some_ids(m), 16, 2, base);
  std::filesystem::resize_file(base, std::filesystem::file_size(base) - 100);
  EXPECT_NE(message([&] { ordo::compare_kld_base(m, base); }).find("truncated"), std::string::npos);
  {  // a base of another model's vocabulary (100 entries): ctx 16, one chunk, 7 scored rows
    std::ofstream f(base, std::ios::binary | std::ios::trunc);
    const uint64_t head[3] = {16, 100, 1};
    f.write("ORDOKLD1", 8);
    f.write(reinterpret_cast<const char*>(head), sizeof head);
    const std::vector<int32_t> ids(16, 1);
    const std::vector<float> rows(7 * 100, -4.6f);
    f.write(reinterpret_cast<const char*>(ids.data()), 64);
    f.write(reinterpret_cast<const char*>(rows.data()), static_cast<std::streamsize>(rows.size() * 4));
  }
  EXPECT_NE(message([&] { ordo::compare_kld_base(m, base); }).find("vocabulary of 100"), std::string::npos);
  EXPECT_NE(message([&] {
              ordo::write_kld_base(m, {1, 2, 3}, 16, 0, base);
            }).find("fewer than one chunk"),
            std::string::npos);
}

TEST(Kld, CliWritesABaseAndScoresADtypeAgainstIt) {
  const std::string d = ordo::test::make_temp_dir("kld-cli");
  const std::string text = std::string(ORDO_TEST_DATA) + "/text/stories-sampled.txt";
  ordo::test::CliResult r =
      ordo::test::run_cli("ppl --text " + text + " --ctx-lengths 64 --chunks 2 --kld-base " + d + "/b.kld");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("log-probabilities of 62 tokens (ctx 64)"), std::string::npos) << r.out;
  r = ordo::test::run_cli("ppl --dtype bf16 --text " + text + " --kld-base " + d + "/b.kld --kld");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("chunks 2 of ctx 64, 62 tokens scored"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Mean KLD"), std::string::npos) << r.out;
  r = ordo::test::run_cli("ppl --text " + text + " --ctx-lengths 64,128 --kld-base " + d + "/c.kld");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("--kld-base takes one context length"), std::string::npos) << r.err;
  r = ordo::test::run_cli("ppl --text " + text + " --kld-base " + d + "/missing.kld --kld");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("missing.kld: cannot open"), std::string::npos) << r.err;
}

TEST(Kld, TheBaseSizeMustBeWhatItsHeaderSays) {
  const ordo::Model m = ordo::Model::load(kStories);
  const std::string d = ordo::test::make_temp_dir("kld-size");
  {  // a header claiming 2^24 chunks of 2^24 tokens over 2^24 entries, in a file of 32 bytes
    std::ofstream f(d + "/huge.kld", std::ios::binary);
    const uint64_t head[3] = {1u << 24, 1u << 24, 1u << 24};
    f.write("ORDOKLD1", 8);
    f.write(reinterpret_cast<const char*>(head), sizeof head);
  }
  const std::string huge = message([&] { ordo::compare_kld_base(m, d + "/huge.kld"); });
  EXPECT_NE(huge.find(d + "/huge.kld: truncated"), std::string::npos) << huge;
  const std::string base = d + "/b.kld";
  ordo::write_kld_base(m, some_ids(m), 16, 2, base);
  const uintmax_t size = std::filesystem::file_size(base);
  EXPECT_EQ(size, 32u + 2 * 16 * 4 + 2 * 7 * static_cast<uintmax_t>(m.spec().vocab_size) * 4);
  std::filesystem::resize_file(base, size + 4);
  const std::string longer = message([&] { ordo::compare_kld_base(m, base); });
  EXPECT_NE(longer.find(base + ": trailing bytes"), std::string::npos) << longer;
  std::filesystem::resize_file(base, 40);  // inside the token ids
  const std::string shorter = message([&] { ordo::compare_kld_base(m, base); });
  EXPECT_NE(shorter.find(base + ": truncated (token ids)"), std::string::npos) << shorter;
}

TEST(Kld, ANonFiniteDivergenceIsAnErrorNotZero) {
  const float half = std::log(0.5f), nan = std::numeric_limits<float>::quiet_NaN();
  const float p[2] = {half, half}, q[2] = {std::log(0.25f), std::log(0.75f)}, bad[2] = {nan, nan};
  EXPECT_NEAR(ordo::kl_divergence(p, q, 2, 0), 0.5 * std::log(2.0) + 0.5 * std::log(0.5 / 0.75), 1e-6);
  EXPECT_EQ(ordo::kl_divergence(p, p, 2, 0), 0.0);
  EXPECT_THROW(ordo::kl_divergence(p, bad, 2, 5), ordo::NonFiniteError);
  EXPECT_NE(message([&] { ordo::kl_divergence(p, bad, 2, 5); }).find("token position 5 is NaN"), std::string::npos);
  // Through a base file: a NaN log-probability in the first scored row (position 8 of chunk 0).
  const ordo::Model m = ordo::Model::load(kStories);
  const std::string base = ordo::test::make_temp_dir("kld-nan") + "/b.kld";
  ordo::write_kld_base(m, some_ids(m), 16, 1, base);
  {
    std::fstream f(base, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(32 + 16 * 4);
    f.write(reinterpret_cast<const char*>(&nan), 4);
  }
  EXPECT_THROW(ordo::compare_kld_base(m, base), ordo::NonFiniteError);
  EXPECT_NE(message([&] { ordo::compare_kld_base(m, base); }).find("token position 8 is NaN"), std::string::npos);
}

TEST(Kld, CliRefusesOutputsThatNameAnInput) {
  const std::string d = ordo::test::make_temp_dir("kld-inputs");
  const std::string text = d + "/t.txt", svg = d + "/t.svg", base = d + "/b.kld";
  std::filesystem::copy_file(kText, text);
  std::filesystem::copy_file(kText, svg);
  const std::string original = bytes_of(text);
  expect_refused("ppl --text " + text + " --ctx-lengths 64 --chunks 1 --kld-base " + text, 1,
                 text + ": is (a link to) the input file");
  EXPECT_EQ(bytes_of(text), original);
  expect_refused("ppl --text " + text + " --ctx-lengths 64 --json " + text, 1,
                 text + ": is (a link to) the input file");
  EXPECT_EQ(bytes_of(text), original);
  expect_refused("ppl --text " + svg + " --ctx-lengths 64 --plot " + svg, 1, svg + ": is (a link to) the input file");
  EXPECT_EQ(bytes_of(svg), original);
  ASSERT_EQ(ordo::test::run_cli("ppl --text " + text + " --ctx-lengths 64 --chunks 1 --kld-base " + base).exit_code, 0);
  const std::string reference = bytes_of(base);
  expect_refused("ppl --text " + text + " --kld-base " + base + " --kld --json " + base, 1,
                 base + ": is (a link to) the input file");
  EXPECT_EQ(bytes_of(base), reference);
}

TEST(Kld, CliRefusesFlagsTheKldRunWouldIgnore) {
  const std::string d = ordo::test::make_temp_dir("kld-flags");
  const std::string run = "ppl --text " + kText + " --kld-base " + d + "/b.kld ";
  for (const std::string flag :
       {"--position", "--scaling", "--factor", "--stride", "--original-max", "--batch-windows", "--batch", "--plot"}) {
    const std::string value = flag == "--position"  ? "rope"
                              : flag == "--scaling" ? "none"
                              : flag == "--plot"    ? d + "/p.svg"
                                                    : "2";
    expect_refused(run + flag + " " + value, 2, flag + " is not used with --kld-base");
    expect_refused(run + "--kld " + flag + " " + value, 2, flag + " is not used with --kld-base");
  }
  for (const std::string flag : {"--ctx-lengths", "--ctx", "--chunks"})
    expect_refused(run + "--kld " + flag + " 64", 2, flag + " is not used with --kld-base FILE --kld");
  expect_refused(run + "--json " + d + "/x.json", 2, "--json is not used with --kld-base FILE without --kld");
  expect_refused("ppl --text " + kText + " --kld", 2, "--kld needs --kld-base");
  expect_refused("ppl --text " + kText + " --chunks 2", 2, "--chunks needs --kld-base");
  expect_refused("sweep plan " + d + "/sweep ppl --text " + kText + " --kld-base " + d + "/b.kld", 2,
                 "--kld-base cannot run as a sweep");
  EXPECT_FALSE(std::filesystem::exists(d + "/b.kld"));
  EXPECT_FALSE(std::filesystem::exists(d + "/sweep"));
}

TEST(Kld, ABaseOfAnotherTextOrTokenizerIsRefusedNamingTheToken) {
  const ordo::Model m = ordo::Model::load(kStories);
  const std::string base = ordo::test::make_temp_dir("kld-text") + "/b.kld";
  const std::vector<int32_t> ids = some_ids(m);
  ordo::write_kld_base(m, ids, 16, 2, base);
  std::vector<int32_t> longer = ids;
  longer.push_back(ids[3]);  // a text that goes on past the base's chunks is the same text
  EXPECT_EQ(ordo::compare_kld_base(m, base, {}, &longer).tokens, 14);
  std::vector<int32_t> other = ids;
  other[21] = other[21] == 5 ? 6 : 5;  // another tokenizer's id for one token of chunk 1
  const std::string msg = message([&] { ordo::compare_kld_base(m, base, {}, &other); });
  EXPECT_NE(msg.find(base + ": token 21 of the text is id " + std::to_string(ids[21])), std::string::npos) << msg;
  EXPECT_NE(msg.find("another text or with another tokenizer"), std::string::npos) << msg;
  const std::vector<int32_t> shorter(ids.begin(), ids.begin() + 20);
  EXPECT_NE(message([&] { ordo::compare_kld_base(m, base, {}, &shorter); }).find("the text only 20"),
            std::string::npos);
  std::vector<int32_t> new_bos = ids;
  new_bos[16] = 7;  // a chunk's first id is BOS in the base: it is not compared
  EXPECT_EQ(ordo::compare_kld_base(m, base, {}, &new_bos).tokens, 14);
}

TEST(Kld, CliRefusesABaseMadeFromAnotherText) {
  const std::string d = ordo::test::make_temp_dir("kld-cli-text");
  {
    std::ofstream f(d + "/other.txt");
    f << "The cat sat on the mat and the dog sat on the log, and then they both went to sleep in the sun. "
         "The next morning the cat woke up first and ran to the garden to see the birds and the flowers.";
  }
  ordo::test::CliResult r =
      ordo::test::run_cli("ppl --text " + kText + " --ctx-lengths 32 --chunks 1 --kld-base " + d + "/b.kld");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  expect_refused("ppl --text " + d + "/other.txt --kld-base " + d + "/b.kld --kld", 1,
                 d + "/b.kld: token 1 of the text is id");
}
