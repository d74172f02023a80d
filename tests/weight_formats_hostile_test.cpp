// Hostile weight files: pickles that would run code under Python, broken or lying zip archives,
// tensors that reach past their storage, pickles built to exhaust memory or the stack, and shard
// indexes that point outside the directory or disagree with their shards. Each must be an
// ordo::Error naming the file and the entry, global, tensor or field; nothing is ever executed.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "ordo/ordo.hpp"
#include "ordo/weights.hpp"
#include "support/cli.hpp"
#include "support/errors.hpp"
#include "support/golden.hpp"
#include "support/torch_bytes.hpp"

namespace fs = std::filesystem;
using ordo::Error;
using ordo::Weights;
using namespace std::string_literals;

using ordo::test::error_of;
using ordo::test::expect_has;
using ordo::test::write_bytes;
using namespace ordo::test::torch_bytes;

namespace {

std::string checkpoint(const std::string& name) { return ordo::test::data_path("checkpoints/" + name); }

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

class HostileWeights : public testing::Test {
 protected:
  void SetUp() override { dir_ = ordo::test::make_temp_dir("hostile-weights"); }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& n) const { return dir_ + "/" + n; }
  // pytorch_model.bin holding `pickle` and the storages.
  std::string bin(const std::string& pickle, std::vector<ZipEntrySpec> storages = {{"archive/data/0", ""}}) {
    std::vector<ZipEntrySpec> e = {{"archive/data.pkl", pickle}};
    for (auto& s : storages) {
      if (s.data.empty()) s.data = floats({0, 1, 2, 3, 4, 5});
      e.push_back(s);
    }
    write_bytes(path("pytorch_model.bin"), make_zip(e).bytes);
    return path("pytorch_model.bin");
  }
  std::string open_error(const std::string& file) {
    return error_of([&] { Weights::open_file(file); });
  }
  std::string dir_;
};

// ---- pickles that run code under Python ----------------------------------------------------------

TEST_F(HostileWeights, PickleCallingOsSystemIsRefusedAndNothingRuns) {
  const std::string marker = "/tmp/pwned-by-a-hostile-pickle";  // what the pickles' command would write
  fs::remove(marker);
  const struct {
    const char* file;
    const char* global;
  } cases[] = {{"os_system.bin", "refuses global 'posix.system'"},
               {"os_system_proto4.bin", "refuses global 'posix.system'"},
               {"builtins_eval.bin", "refuses global '__builtin__.eval'"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.file);
    fs::copy_file(checkpoint(std::string("hostile/") + c.file), path("pytorch_model.bin"),
                  fs::copy_options::overwrite_existing);
    fs::copy_file(checkpoint("gpt2-bin/config.json"), path("config.json"), fs::copy_options::overwrite_existing);
    const std::string e = error_of([&] {
      ordo::ModelOptions o;
      o.load_tokenizer = false;
      ordo::Model::load(dir_, o);
    });
    expect_has(e, {"pytorch_model.bin", "data.pkl", c.global, "never executes a pickle"});
    EXPECT_FALSE(fs::exists(marker));
  }
  // Any module/name outside the allow-list, e.g. a lookalike of the allowed ones.
  expect_has(open_error(bin("\x80\x02"
                            "ctorch._utils\n_rebuild_tensor_v3\n)R.")),
             {"refuses global 'torch._utils._rebuild_tensor_v3'"});
  expect_has(open_error(bin("\x80\x02"
                            "ctorch\nload\n)R.")),
             {"refuses global 'torch.load'"});
}

// ---- tensors against their storage ---------------------------------------------------------------

