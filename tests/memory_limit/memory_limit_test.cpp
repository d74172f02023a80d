// Every `ordo` command under address-space limits (`ulimit -v`) from 100 MiB to 2 GiB: it works or
// exits 1 with ordo's own out-of-memory message; never a signal, a hang, or `std::bad_alloc` text.
// Fixed limits, and a few random ones per run (a property test: the seed is printed, and
// ORDO_MEMORY_LIMIT_SEED=N repeats a run).
//
// Its own binary, left out of sanitizer builds (tests/CMakeLists.txt): ASan and TSan reserve
// terabytes of address space for their shadow memory, so nothing starts under such a limit.
// Below about 125 MiB the dynamic loader cannot map ordo's libraries (oneDNN, OpenBLAS and ICU's
// data are ~110 MiB of address space): `ordo` is a launcher needing only libc that loads them with
// dlopen (tools/launcher), so that too is ordo's out-of-memory error.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;

const std::string kSource = ORDO_SOURCE_DIR;
const std::string kData = ORDO_TEST_DATA;
constexpr int kTimeoutSeconds = 60;  // a hang (OpenBLAS retrying an allocation) would never end

struct Outcome {
  bool exited = false, timed_out = false;
  int code = -1, signal = 0;
  std::string err;
};

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Runs ordo with `args` in a child whose address space is limited to `mib` MiB.
Outcome run_limited(int mib, const std::vector<std::string>& args, const std::string& work) {
  const std::string in = work + "/stdin", err = work + "/stderr";
  std::ofstream(in) << "Hello there\nTell me a story\n";
  std::vector<std::string> full{ORDO_CLI};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {  // only async-signal-safe calls until exec
    rlimit r{};
    r.rlim_cur = r.rlim_max = static_cast<rlim_t>(mib) << 20;
    if (setrlimit(RLIMIT_AS, &r) != 0) _exit(100);
    const int i = open(in.c_str(), O_RDONLY), o = open("/dev/null", O_WRONLY),
              e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (i < 0 || o < 0 || e < 0 || dup2(i, 0) < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(101);
    execv(argv[0], argv.data());
    _exit(102);
  }
  Outcome out;
  if (pid < 0) return out;
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kTimeoutSeconds);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > deadline) {
      out.timed_out = true;
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  out.exited = WIFEXITED(status);
  out.code = out.exited ? WEXITSTATUS(status) : -1;
  out.signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  out.err = read_text(err);
  return out;
}

// The commands, on the bundled model and three fixtures (a decoder, an encoder-decoder, an
// encoder); `work` holds their inputs and outputs.
std::vector<std::vector<std::string>> commands(const std::string& work) {
  const std::string fix = kData + "/fixtures/", bundled = kSource + "/models/stories260K";
  std::ofstream text(work + "/text.txt");
  for (int i = 0; i < 20; ++i) text << "Once upon a time there was a little girl. She liked to play in the park.\n";
  text.close();
  // A chat model: the bundled one with a chat template.
  const std::string chat = work + "/chat";
  fs::create_directories(chat);
  for (const char* f : {"config.json", "generation_config.json", "model.safetensors", "tokenizer.model"})
    fs::copy_file(bundled + "/" + f, chat + "/" + f, fs::copy_options::overwrite_existing);
  fs::copy_file(kData + "/chat/tokenizer_config.json", chat + "/tokenizer_config.json",
                fs::copy_options::overwrite_existing);
  return {
      {"run", "-p", "Once upon a time", "-n", "16", "--temp", "0", "-q"},
      {"run", "-p", "Once upon a time", "-n", "16", "--temp", "0", "-q", "--backend", "openblas"},
      {"tokenize", "hello world"},
      {"inspect"},
      {"forward", "--ids", "1,5,9,20", "-o", work + "/out.npy"},
      {"ppl", "--text", work + "/text.txt", "--ctx", "64,128"},
      {"embed", "hello there"},
      {"compare", "--quick", "--no-zoo", "-m", bundled, "--tasks", "word-order,length"},
      {"bench", "-m", bundled, "--quick"},
      {"quantize", "-m", bundled, "-o", work + "/quantized", "--dtype", "int8"},
      {"chat", "-m", chat, "-n", "8", "--temp", "0", "-q"},
      {"run", "-m", fix + "llama", "--ids", "1,5,9", "-n", "8", "--temp", "0", "-q"},
      {"run", "-m", fix + "t5", "--ids", "1,5,9", "-n", "8", "--temp", "0", "-q"},
      {"embed", "-m", fix + "bert", "--ids", "1,5,9"},
  };
}

