// Reading the reference fixtures (golden.json + golden.safetensors) and comparing against them.
#include "support/golden.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace ordo::test {

std::string data_path(const std::string& relative) { return std::string(ORDO_TEST_DATA) + "/" + relative; }

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

double log_prob(const float* row, int64_t vocab, int32_t target) {
  double mx = row[0];
  for (int64_t v = 1; v < vocab; ++v) mx = std::max<double>(mx, row[v]);
  double z = 0;
  for (int64_t v = 0; v < vocab; ++v) z += std::exp(static_cast<double>(row[v]) - mx);
  return static_cast<double>(row[target]) - mx - std::log(z);
}

double sequence_logprob(const Model& m, const std::vector<int32_t>& ids, size_t from) {
  const ForwardOutput out = m.forward(ids);
  const int64_t V = out.logits.dim(1);
  double lp = 0;
  for (size_t t = from; t < ids.size(); ++t) lp += log_prob(out.logits.f32() + (t - 1) * V, V, ids[t]);
  return lp;
}

std::string model_dir(const std::string& fixture) {
  if (fixture == "stories260K") return std::string(ORDO_SOURCE_DIR) + "/models/stories260K";
  return data_path("fixtures/" + fixture);
}

Golden Golden::load(const std::string& fixture) {
  const std::string dir = data_path("fixtures/" + fixture);
  std::ifstream f(dir + "/golden.json");
  if (!f) throw Error(dir + "/golden.json: cannot open");
  Golden g{fixture, nlohmann::json::parse(f), SafeTensors::open(dir + "/golden.safetensors")};
  return g;
}

const nlohmann::json& Golden::case_json(const std::string& case_name) const {
  for (const auto& c : json.at("cases"))
    if (c.at("name") == case_name) return c;
  throw Error(name + ": no case '" + case_name + "'");
}

std::vector<int32_t> ids_of(const nlohmann::json& j) { return j.get<std::vector<int32_t>>(); }

::testing::AssertionResult within_tolerance(const float* got, const Tensor& golden, const std::vector<int64_t>& rows,
                                            double rel) {
  const int64_t n_rows = golden.ndim() >= 2 ? golden.numel() / golden.dim(-1) : 1;
  const int64_t width = golden.ndim() >= 1 ? golden.dim(-1) : 1;
  std::vector<int64_t> use = rows;
  if (use.empty())
    for (int64_t r = 0; r < n_rows; ++r) use.push_back(r);
  const float* ref = golden.f32();
  double max_ref = 0, max_err = 0;
  int64_t worst = -1;
  for (int64_t r : use)
    for (int64_t i = 0; i < width; ++i) max_ref = std::max(max_ref, std::fabs(static_cast<double>(ref[r * width + i])));
  for (int64_t r : use)
    for (int64_t i = 0; i < width; ++i) {
      const double e = std::fabs(static_cast<double>(got[r * width + i]) - ref[r * width + i]);
      if (!(e <= max_err)) {  // also catches NaN
        max_err = std::isnan(e) ? INFINITY : e;
        worst = r * width + i;
      }
    }
  const double tol = rel * std::max(1.0, max_ref);
  std::ostringstream os;
  os << "max |diff| " << max_err << " (tolerance " << tol << ", max |golden| " << max_ref << ")";
  if (max_err <= tol) return ::testing::AssertionSuccess() << os.str();
  os << " worst at flat index " << worst << ": got " << got[worst] << ", golden " << ref[worst];
  return ::testing::AssertionFailure() << os.str();
}

::testing::AssertionResult step_logits_match(const GenerateResult& r, const Tensor& golden) {
  if (static_cast<int64_t>(r.step_logits.size()) != golden.dim(0))
    return ::testing::AssertionFailure() << r.step_logits.size() << " steps, reference has " << golden.dim(0);
  std::vector<float> got;
  for (const Tensor& row : r.step_logits) got.insert(got.end(), row.f32(), row.f32() + row.numel());
  return within_tolerance(got.data(), golden);
}

int expect_forward_cases_match(const Model& model, const Golden& golden, size_t n_hidden) {
  int cases = 0;
  for (const auto& c : golden.json.at("cases")) {
    const std::string name = c.at("name");
    SCOPED_TRACE("case " + name);
    const ForwardOutput out = model.forward(ids_of(c.at("input_ids")), true);
    EXPECT_TRUE(within_tolerance(out.logits.f32(), golden.tensor(name + ".logits")));
    EXPECT_EQ(out.hidden.size(), n_hidden);
    for (size_t i = 0; i < std::min(n_hidden, out.hidden.size()); ++i) {
      SCOPED_TRACE("hidden_states." + std::to_string(i));
      EXPECT_TRUE(within_tolerance(out.hidden[i].f32(), golden.tensor(name + ".hidden_states." + std::to_string(i))));
    }
    ++cases;
  }
  return cases;
}

void expect_greedy_with_cache_matches(const Model& model, const Golden& golden, const nlohmann::json& test_case) {
  const nlohmann::json& g = test_case.at("greedy");
  GenerateParams p;
  p.max_new_tokens = g.at("max_new_tokens");
  p.stop_ids = {-1};  // the reference does not stop at EOS
  GenerateResult r = model.generate_ids(ids_of(g.at("input_ids")), p, nullptr, true);
  EXPECT_EQ(r.ids, ids_of(g.at("output_ids")));
  EXPECT_TRUE(step_logits_match(r, golden.tensor(test_case.at("name").get<std::string>() + ".greedy.logits")));
}

std::string fixture_param_name(const testing::TestParamInfo<FixtureParam>& p) {
  std::string s = p.param.fixture + "_" + backend_name(p.param.backend);
  for (char& c : s)
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  return s;
}

std::vector<FixtureParam> fixture_params(const std::vector<std::string>& fixtures) {
  std::vector<FixtureParam> ps;
  for (const auto& f : fixtures)
    for (Backend b : {Backend::OpenBLAS, Backend::OneDNN}) ps.push_back({f, b});
  return ps;
}

void FixtureTest::SetUp() {
  golden_ = std::make_unique<Golden>(Golden::load(GetParam().fixture));
  ModelOptions o;
  o.backend = GetParam().backend;
  o.load_tokenizer = false;
  model_ = std::make_unique<Model>(Model::load(model_dir(GetParam().fixture), o));
}

}  // namespace ordo::test