TEST_F(HostileWeights, StridesAndOffsetsAreHonoured) {
  // w: a transposed view [3, 2] of storage 0..5 (copied contiguous); b: offset 2, shape [3].
  PT w{"w"}, b{"b"};
  w.shape = {3, 2}, w.stride = {1, 3};
  b.offset = 2, b.shape = {3}, b.stride = {1};
  const Weights ws = Weights::open_file(bin(state_dict({w, b})));
  const float* wt = ws.get("w").f32();
  EXPECT_EQ(std::vector<float>(wt, wt + 6), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  const float* bt = ws.get("b").f32();
  EXPECT_EQ(std::vector<float>(bt, bt + 3), (std::vector<float>{2, 3, 4}));
}

TEST_F(HostileWeights, StorageMissingOrTooSmallIsNamed) {
  PT t{"w"};
  t.key = "7";
  expect_has(open_error(bin(state_dict({t}))),
             {"pytorch_model.bin: tensor 'w': its storage 'archive/data/7' is not in the archive"});
  t = PT{"w"};
  t.numel = 8;  // the pickle claims more elements than the entry's 24 bytes
  expect_has(open_error(bin(state_dict({t}))),
             {"tensor 'w': storage 'archive/data/0' holds 24 bytes, fewer than the 8 FloatStorage elements"});
  t = PT{"w"};
  t.shape = {3, 3};  // 9 elements from a storage of 6
  expect_has(open_error(bin(state_dict({t}))), {"tensor 'w': shape [3, 3], stride [3, 1], offset 0 reaches past"});
  t = PT{"w"};
  t.offset = 1;  // one past the end at the last element
  expect_has(open_error(bin(state_dict({t}))), {"tensor 'w'", "offset 1 reaches past its storage"});
  t = PT{"w"};
  t.stride = {0x7fffffff, 0x7fffffff};
  t.shape = {0x7fffffff, 0x7fffffff};
  expect_has(open_error(bin(state_dict({t}))), {"tensor 'w'", "reaches past its storage"});
  t = PT{"w"};
  t.shape = {2, 3}, t.stride = {0, 1};  // an expanded view would repeat elements
  t.numel = 3;
  expect_has(open_error(bin(state_dict({t}))), {"tensor 'w'", "repeats elements"});
  t = PT{"w"};
  t.storage_type = "DoubleStorage";
  t.numel = 3, t.shape = {3}, t.stride = {1};
  const Weights w = Weights::open_file(bin(state_dict({t})));  // only reading it is an error
  expect_has(error_of([&] { w.get("w"); }), {"tensor 'w': unsupported dtype (torch.DoubleStorage)"});
  t = PT{"w"};
  PT u{"u"};
  u.storage_type = "HalfStorage";  // the same storage under two types
  expect_has(open_error(bin(state_dict({t, u}))), {"storage '0' is named with two different types or sizes"});
}

// ---- the zip container ---------------------------------------------------------------------------

TEST_F(HostileWeights, BrokenZipIsNamed) {
  const std::string good = slurp(checkpoint("gpt2-bin/pytorch_model.bin"));
  const std::string f = path("pytorch_model.bin");
  write_bytes(f, good.substr(0, good.size() / 2));
  expect_has(open_error(f), {"pytorch_model.bin: no end-of-central-directory record"});
  write_bytes(f, good.substr(0, good.size() - 10));
  expect_has(open_error(f), {"pytorch_model.bin: no end-of-central-directory record"});
  write_bytes(f, "PK");
  expect_has(open_error(f), {"too short for a zip archive"});
  write_bytes(f, std::string("\x80\x02\x8a\x0a", 4) + std::string(64, '\0'));
  expect_has(open_error(f), {"legacy (torch < 1.6) checkpoint"});

  const std::vector<ZipEntrySpec> entries = {{"archive/data.pkl", state_dict({PT{"w"}})},
                                             {"archive/data/0", floats({0, 1, 2, 3, 4, 5})}};
  Zip z = make_zip(entries);
  std::string b = z.bytes;
  set32(b, z.eocd + 16, 0x7ffffff0);  // central directory offset past the end
  write_bytes(f, b);
  expect_has(open_error(f), {"central directory [2147483632", "lies outside the file"});
  b = z.bytes;
  set32(b, z.eocd + 12, 0xffff);  // central directory size past the end
  write_bytes(f, b);
  expect_has(open_error(f), {"lies outside the file"});
  b = z.bytes;
  set32(b, z.central[1] + 20, 1000), set32(b, z.central[1] + 24, 1000);  // entry size past its data
  write_bytes(f, b);
  expect_has(open_error(f), {"entry 'archive/data/0': data", "runs past"});
  b = z.bytes;
  set32(b, z.central[1] + 20, 12);  // stored, but compressed size != size
  write_bytes(f, b);
  expect_has(open_error(f), {"stored entry 'archive/data/0' has compressed size 12 but size 24"});
  b = z.bytes;
  set32(b, z.central[1] + 42, z.local[0]);  // points at another entry's local header
  write_bytes(f, b);
  expect_has(open_error(f), {"entry 'archive/data/0': its local header names another entry"});
  b = z.bytes;
  set32(b, z.central[1] + 42, 0x7fffff00);  // outside the file
  write_bytes(f, b);
  expect_has(open_error(f), {"entry 'archive/data/0': local header offset 2147483392 does not point"});
  b = z.bytes;
  b[z.eocd + 10] = char(200);  // more entries than the directory can hold
  write_bytes(f, b);
  expect_has(open_error(f), {"cannot hold the 200 entries"});

  // ZIP64 records (torch's writer past 4 GiB): read, and checked like the rest.
  z = make_zip(entries, true);
  write_bytes(f, z.bytes);
  const Weights w64 = Weights::open_file(f);
  const float* w = w64.get("w").f32();
  EXPECT_EQ(std::vector<float>(w, w + 6), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  b = z.bytes;
  set32(b, z.zip64_locator + 8, 0x40);  // locator pointing into the data
  write_bytes(f, b);
  expect_has(open_error(f), {"ZIP64 end-of-central-directory offset 64 does not point at a ZIP64 record"});
  b = z.bytes;
  b.erase(z.zip64_locator, 20);  // the EOCD says ZIP64, no locator
  write_bytes(f, b);
  expect_has(open_error(f), {"says ZIP64 but there is no ZIP64 locator"});
  b = z.bytes;
  set32(b, z.central[1] + 30, 0);  // sizes of all ones without the extra field that replaces them
  write_bytes(f, b);
  expect_has(open_error(f), {"entry 'archive/data/0'"});

  std::vector<ZipEntrySpec> compressed = entries;
  compressed[1].method = 8;
  write_bytes(f, make_zip(compressed).bytes);
  expect_has(open_error(f), {"entry 'archive/data/0' is compressed (method 8)"});
  write_bytes(f, make_zip({entries[1]}).bytes);
  expect_has(open_error(f), {"no '<archive>/data.pkl' entry"});
  write_bytes(f, make_zip({entries[0], entries[1], entries[0]}).bytes);
  expect_has(open_error(f), {"entry 'archive/data.pkl' appears twice"});
  std::vector<ZipEntrySpec> big_endian = entries;
  big_endian.push_back({"archive/byteorder", "big"});
  write_bytes(f, make_zip(big_endian).bytes);
  expect_has(open_error(f), {"archive/byteorder says 'big'"});
}

// ---- the pickle machine --------------------------------------------------------------------------

TEST_F(HostileWeights, MalformedPicklesAreNamed) {
  auto err = [&](const std::string& pickle) { return open_error(bin(pickle)); };
  expect_has(err("\x80\x02}"), {"data.pkl: the pickle ends without STOP"});
  expect_has(err("\x80\x02"
                 "X\xff\xff\xff\x7f"),
             {"truncated"});
  expect_has(err("\x80\x02}(i"), {"unsupported pickle opcode 'i' 0x69"});
  expect_has(err("\x80\x02j\x05\x00\x00\x00."s), {"memo entry 5 read before it was written"});
  expect_has(err("\x80\x02t."), {"no MARK to pop to"});
  expect_has(err("\x80\x02(0R."), {"stack underflow"});
  expect_has(err("\x80\x02"
                 "N."),
             {"the pickle holds a None, not a state dict"});
  expect_has(err("\x80\x02}(" + str("w") + "Nu."), {"entry 'w' is a None, not a tensor"});
  expect_has(err("\x80\x02}(" + str("w") + "}u."), {"entry 'w' is a dict, not a tensor"});
  expect_has(err("\x80\x02\x8a\x09" + std::string(9, '\x01') + "."), {"LONG1 of 9 bytes"});
  expect_has(err("\x80\x02"
                 "ccollections\nOrderedDict\n(Nt"
                 "R."),
             {"collections.OrderedDict called with arguments"});
  expect_has(err("\x80\x02"
                 "ctorch\nFloatStorage\n)R."),
             {"'torch.FloatStorage', which is a type"});
  expect_has(err("\x80\x02"
                 "(" +
                 str("storage") +
                 "NNNNt"
                 "Q."),
             {"persistent id names no torch storage type"});
  // A dict placed in a tuple, then changed through the memo: refused (no cycles can form).
  expect_has(err("\x80\x02}q\x00\x85h\x00NNs."s), {"a dict is changed after being placed in another object"});
}

TEST_F(HostileWeights, PicklesBuiltToExhaustStackOrMemoryAreBounded) {
  // 100 nested tuples: the bound is 64.
  expect_has(open_error(bin("\x80\x02)" + std::string(100, '\x85') + ".")), {"nest more than 64 levels deep"});
  // Two million objects from two million bytes.
  expect_has(open_error(bin("\x80\x02" + std::string(2'000'000, 'N') + ".")), {"more than 1000000 objects"});
  // Pushes of one object, MARKs and memo entries.
  expect_has(open_error(bin("\x80\x02N" + std::string(9'000'000, '2') + ".")), {"stack pushes"});
  expect_has(open_error(bin("\x80\x02" + std::string(1'100'000, '(') + ".")), {"more than 1000000 open MARKs"});
  std::string memo = "\x80\x02N";
  for (uint32_t i = 0; i < 1'100'000; ++i) {
    memo += 'r';
    put32(memo, i);
  }
  expect_has(open_error(bin(memo + ".")), {"more than 1000000 memo entries"});
}

// ---- shard indexes -------------------------------------------------------------------------------

// ---- what the review of the merged loaders found ------------------------------------------------

TEST_F(HostileWeights, ListsPlacedInsideThemselvesAndHugeRanksAreRefused) {
  auto err = [&](const std::string& pickle) { return open_error(bin(pickle)); };
  // EMPTY_LIST, MEMOIZE as 0, BINGET 0, APPEND: the list inside itself, a cycle.
  expect_has(err("\x80\x02]q\x00h\x00"
                 "a."s),
             {"a list is placed inside itself"});
  PT t{"w"};
  t.shape.assign(33, 1);
  t.stride.assign(33, 1);
  t.numel = 1;
  expect_has(err(state_dict({t})), {"size has 33 dimensions, more than 32"});
}

// A safetensors header whose length's low bytes spell "PK" (19,280 = 0x4B50) is still safetensors.
TEST_F(HostileWeights, SafetensorsWhoseHeaderLengthSpellsPkLoads) {
  std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  header.resize(19280, ' ');
  std::string file(8, '\0');
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) file[static_cast<size_t>(i)] = static_cast<char>(n >> (8 * i) & 0xff);
  ASSERT_EQ(file.substr(0, 2), "PK");
  file += header + floats({1.5f, -2.0f});
  write_bytes(path("model.safetensors"), file);
  const Weights w = Weights::open_file(path("model.safetensors"));
  EXPECT_EQ(w.format(), "safetensors");
  const auto& t = w.get("w");
  EXPECT_EQ(t.f32()[0], 1.5f);
  EXPECT_EQ(t.f32()[1], -2.0f);
}

// A .bin none of whose tensors borrow its mapping (only an int64 buffer) still reports a mapping
// that stays mapped, so dropping its pages can never touch memory reused by another allocation.
TEST_F(HostileWeights, MappingsAreKeptWhileTheirSpansAreReported) {
  PT t{"position_ids"};
  t.storage_type = "LongStorage";
  t.shape = {3};
  t.stride = {1};
  t.numel = 3;
  const Weights w = Weights::open_file(bin(state_dict({t}), {{"archive/data/0", std::string(24, '\0')}}));
  EXPECT_TRUE(w.tensors().empty());
  ASSERT_EQ(w.unsupported().size(), 1u);
  ASSERT_EQ(w.mapped_files().size(), 1u);
  EXPECT_NE(w.mapped_files()[0].keep, nullptr);
  EXPECT_GT(w.mapped_files()[0].size, 0u);
}

class HostileIndex : public HostileWeights {
 protected:
  void SetUp() override {
    HostileWeights::SetUp();
    for (const auto& e : fs::directory_iterator(checkpoint("llama-safetensors-sharded")))
      fs::copy_file(e.path(), path(e.path().filename().string()));
    index_ = slurp(path("model.safetensors.index.json"));
  }
  // The index with `from` (present) replaced by `to`; the load error.
  std::string error_with(const std::string& from, const std::string& to) {
    std::string s = index_;
    const size_t at = s.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    if (at != std::string::npos) s.replace(at, from.size(), to);
    write_bytes(path("model.safetensors.index.json"), s);
    return error_of([&] { Weights::open_dir(dir_); });
  }
  std::string index_;
};

TEST_F(HostileIndex, ShardsOutsideTheDirectoryAreRefused) {
  const std::string norm = "\"model.norm.weight\": \"model-00002-of-00003.safetensors\"";
  for (const char* bad : {"../model-00002-of-00003.safetensors", "/etc/passwd", "sub/x.safetensors", "..", "."}) {
    SCOPED_TRACE(bad);
    expect_has(error_with(norm, std::string("\"model.norm.weight\": \"") + bad + "\""),
               {"model.safetensors.index.json: weight_map['model.norm.weight']: shard '" + std::string(bad) +
                "' is not a file name in the index's directory"});
  }
}

TEST_F(HostileIndex, IndexDisagreeingWithShardsIsNamed) {
  const std::string norm = "\"model.norm.weight\": \"model-00002-of-00003.safetensors\"";
  expect_has(error_with(norm, "\"model.norm.weight\": \"model-00001-of-00003.safetensors\""),
             {"model.safetensors.index.json: weight_map puts tensor 'model.norm.weight' in "
              "'model-00001-of-00003.safetensors', but it is in 'model-00002-of-00003.safetensors'"});
  expect_has(error_with(norm, norm + ", \"bogus.weight\": \"model-00002-of-00003.safetensors\""),
             {"weight_map puts tensor 'bogus.weight' in 'model-00002-of-00003.safetensors', which does not "
              "hold it"});
  expect_has(error_with(norm, norm + ", \"model.norm.weight\": \"model-00002-of-00003.safetensors\""),
             {"field 'weight_map' lists tensor 'model.norm.weight' twice"});
  // A tensor in two shards: a fourth shard holding a copy of shard 3's tensors.
  fs::copy_file(path("model-00002-of-00003.safetensors"), path("extra.safetensors"));
  expect_has(error_with(norm, norm + ", \"extra\": \"extra.safetensors\""),
             {"model.safetensors.index.json: tensor '",
              "' is in two shards, 'extra.safetensors' and "
              "'model-00002-of-00003.safetensors'"});
  fs::remove(path("model-00002-of-00003.safetensors"));
  expect_has(error_with(norm, norm), {"model.safetensors.index.json: weight_map['",
                                      "names shard 'model-00002-of-00003.safetensors', which "
                                      "is missing from"});
}

TEST_F(HostileIndex, MalformedIndexIsNamed) {
  auto with = [&](const std::string& text) {
    write_bytes(path("model.safetensors.index.json"), text);
    return error_of([&] { Weights::open_dir(dir_); });
  };
  expect_has(with("{\"weight_map\": [1]}"), {"model.safetensors.index.json: field 'weight_map' must be an object"});
  expect_has(with("{\"weight_map\": {\"a\": 3}}"), {"weight_map['a'] must be a shard file name, got 3"});
  expect_has(with("{\"weight_map\": {}}"), {"field 'weight_map' is empty"});
  expect_has(with("{\"metadata\": {}}"), {"field 'weight_map' missing"});
  expect_has(with("[]"), {"must be a JSON object"});
  expect_has(with("{\"weight_map\": {\"a\": \"b\"}, \"weight_map\": {}}"), {"field 'weight_map' appears twice"});
  expect_has(with("{\"weight_map\": "), {"model.safetensors.index.json: malformed JSON"});
  expect_has(with(std::string(200, '[') + std::string(200, ']')), {"more than 128 levels deep"});
}

// Hugging Face's order: model.safetensors wins over an index and over pytorch_model.bin.
TEST_F(HostileWeights, SafetensorsIsPreferredAsHuggingFaceDoes) {
  fs::copy_file(checkpoint("gpt2-bin/pytorch_model.bin"), path("pytorch_model.bin"));
  EXPECT_EQ(Weights::open_dir(dir_).format(), "pytorch");
  fs::copy_file(ordo::test::model_dir("gpt2") + "/model.safetensors", path("model.safetensors"));
  EXPECT_EQ(Weights::open_dir(dir_).format(), "safetensors");
  EXPECT_EQ(Weights::open_dir(dir_).files(), std::vector<std::string>{path("model.safetensors")});
}

}  // namespace