std::string joined(const std::vector<std::string>& args) {
  std::string s = "ordo";
  for (const std::string& a : args) s += " " + a;
  return s;
}

void check_every_command(int mib) {
  std::string tmpl = testing::TempDir() + "memlimit-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
  const std::string work = tmpl;
  int worked = 0;
  for (const std::vector<std::string>& args : commands(work)) {
    fs::remove_all(work + "/quantized");
    const Outcome o = run_limited(mib, args, work);
    const std::string what = "ulimit -v " + std::to_string(mib) + " MiB: " + joined(args) + "\nstderr: " + o.err;
    EXPECT_FALSE(o.timed_out) << what;
    EXPECT_EQ(o.signal, 0) << what;
    EXPECT_TRUE(o.exited) << what;
    EXPECT_EQ(o.err.find("bad_alloc"), std::string::npos) << what;
    EXPECT_EQ(o.err.find("terminate"), std::string::npos) << what;
    if (o.code == 0) {
      ++worked;
      continue;
    }
    EXPECT_EQ(o.code, 1) << what;
    // ordo's own message: what it was allocating (or, for an allocation it does not check
    // itself, the command), and the hint.
    const bool named = o.err.find("ordo: error: out of memory allocating ") != std::string::npos ||
                       o.err.find("ordo: error: out of memory in `ordo ") != std::string::npos ||
                       o.err.find(": out of memory (ulimit -v?)") != std::string::npos ||
                       o.err.find("ordo: error: out of memory loading ordo's libraries (") != std::string::npos;
    EXPECT_TRUE(named) << what;
    EXPECT_NE(o.err.find("ulimit -v?)"), std::string::npos) << what;
  }
  // At 2 GiB every command works (the sweep is not passing by failing everywhere).
  if (mib >= 2000) {
    EXPECT_EQ(worked, static_cast<int>(commands(work).size()));
  }
  fs::remove_all(work);
}

class MemoryLimit : public testing::TestWithParam<int> {};

TEST_P(MemoryLimit, EveryCommandWorksOrNamesTheAllocation) { check_every_command(GetParam()); }

// 100 MiB: the launcher starts but the loader cannot map the libraries; 125-130: they load, and
// the model's first allocations fail; from ~300 on most commands work.
INSTANTIATE_TEST_SUITE_P(Sweep, MemoryLimit, testing::Values(100, 130, 150, 200, 300, 1000, 2000),
                         [](const testing::TestParamInfo<int>& p) { return std::to_string(p.param) + "MiB"; });

// The random limits: the test names stay fixed (ctest runs each by name), the limit is drawn when
// the test runs, log-uniformly over 100 MiB .. 2 GiB so the low range where allocations start to
// fail is sampled as densely as the high one.
class RandomMemoryLimit : public testing::TestWithParam<int> {};

TEST_P(RandomMemoryLimit, EveryCommandWorksOrNamesTheAllocation) {
  const char* given = std::getenv("ORDO_MEMORY_LIMIT_SEED");
  const unsigned seed =
      given && *given ? static_cast<unsigned>(std::strtoul(given, nullptr, 10)) : std::random_device{}();
  std::seed_seq mixed{seed, static_cast<unsigned>(GetParam())};
  std::mt19937 rng(mixed);
  const int mib =
      static_cast<int>(std::lround(100.0 * std::pow(20.0, std::uniform_real_distribution<double>(0, 1)(rng))));
  std::printf("memory-limit seed %u (repeat with ORDO_MEMORY_LIMIT_SEED=%u): ulimit -v %d MiB\n", seed, seed, mib);
  std::fflush(stdout);
  SCOPED_TRACE("ORDO_MEMORY_LIMIT_SEED=" + std::to_string(seed) + ", limit " + std::to_string(mib) + " MiB");
  ASSERT_GE(mib, 100);
  ASSERT_LE(mib, 2000);
  check_every_command(mib);
}

INSTANTIATE_TEST_SUITE_P(Property, RandomMemoryLimit, testing::Values(0, 1, 2, 3),
                         [](const testing::TestParamInfo<int>& p) { return "Random" + std::to_string(p.param); });

}  // namespace
