// The restricted unpickler of torch_pickle.hpp. Objects are built on a stack as pickle's own
// machine does, with three rules that keep hostile input harmless: only allow-listed globals
// exist (refused at the GLOBAL opcode, before anything could call them); containers nest at most
// kMaxDepth deep; a container already placed inside another cannot be changed (so no cycles, and
// the depth bound holds). Every object comes from at least one opcode byte, so memory is linear
// in the pickle's size.
#include "torch_pickle.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "pickle_objects.hpp"

namespace ordo {
namespace {

using namespace pickle;

constexpr int kMaxDepth = 64;
constexpr size_t kMaxGlobalName = 256;
constexpr size_t kMaxRank = 32;  // dimensions of one tensor
// Objects, memo entries and open MARKs a pickle may create: a 70B model's state dict needs about
// 20,000; the cap keeps a hostile pickle's memory in the low hundreds of MB.
constexpr size_t kMaxObjects = 1'000'000;

class Unpickler {
 public:
  Unpickler(const unsigned char* d, size_t n, const std::string& origin) : d_(d), n_(n), origin_(origin) {}

  Val run() {
    while (true) {
      if (pos_ >= n_) fail_at(n_, "the pickle ends without STOP (truncated?)");
      op_at_ = pos_;
      const unsigned char op = d_[pos_++];
      if (op == '.') return pop();  // STOP
      if (!container_op(op) && !value_op(op) && !memo_op(op) && !object_op(op)) unsupported(op);
    }
  }

  // MARK, the empty containers and the opcodes that fill them.
  bool container_op(unsigned char op) {
    switch (op) {
      case '(':
        if (marks_.size() >= kMaxObjects) fail("more than " + std::to_string(kMaxObjects) + " open MARKs");
        marks_.push_back(stack_.size());
        return true;
      case '}': push(make(Kind::Dict)); return true;
      case ']': push(make(Kind::List)); return true;
      case ')': push(make(Kind::Tuple)); return true;
      case 't': push(container(Kind::Tuple, pop_mark())); return true;
      case 'l': push(container(Kind::List, pop_mark())); return true;
      case 0x85:
      case 0x86:
      case 0x87: {  // TUPLE1..3
        std::vector<Val> items(op - 0x84);
        for (size_t i = items.size(); i-- > 0;) items[i] = pop();
        push(container(Kind::Tuple, std::move(items)));
        return true;
      }
      case 'd': {
        std::vector<Val> items = pop_mark();
        if (items.size() % 2) fail("DICT with an odd number of items");
        push(container(Kind::Dict, std::move(items)));
        return true;
      }
      case 's': {  // SETITEM
        Val v = pop(), k = pop();
        add_items(Kind::Dict, {k, v});
        return true;
      }
      case 'u': {  // SETITEMS
        std::vector<Val> items = pop_mark();
        if (items.size() % 2) fail("SETITEMS with an odd number of items");
        add_items(Kind::Dict, std::move(items));
        return true;
      }
      case 'a': {  // APPEND
        Val v = pop();
        add_items(Kind::List, {v});
        return true;
      }
      case 'e': add_items(Kind::List, pop_mark()); return true;  // APPENDS
      default: return false;
    }
  }

  // None, booleans, integers, floats and strings.
  bool value_op(unsigned char op) {
    switch (op) {
      case 'N': push(make(Kind::None)); return true;
      case 0x88:
      case 0x89: {  // NEWTRUE, NEWFALSE
        Val b = make(Kind::Bool);
        b->i = op == 0x88;
        push(b);
        return true;
      }
      case 'J': push_int(static_cast<int32_t>(read_le(4))); return true;  // BININT
      case 'K': push_int(static_cast<int64_t>(read_le(1))); return true;  // BININT1
      case 'M': push_int(static_cast<int64_t>(read_le(2))); return true;  // BININT2
      case 0x8a: {                                                        // LONG1
        const size_t len = *take(1);
        if (len > 8) fail("LONG1 of " + std::to_string(len) + " bytes (larger than 64 bits)");
        uint64_t u = len ? read_le(len) : 0;
        if (len && len < 8 && (u >> (8 * len - 1)) & 1) u |= ~uint64_t{0} << (8 * len);  // sign-extend
        push_int(static_cast<int64_t>(u));
        return true;
      }
      case 'G': {  // BINFLOAT, big-endian
        const unsigned char* p = take(8);
        uint64_t u = 0;
        for (int i = 0; i < 8; ++i) u = (u << 8) | p[i];
        Val f = make(Kind::Float);
        std::memcpy(&f->f, &u, 8);
        push(f);
        return true;
      }
      case 'X': push_str(read_le(4)); return true;   // BINUNICODE
      case 0x8c: push_str(read_le(1)); return true;  // SHORT_BINUNICODE
      case 0x8d: push_str(read_le(8)); return true;  // BINUNICODE8
      default: return false;
    }
  }

