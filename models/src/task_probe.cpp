// The synthetic-task probe behind `ordo compare --tasks synthetic`: exact-match accuracy of greedy
// decoding per (task, length), as in Kazemnejad et al. 2023.
#include <algorithm>
#include <limits>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "jsonl.hpp"
#include "ordo/probes.hpp"

namespace ordo::probes {
namespace {

struct EncodedItem {
  std::vector<int32_t> prompt, target;
};

// The items of one (task, length) point, as indices into the suite.
struct PointItems {
  TaskPoint point;
  std::vector<size_t> items;
};

std::vector<PointItems> group_points(const std::vector<TaskItem>& suite) {
  std::vector<PointItems> groups;
  std::map<std::pair<std::string, int64_t>, size_t> index;
  for (size_t i = 0; i < suite.size(); ++i) {
    const auto key = std::make_pair(suite[i].task, suite[i].length);
    auto it = index.find(key);
    if (it == index.end()) {
      it = index.emplace(key, groups.size()).first;
      groups.emplace_back();
      groups.back().point.task = key.first;
      groups.back().point.length = key.second;
    }
    groups[it->second].items.push_back(i);
  }
  return groups;
}

// Restores the model's position settings however the probe ends.
struct PositionRestore {
  Transformer& e;
  PositionConfig saved;
  ~PositionRestore() {
    try {
      e.set_position(saved);
    } catch (const Error&) {  // the settings the model was loaded with cannot fail to apply
    }
  }
};

// Greedy decoding of every item of `g` (up to max_batch at a time); fills the point's counts.
void run_point(const Model& m, const std::vector<EncodedItem>& enc, const TaskRunOptions& opts, PointItems& g) {
  TaskPoint& pt = g.point;
  const std::vector<int32_t>& eos = m.spec().eos_ids;
  auto is_eos = [&](int32_t id) { return std::find(eos.begin(), eos.end(), id) != eos.end(); };
  std::vector<std::vector<int32_t>> prompts;
  std::vector<size_t> limit, produced(g.items.size(), 0);
  for (size_t i : g.items) {
    prompts.push_back(enc[i].prompt);
    limit.push_back(enc[i].target.size() + 1);
  }
  GenerateParams p;
  p.max_new_tokens = static_cast<int>(*std::max_element(limit.begin(), limit.end()));
  p.stop_ids = eos;
  size_t done = 0;
  // Each item stops at its own budget, len(target) + 1 tokens, or at end of sequence.
  const std::vector<GenerateResult> res = m.generate_ids_batch(prompts, p, opts.max_batch, [&](size_t k, int32_t id) {
    const bool finished = is_eos(id) || ++produced[k] == limit[k];
    if (finished && opts.progress) opts.progress(pt, ++done);
    return !finished;
  });
  for (size_t k = 0; k < g.items.size(); ++k) {
    // The target, then any EOS id.
    const std::vector<int32_t>& want = enc[g.items[k]].target;
    const std::vector<int32_t>& got = res[k].ids;
    const bool ok =
        got.size() == want.size() + 1 && std::equal(want.begin(), want.end(), got.begin()) && is_eos(got.back());
    pt.item_correct.push_back(ok ? 1 : 0);
    pt.correct += ok;
  }
  pt.accuracy = static_cast<double>(pt.correct) / static_cast<double>(pt.items);
}

}  // namespace

std::vector<TaskItem> parse_task_suite(const std::string& jsonl, const std::string& origin) {
  std::vector<TaskItem> out;
  const char* expected = "{\"task\": \"...\", \"length\": n, \"prompt\": \"...\", \"target\": \"...\"}";
  for_each_jsonl_line(jsonl, origin, expected, [&](const nlohmann::json& j, const std::string& where) {
    TaskItem item;
    item.task = j.at("task").get<std::string>();
    const nlohmann::json& len = j.at("length");
    if (!len.is_number_integer()) throw Error(where + "\"length\" must be an integer, got " + len.dump());
    item.length = len.get<int64_t>();
    item.prompt = j.at("prompt").get<std::string>();
    item.target = j.at("target").get<std::string>();
    if (item.task.empty()) throw Error(where + "\"task\" is empty");
    if (item.length < 1) throw Error(where + "\"length\" must be positive, got " + std::to_string(item.length));
    if (item.prompt.empty()) throw Error(where + "\"prompt\" is empty");
    out.push_back(std::move(item));
  });
  if (out.empty()) throw Error(origin + ": no task items");
  return out;
}

std::vector<TaskPoint> synthetic_tasks(Model& m, const std::vector<TaskItem>& suite, const LengthMethod& method,
                                       int64_t trained, const TaskRunOptions& opts) {
  if (m.spec().eos_ids.empty()) throw Error(m.dir() + ": the model has no end-of-sequence id to end an answer");
  if (trained < 1) throw Error("synthetic tasks: trained length must be positive, got " + std::to_string(trained));
  std::vector<EncodedItem> enc;
  const int32_t unk = m.tokenizer().unk_id();
  for (size_t i = 0; i < suite.size(); ++i) {
    enc.push_back({m.encode(suite[i].prompt, true), m.encode(suite[i].target, false)});
    for (const std::vector<int32_t>* ids : {&enc.back().prompt, &enc.back().target})
      if (unk >= 0 && std::find(ids->begin(), ids->end(), unk) != ids->end())
        throw Error(m.dir() + ": task item " + std::to_string(i + 1) + " (" + suite[i].task + " at length " +
                    std::to_string(suite[i].length) + ") has a word the model's vocabulary lacks");
  }
  Transformer& eng = m.engine();
  const PositionRestore restore{eng, eng.spec().position};
  std::vector<TaskPoint> points;
  for (PointItems& g : group_points(suite)) {
    TaskPoint& pt = g.point;
    pt.items = static_cast<int64_t>(g.items.size());
    for (size_t i : g.items)
      pt.longest = std::max<int64_t>(pt.longest, static_cast<int64_t>(enc[i].prompt.size() + enc[i].target.size() + 1));
    if (method.type != ScalingType::None) {
      pt.factor = opts.factor ? opts.factor(pt) : static_cast<double>(pt.longest) / static_cast<double>(trained);
      if (!(pt.factor > 1)) continue;  // within the trained length: the unscaled point
    }
    try {
      PositionConfig pc = restore.saved;
      pc.scaling = Scaling{};
      pc.scaling.type = method.type;
      if (method.type != ScalingType::None) pc.scaling.factor = pt.factor;
      eng.set_position(pc);
      // Every item must fit whole (bos, prompt, target, end), as in training: a model that stops
      // early must not score a point its table cannot hold.
      eng.decoder_scheme().check_positions(pt.longest - 1);
      run_point(m, enc, opts, g);
    } catch (const Error& err) {  // e.g. items longer than a learned table
      pt.correct = 0;
      pt.item_correct.clear();
      pt.accuracy = std::numeric_limits<double>::quiet_NaN();
      pt.error = err.what();
    }
    points.push_back(std::move(pt));
  }
  return points;
}

}  // namespace ordo::probes
