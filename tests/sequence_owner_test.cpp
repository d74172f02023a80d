// A Sequence belongs to the model that made it: decoding, batching, forking or attaching an encoder
// with any other model (same shapes, other shapes, one at a reused address) is an Error naming both.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "ordo/ordo.hpp"
#include "ordo/synthetic.hpp"
#include "support/golden.hpp"

namespace {

using ordo::Sequence;
using ordo::Transformer;

ordo::SyntheticShape tiny(int64_t layers = 2, int64_t kv_heads = 4) {
  ordo::SyntheticShape s;
  s.dim = 32;
  s.layers = layers;
  s.heads = 4;
  s.kv_heads = kv_heads;
  s.ffn = 64;
  s.vocab = 97;
  s.max_positions = 64;
  return s;
}

Transformer make(const ordo::SyntheticShape& s, uint64_t seed = 1) {
  return Transformer(ordo::synthetic_llama(s, ordo::DType::F32, seed));
}

// Runs f, which must throw ordo::Error; returns its message.
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const ordo::Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no ordo::Error thrown";
  return {};
}

void expect_names_both(const std::string& msg, const Transformer& maker, const Transformer& user) {
  EXPECT_NE(msg.find(maker.name()), std::string::npos) << msg;
  EXPECT_NE(msg.find(user.name()), std::string::npos) << msg;
  EXPECT_NE(maker.name(), user.name());
}

TEST(SequenceOwner, SameModelDecodes) {
  Transformer a = make(tiny());
  Sequence s = a.new_sequence(16);
  EXPECT_EQ(s.owner(), a.serial());
  EXPECT_EQ(a.decode(s, {1, 2, 3}).logits.dim(0), 3);
  EXPECT_EQ(s.length(), 3);
}

TEST(SequenceOwner, CompatibleShapesRefused) {
  // Same shapes, different weights: the cache would be accepted silently without the owner check.
  Transformer a = make(tiny(), 1), b = make(tiny(), 2);
  Sequence s = a.new_sequence(16);
  a.decode(s, {1, 2});
  const std::string msg = error_of([&] { b.decode(s, {3}); });
  expect_names_both(msg, a, b);
  EXPECT_EQ(s.length(), 2);                      // nothing appended
  EXPECT_EQ(a.decode(s, {3}).logits.dim(0), 1);  // still usable with its own model
  EXPECT_EQ(s.length(), 3);
}

TEST(SequenceOwner, DifferentShapesRefusedBeforeAnyWrite) {
  // More layers and KV heads than the cache holds: store_kv would write past its buffers (ASan).
  Transformer a = make(tiny(1, 1)), b = make(tiny(3, 4));
  Sequence s = a.new_sequence(4);
  const std::string msg = error_of([&] { b.decode(s, {1, 2, 3, 4, 5, 6, 7, 8}); });
  expect_names_both(msg, a, b);
  EXPECT_EQ(s.length(), 0);
}

TEST(SequenceOwner, DecodeBatchRefusesAForeignRequest) {
  Transformer a = make(tiny()), b = make(tiny());
  Sequence mine = b.new_sequence(16), foreign = a.new_sequence(16);
  std::vector<ordo::DecodeRequest> reqs(2);
  reqs[0].seq = &mine;
  reqs[0].ids = {1, 2};
  reqs[1].seq = &foreign;
  reqs[1].ids = {3};
  const std::string msg = error_of([&] { b.decode_batch(reqs); });
  expect_names_both(msg, a, b);
  EXPECT_NE(msg.find("request 1"), std::string::npos) << msg;
  EXPECT_EQ(mine.length(), 0);
  EXPECT_EQ(foreign.length(), 0);
}

TEST(SequenceOwner, ModelAtAReusedAddressRefused) {
  // A model destroyed and another built in the same storage: the address is the same, the serial
  // is not.
  std::optional<Transformer> slot;
  slot.emplace(make(tiny()));
  const Transformer* first = &*slot;
  const uint64_t first_serial = slot->serial();
  Sequence s = slot->new_sequence(16);
  slot->decode(s, {1});
  slot.reset();
  slot.emplace(make(tiny()));
  ASSERT_EQ(&*slot, first);
  EXPECT_NE(slot->serial(), first_serial);
  const std::string msg = error_of([&] { slot->decode(s, {2}); });
  EXPECT_NE(msg.find(slot->name()), std::string::npos) << msg;
  EXPECT_NE(msg.find("(model #" + std::to_string(first_serial) + ")"), std::string::npos) << msg;
  EXPECT_EQ(s.length(), 1);
}

TEST(SequenceOwner, DefaultConstructedRefused) {
  Transformer a = make(tiny());
  Sequence s;
  const std::string msg = error_of([&] { a.decode(s, {1}); });
  EXPECT_NE(msg.find("not made by a model"), std::string::npos) << msg;
  EXPECT_NE(msg.find(a.name()), std::string::npos) << msg;
}

TEST(SequenceOwner, CopyFromAnotherModelRefused) {
  Transformer a = make(tiny()), b = make(tiny());
  Sequence sa = a.new_sequence(16), sb = b.new_sequence(16);
  a.decode(sa, {1, 2, 3});
  const std::string msg = error_of([&] { sb.copy_from(sa); });
  expect_names_both(msg, a, b);
  EXPECT_EQ(sb.length(), 0);
  Sequence sa2 = a.new_sequence(16);
  sa2.copy_from(sa);  // same model: fine
  EXPECT_EQ(sa2.length(), 3);
}

TEST(SequenceOwner, LoadedModelsNamedByDirectory) {
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  const std::string dir = ordo::test::model_dir("llama");
  const ordo::Model a = ordo::Model::load(dir, o), b = ordo::Model::load(dir, o);
  EXPECT_EQ(a.engine().name().rfind(dir, 0), 0u) << a.engine().name();
  Sequence s = a.engine().new_sequence(8);
  const std::string msg = error_of([&] { b.engine().decode(s, {1, 2}); });
  expect_names_both(msg, a.engine(), b.engine());
}

TEST(SequenceOwner, AttachEncoderRefusesAForeignSequence) {
  ordo::ModelOptions o;
  o.load_tokenizer = false;
  const ordo::Model t5 = ordo::Model::load(ordo::test::model_dir("t5"), o);
  const ordo::Model t5b = ordo::Model::load(ordo::test::model_dir("t5"), o);
  const Transformer& a = t5.engine();
  const Transformer& b = t5b.engine();
  const ordo::Tensor enc = a.encode({1, 2, 3}, {}, {});
  Sequence s = a.new_sequence(8);
  expect_names_both(error_of([&] { b.attach_encoder(s, enc, {}); }), a, b);
  EXPECT_TRUE(s.cross.k.empty());
  a.attach_encoder(s, enc, {});
  EXPECT_EQ(s.cross.length, 3);
  // The encoder-decoder path refuses it too, after the encoder is attached.
  expect_names_both(error_of([&] { b.decode(s, {0}); }), a, b);
  EXPECT_EQ(s.length(), 0);
}

}  // namespace