  // The memo and the stack: PUT, GET, POP, DUP.
  bool memo_op(unsigned char op) {
    switch (op) {
      case 'q': memo_put(read_le(1)); return true;     // BINPUT
      case 'r': memo_put(read_le(4)); return true;     // LONG_BINPUT
      case 0x94: memo_put(memo_.size()); return true;  // MEMOIZE
      case 'h': memo_get(read_le(1)); return true;     // BINGET
      case 'j': memo_get(read_le(4)); return true;     // LONG_BINGET
      case '0':                                        // POP (pops the mark when nothing is above it, as pickle does)
        if (!marks_.empty() && marks_.back() == stack_.size())
          marks_.pop_back();
        else
          pop();
        return true;
      case '1': pop_mark(); return true;   // POP_MARK
      case '2': push(top()); return true;  // DUP
      default: return false;
    }
  }

  // Protocol framing, globals, REDUCE, BUILD and persistent ids.
  bool object_op(unsigned char op) {
    switch (op) {
      case 0x80: {  // PROTO
        const unsigned v = *take(1);
        if (v < 2 || v > 5) fail("pickle protocol " + std::to_string(v) + " (torch.save writes 2 to 5)");
        return true;
      }
      case 0x95: take(8); return true;  // FRAME: a length hint only
      case 'c': {                       // GLOBAL "module\nname\n"
        const std::string module = read_line();
        const std::string name = read_line();
        push(global(module, name));
        return true;
      }
      case 0x93: {  // STACK_GLOBAL
        Val name = pop(), module = pop();
        if (module->kind != Kind::Str || name->kind != Kind::Str) fail("STACK_GLOBAL needs two strings");
        push(global(module->s, name->s));
        return true;
      }
      case 'R': reduce(); return true;
      case 'b': {  // BUILD: only the state of a dict (a state dict's _metadata), which is dropped
        Val state = pop();
        (void)state;
        Val& target = top();
        if (target->kind != Kind::Dict)
          fail(std::string("BUILD on a ") + kind_name(target->kind) + " (only a state dict's metadata is expected)");
        return true;
      }
      case 'Q': push(persistent(pop())); return true;  // BINPERSID
      default: return false;
    }
  }

  [[noreturn]] void unsupported(unsigned char op) const {
    static const char* hex = "0123456789abcdef";
    std::string shown = op >= 0x20 && op < 0x7f ? "'" + std::string(1, static_cast<char>(op)) + "' " : "";
    fail("unsupported pickle opcode " + shown + "0x" + hex[op >> 4] + hex[op & 15] +
         " (a state dict saved by torch.save uses none)");
  }

 private:
  const unsigned char* d_;
  size_t n_, pos_ = 0, op_at_ = 0;
  std::string origin_;
  std::vector<Val> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Val> memo_;
  std::map<std::string, std::shared_ptr<const PickledStorage>> storages_;
  size_t objects_ = 0, pushes_ = 0;

  [[noreturn]] void fail_at(size_t at, const std::string& msg) const {
    throw Error(origin_ + ": " + msg + " (pickle byte " + std::to_string(at) + ")");
  }
  [[noreturn]] void fail(const std::string& msg) const { fail_at(op_at_, msg); }

  const unsigned char* take(uint64_t k) {
    if (k > n_ - pos_) fail("truncated: the opcode needs " + std::to_string(k) + " more bytes than the pickle has");
    const unsigned char* p = d_ + pos_;
    pos_ += static_cast<size_t>(k);
    return p;
  }
  uint64_t read_le(size_t k) {
    const unsigned char* p = take(k);
    uint64_t v = 0;
    for (size_t i = k; i-- > 0;) v = (v << 8) | p[i];
    return v;
  }
  std::string read_line() {
    const size_t start = pos_;
    const void* nl = std::memchr(d_ + pos_, '\n', std::min(n_ - pos_, kMaxGlobalName + 1));
    if (!nl) fail("GLOBAL name without a newline within " + std::to_string(kMaxGlobalName) + " bytes");
    pos_ = static_cast<size_t>(static_cast<const unsigned char*>(nl) - d_) + 1;
    return std::string(reinterpret_cast<const char*>(d_ + start), pos_ - 1 - start);
  }

  Val make(Kind k) {
    if (++objects_ > kMaxObjects) fail("more than " + std::to_string(kMaxObjects) + " objects (not a state dict)");
    return std::make_shared<Obj>(k);
  }
  void push(Val v) {
    if (++pushes_ > 8 * kMaxObjects)
      fail("more than " + std::to_string(8 * kMaxObjects) + " stack pushes (not a state dict)");
    stack_.push_back(std::move(v));
  }
  void push_int(int64_t v) {
    Val o = make(Kind::Int);
    o->i = v;
    push(o);
  }
  void push_str(uint64_t len) {
    const unsigned char* p = take(len);
    Val o = make(Kind::Str);
    o->s.assign(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
    push(o);
  }
  size_t fence() const { return marks_.empty() ? 0 : marks_.back(); }
  Val pop() {
    if (stack_.size() <= fence()) fail("pickle stack underflow");
    Val v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  Val& top() {
    if (stack_.size() <= fence()) fail("pickle stack underflow");
    return stack_.back();
  }
  std::vector<Val> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    const size_t k = marks_.back();
    marks_.pop_back();
    std::vector<Val> items(std::make_move_iterator(stack_.begin() + static_cast<std::ptrdiff_t>(k)),
                           std::make_move_iterator(stack_.end()));
    stack_.resize(k);
    return items;
  }

  // Places `items` inside `c`, freezing them and keeping the depth bound.
  void adopt(Obj& c, std::vector<Val>&& items) {
    for (Val& v : items) {
      if (v->depth + 1 > c.depth) c.depth = v->depth + 1;
      v->contained = true;
    }
    if (c.depth > kMaxDepth) fail("containers nest more than " + std::to_string(kMaxDepth) + " levels deep");
    c.items.insert(c.items.end(), std::make_move_iterator(items.begin()), std::make_move_iterator(items.end()));
  }
  Val container(Kind k, std::vector<Val>&& items) {
    Val c = make(k);
    adopt(*c, std::move(items));
    return c;
  }
  void add_items(Kind k, std::vector<Val>&& items) {
    Val& target = top();
    if (target->kind != k)
      fail(std::string(k == Kind::Dict ? "SETITEM(S)" : "APPEND(S)") + " on a " + kind_name(target->kind));
    if (target->contained) fail(std::string("a ") + kind_name(k) + " is changed after being placed in another object");
    for (const Val& v : items)
      if (v.get() == target.get()) fail(std::string("a ") + kind_name(k) + " is placed inside itself");
    adopt(*target, std::move(items));
  }

  void memo_put(uint64_t idx) {
    Val& v = top();
    if (memo_.size() >= kMaxObjects && !memo_.count(idx))
      fail("more than " + std::to_string(kMaxObjects) + " memo entries");
    memo_[idx] = v;
  }
  void memo_get(uint64_t idx) {
    auto it = memo_.find(idx);
    if (it == memo_.end()) fail("memo entry " + std::to_string(idx) + " read before it was written");
    push(it->second);
  }

  Val global(const std::string& module, const std::string& name) {
    const std::string full = module + "." + name;
    if (full != kOrderedDict && full != kRebuildTensor && full != kRebuildParameter &&
        full != kRebuildParameterWithState && !storage_type(full))
      fail("refuses global '" + printable(full) +
           "': a checkpoint may only rebuild tensors (collections.OrderedDict, "
           "torch._utils._rebuild_tensor_v2, "
           "torch._utils._rebuild_parameter, torch.*Storage); ordo never executes a pickle");
    Val g = make(Kind::Global);
    g->s = full;
    return g;
  }

  static bool is_int(const Val& v) { return v->kind == Kind::Int; }
  std::vector<int64_t> int_tuple(const Val& v, const char* what) {
    if (v->kind != Kind::Tuple) fail(std::string(what) + " must be a tuple of ints, got a " + kind_name(v->kind));
    // A real tensor has a handful of dimensions; a million of them, copied per dict key, would be
    // a pickle of a few MB asking for terabytes.
    if (v->items.size() > kMaxRank)
      fail(std::string(what) + " has " + std::to_string(v->items.size()) + " dimensions, more than " +
           std::to_string(kMaxRank));
    std::vector<int64_t> out;
    for (const Val& x : v->items) {
      if (!is_int(x) || x->i < 0) fail(std::string(what) + " must hold non-negative ints");
      out.push_back(x->i);
    }
    return out;
  }

  Val persistent(const Val& pid) {
    if (pid->kind != Kind::Tuple || pid->items.size() != 5 || pid->items[0]->kind != Kind::Str ||
        pid->items[0]->s != "storage")
      fail("persistent id must be ('storage', type, key, location, numel)");
    const Val& type = pid->items[1];
    const StorageType* st = type->kind == Kind::Global ? storage_type(type->s) : nullptr;
    if (!st) fail("persistent id names no torch storage type");
    if (pid->items[2]->kind != Kind::Str) fail("persistent id: storage key must be a string");
    if (!is_int(pid->items[4]) || pid->items[4]->i < 0) fail("persistent id: numel must be a non-negative int");
    const std::string& key = pid->items[2]->s;
    auto it = storages_.find(key);
    if (it != storages_.end()) {
      if (it->second->type != type->s.substr(6) || it->second->numel != pid->items[4]->i)
        fail("storage '" + printable(key) + "' is named with two different types or sizes");
    } else {
      auto s = std::make_shared<PickledStorage>();
      s->type = type->s.substr(6);
      s->supported = st->supported;
      s->dtype = st->dtype;
      s->element_size = st->size;
      s->key = key;
      s->numel = pid->items[4]->i;
      it = storages_.emplace(key, std::move(s)).first;
    }
    Val o = make(Kind::Storage);
    o->storage = it->second;
    return o;
  }

  void reduce() {
    Val args = pop(), fn = pop();
    if (fn->kind != Kind::Global) fail(std::string("REDUCE calls a ") + kind_name(fn->kind) + ", not a global");
    if (args->kind != Kind::Tuple) fail("REDUCE of '" + fn->s + "' with arguments that are not a tuple");
    const std::vector<Val>& a = args->items;
    if (fn->s == kOrderedDict) {
      if (!a.empty()) fail("collections.OrderedDict called with arguments");
      push(make(Kind::Dict));
    } else if (fn->s == kRebuildTensor) {
      if (a.size() < 6 || a.size() > 7)
        fail("_rebuild_tensor_v2 takes 6 or 7 arguments, got " + std::to_string(a.size()));
      if (a[0]->kind != Kind::Storage) fail("_rebuild_tensor_v2: argument 1 must be a storage");
      if (!is_int(a[1]) || a[1]->i < 0) fail("_rebuild_tensor_v2: storage offset must be a non-negative int");
      Val t = make(Kind::Tensor);
      t->tensor.storage = a[0]->storage;
      t->tensor.offset = a[1]->i;
      t->tensor.shape = int_tuple(a[2], "_rebuild_tensor_v2: size");
      t->tensor.stride = int_tuple(a[3], "_rebuild_tensor_v2: stride");
      if (t->tensor.shape.size() != t->tensor.stride.size())
        fail("_rebuild_tensor_v2: size and stride differ in length");
      push(t);
    } else if (fn->s == kRebuildParameter || fn->s == kRebuildParameterWithState) {
      if (a.size() != (fn->s == kRebuildParameter ? 3u : 4u) || a[0]->kind != Kind::Tensor)
        fail(fn->s + ": expected (tensor, requires_grad, hooks" + (fn->s == kRebuildParameter ? ")" : ", state)"));
      push(a[0]);
    } else {
      fail("calls '" + fn->s + "', which is a type, not a rebuild function");
    }
  }
};

}  // namespace

std::vector<std::pair<std::string, PickledTensor>> unpickle_state_dict(const unsigned char* data, size_t size,
                                                                       const std::string& origin) {
  Unpickler u(data, size, origin);
  const Val root = u.run();
  if (root->kind != Kind::Dict)
    throw Error(origin + ": the pickle holds a " + kind_name(root->kind) + ", not a state dict (name -> tensor)");
  std::vector<std::pair<std::string, PickledTensor>> out;
  std::set<std::string> seen;
  for (size_t i = 0; i + 1 < root->items.size(); i += 2) {
    const Val& k = root->items[i];
    const Val& v = root->items[i + 1];
    if (k->kind != Kind::Str) throw Error(origin + ": a state dict key is a " + kind_name(k->kind) + ", not a name");
    if (v->kind != Kind::Tensor)
      throw Error(origin + ": entry '" + printable(k->s) + "' is a " + kind_name(v->kind) +
                  ", not a tensor (ordo reads state dicts as save_pretrained writes them, not training checkpoints)");
    if (!seen.insert(k->s).second) throw Error(origin + ": tensor '" + printable(k->s) + "' appears twice");
    out.emplace_back(k->s, v->tensor);
  }
  return out;
}

}  // namespace ordo
