// The restricted unpickler, see pickle_min.h. Opcodes and their operands follow CPython's Lib/pickle.py and
// pickletools; the allowed names and their arguments follow torch/_utils.py (_rebuild_tensor_v2 / v3,
// _rebuild_parameter) and torch/serialization.py's persistent ids ('storage', type, key, location, numel).
#include "io/pickle_min.h"

#include <cstring>
#include <unordered_map>

#include "util/printable.h"

namespace qs::pickle {

namespace {

constexpr int kMaxDepth = 256;
constexpr std::size_t kMaxMemo = std::size_t(1) << 24;

struct Named {
  const char* name;
  DType dtype;
};
// torch's legacy storage classes (typed: numel counts elements) ...
constexpr Named kStorageClasses[] = {
    {"FloatStorage", DType::F32},  {"DoubleStorage", DType::F64}, {"HalfStorage", DType::F16},
    {"BFloat16Storage", DType::BF16}, {"LongStorage", DType::I64}, {"IntStorage", DType::I32},
    {"ShortStorage", DType::I16},  {"CharStorage", DType::I8},    {"ByteStorage", DType::U8},
    {"BoolStorage", DType::Bool}};
constexpr const char* kUnsupportedStorage[] = {"ComplexFloatStorage", "ComplexDoubleStorage", "QInt8Storage",
                                               "QInt32Storage", "QUInt8Storage", "QUInt4x2Storage", "QUInt2x4Storage"};
// ... and the dtypes _rebuild_tensor_v3 names (new dtypes are pickled as an UntypedStorage plus a dtype).
constexpr Named kDtypes[] = {
    {"float32", DType::F32},  {"float", DType::F32},    {"float64", DType::F64},  {"double", DType::F64},
    {"float16", DType::F16},  {"half", DType::F16},     {"bfloat16", DType::BF16}, {"int64", DType::I64},
    {"long", DType::I64},     {"int32", DType::I32},    {"int", DType::I32},      {"int16", DType::I16},
    {"short", DType::I16},    {"int8", DType::I8},      {"uint8", DType::U8},     {"bool", DType::Bool},
    {"uint16", DType::U16},   {"uint32", DType::U32},   {"uint64", DType::U64},
    {"float8_e4m3fn", DType::F8E4M3}, {"float8_e5m2", DType::F8E5M2}, {"float8_e4m3fnuz", DType::F8E4M3FNUZ},
    {"float8_e5m2fnuz", DType::F8E5M2FNUZ}, {"float8_e8m0fnu", DType::F8E8M0}};
constexpr const char* kUnsupportedDtypes[] = {"complex32", "complex64", "complex128", "cfloat", "cdouble",
                                              "qint8", "quint8", "qint32", "quint4x2", "quint2x4",
                                              "float4_e2m1fn_x2", "bits8", "bits16", "bits1x8", "bits2x4", "bits4x2"};

class Vm {
 public:
  Vm(const uint8_t* p, std::size_t n, const std::string& label) : p_(p), n_(n), label_(label) {}

  Ref run() {
    while (true) {
      const uint8_t op = byte();
      switch (op) {
        case 0x80: {  // PROTO
          const uint8_t v = byte();
          if (v > 5) fail("pickle protocol " + std::to_string(v) + " (at most 5 exists)");
          break;
        }
        case 0x95: skip(8); break;  // FRAME: a length hint only
        case '.': {                 // STOP
          Ref r = pop();
          if (!stack_.empty() || !marks_.empty()) fail("ends with values left on the stack");
          return r;
        }
        case '(': marks_.push_back(stack_.size()); break;
        case '}': push(make(Kind::Dict)); break;
        case ']': push(make(Kind::List)); break;
        case ')': push(make(Kind::Tuple)); break;
        case 't': push(container(Kind::Tuple, pop_mark())); break;
        case 'l': push(container(Kind::List, pop_mark())); break;
        case 0x85: case 0x86: case 0x87: {  // TUPLE1..3
          std::vector<Ref> v(std::size_t(op - 0x84));
          for (std::size_t k = v.size(); k-- > 0;) v[k] = pop();
          push(container(Kind::Tuple, std::move(v)));
          break;
        }
        case 'd': {  // DICT from the mark
          std::vector<Ref> v = pop_mark();
          Ref d = make(Kind::Dict);
          set_items(d, v);
          push(d);
          break;
        }
        case 's': {  // SETITEM
          Ref v = pop(), k = pop();
          set_items(top(), {k, v});
          break;
        }
        case 'u': {  // SETITEMS
          std::vector<Ref> v = pop_mark();
          set_items(top(), v);
          break;
        }
        case 'a': {  // APPEND
          Ref v = pop();
          append(top(), {v});
          break;
        }
        case 'e': {  // APPENDS
          std::vector<Ref> v = pop_mark();
          append(top(), v);
          break;
        }
        case 'X': push(text(Kind::Str, u32())); break;   // BINUNICODE
        case 0x8c: push(text(Kind::Str, byte())); break;  // SHORT_BINUNICODE
        case 0x8d: push(text(Kind::Str, u64())); break;   // BINUNICODE8
        case 'U': push(text(Kind::Str, byte())); break;   // SHORT_BINSTRING
        case 'T': {                                        // BINSTRING: a signed length
          const int32_t len = int32_t(u32());
          if (len < 0) fail("a negative string length");
          push(text(Kind::Str, uint64_t(len)));
          break;
        }
        case 'C': push(text(Kind::Bytes, byte())); break;  // SHORT_BINBYTES
        case 'B': push(text(Kind::Bytes, u32())); break;   // BINBYTES
        case 0x8e: push(text(Kind::Bytes, u64())); break;  // BINBYTES8
        case 'J': push(integer(int32_t(u32()))); break;    // BININT
        case 'K': push(integer(byte())); break;            // BININT1
        case 'M': push(integer(u16())); break;             // BININT2
        case 0x8a: {                                        // LONG1: little-endian two's complement
          const uint8_t len = byte();
          if (len > 8) fail("an integer of " + std::to_string(len) + " bytes (more than 64 bits)");
          uint64_t v = 0;
          for (uint8_t k = 0; k < len; ++k) v |= uint64_t(byte()) << (8 * k);
          if (len > 0 && len < 8 && (v >> (8 * len - 1)) & 1) v |= ~uint64_t(0) << (8 * len);
          push(integer(int64_t(v)));
          break;
        }
        case 'G': {  // BINFLOAT: big-endian double
          uint64_t b = 0;
          for (int k = 0; k < 8; ++k) b = (b << 8) | byte();
          Ref r = make(Kind::Float);
          std::memcpy(&r->f, &b, 8);
          push(r);
          break;
        }
        case 'N': push(make(Kind::None)); break;
        case 0x88: case 0x89: {  // NEWTRUE, NEWFALSE
          Ref r = make(Kind::Bool);
          r->i = op == 0x88;
          push(r);
          break;
        }
        case 'q': memo_put(byte()); break;            // BINPUT
        case 'r': memo_put(u32()); break;             // LONG_BINPUT
        case 0x94: memo_put(memo_.size()); break;     // MEMOIZE
        case 'h': push(memo_get(byte())); break;      // BINGET
        case 'j': push(memo_get(u32())); break;       // LONG_BINGET
        case 'c': {                                    // GLOBAL "module\nname\n"
          const std::string module = line(), name = line();
          push(global(module, name));
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          Ref name = pop(), module = pop();
          if (module->kind != Kind::Str || name->kind != Kind::Str) fail("STACK_GLOBAL without two strings");
          push(global(module->s, name->s));
          break;
        }
        case 'R': case 0x81: {  // REDUCE, NEWOBJ: a callable from the allow-list with a tuple of arguments
          Ref args = pop(), fn = pop();
          push(call(fn, args));
          break;
        }
        case 'b': {  // BUILD: an OrderedDict's attributes (a state dict's _metadata): not needed
          Ref state = pop();
          Ref obj = top();
          if (obj->kind != Kind::Dict && obj->kind != Kind::Tensor)
            fail("BUILD on a " + std::string(to_string(obj->kind)) + ", which a state dict does not do");
          (void)state;
          break;
        }
        case 'Q': {  // BINPERSID: torch's ('storage', type, key, location, numel)
          Ref pid = pop();
          push(persistent(pid));
          break;
        }
        default: {
          char hex[8];
          std::snprintf(hex, sizeof hex, "0x%02x", op);
          fail("pickle opcode " + std::string(hex) + " at byte " + std::to_string(pos_ - 1) +
               " is not one a torch.save state dict uses");
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) const { throw IoError(label_ + ": " + what); }

  uint8_t byte() {
    if (pos_ >= n_) fail("truncated pickle (no STOP)");
    return p_[pos_++];
  }
  void need(uint64_t k) {
    if (k > n_ - pos_) fail("truncated pickle: an operand of " + std::to_string(k) + " bytes at byte " + std::to_string(pos_));
  }
  void skip(uint64_t k) {
    need(k);
    pos_ += std::size_t(k);
  }
  uint16_t u16() {
    need(2);
    const uint16_t v = uint16_t(p_[pos_] | (p_[pos_ + 1] << 8));
    pos_ += 2;
    return v;
  }
  uint32_t u32() {
    need(4);
    uint32_t v = 0;
    for (int k = 3; k >= 0; --k) v = (v << 8) | p_[pos_ + std::size_t(k)];
    pos_ += 4;
    return v;
  }
  uint64_t u64() {
    need(8);
    uint64_t v = 0;
    for (int k = 7; k >= 0; --k) v = (v << 8) | p_[pos_ + std::size_t(k)];
    pos_ += 8;
    return v;
  }
  std::string line() {
    std::string s;
    while (true) {
      const uint8_t c = byte();
      if (c == '\n') return s;
      if (s.size() >= 256) fail("a GLOBAL name longer than 256 bytes");
      s += char(c);
    }
  }

  Ref make(Kind k) {
    auto r = std::make_shared<Object>();
    r->kind = k;
    return r;
  }
  Ref integer(int64_t v) {
    Ref r = make(Kind::Int);
    r->i = v;
    return r;
  }
  Ref text(Kind k, uint64_t len) {
    need(len);  // checked before allocating
    Ref r = make(k);
    r->s.assign(reinterpret_cast<const char*>(p_ + pos_), std::size_t(len));
    pos_ += std::size_t(len);
    return r;
  }
  void push(Ref r) { stack_.push_back(std::move(r)); }
  Ref pop() {
    if (stack_.empty() || (!marks_.empty() && marks_.back() == stack_.size())) fail("pops an empty stack");
    Ref r = std::move(stack_.back());
    stack_.pop_back();
    return r;
  }
  Ref& top() {
    if (stack_.empty() || (!marks_.empty() && marks_.back() == stack_.size())) fail("uses an empty stack");
    return stack_.back();
  }
  std::vector<Ref> pop_mark() {
    if (marks_.empty()) fail("no MARK to pop to");
    const std::size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Ref> v(std::make_move_iterator(stack_.begin() + std::ptrdiff_t(m)), std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return v;
  }
  // A child goes into a container: the child is frozen (it may not change any more) and the parent's depth grows.
  void adopt(Object& parent, const Ref& child) {
    if (!child) fail("an empty value");
    if (child.get() == &parent) fail("a container inside itself");
    child->frozen = true;
    parent.depth = std::max(parent.depth, child->depth + 1);
    if (parent.depth > kMaxDepth) fail("nests containers deeper than " + std::to_string(kMaxDepth) + " levels");
  }
  Ref container(Kind k, std::vector<Ref> v) {
    Ref r = make(k);
    for (const Ref& c : v) adopt(*r, c);
    r->items = std::move(v);
    return r;
  }
  void set_items(const Ref& d, const std::vector<Ref>& kv) {
    if (d->kind != Kind::Dict) fail("SETITEM(S) on a " + std::string(to_string(d->kind)));
    if (kv.size() % 2) fail("SETITEMS with an odd number of values");
    if (d->frozen) fail("changes a dict after putting it inside another container");
    for (std::size_t k = 0; k < kv.size(); k += 2) {
      adopt(*d, kv[k]);
      adopt(*d, kv[k + 1]);
      d->dict.emplace_back(kv[k], kv[k + 1]);
    }
  }
  void append(const Ref& l, const std::vector<Ref>& v) {
    if (l->kind != Kind::List) fail("APPEND(S) on a " + std::string(to_string(l->kind)));
    if (l->frozen) fail("changes a list after putting it inside another container");
    for (const Ref& c : v) {
      adopt(*l, c);
      l->items.push_back(c);
    }
  }
  void memo_put(uint64_t key) {
    if (stack_.empty()) fail("memoizes an empty stack");
    if (memo_.size() >= kMaxMemo && !memo_.count(key)) fail("more than " + std::to_string(kMaxMemo) + " memo entries");
    memo_[key] = stack_.back();
  }
  Ref memo_get(uint64_t key) {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail("memo entry " + std::to_string(key) + " was never stored");
    return it->second;
  }

  Ref global(const std::string& module, const std::string& name) {
    Ref r = make(Kind::Global);
    r->s = module + "." + name;
    if (module == "collections" && name == "OrderedDict") return r;
    if (module == "torch._utils" && (name == "_rebuild_tensor_v2" || name == "_rebuild_tensor_v3" ||
                                     name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state"))
      return r;
    // torch >= 2.x pickles the untyped storage class under its defining module, torch.storage.
    if (module == "torch.storage" && name == "UntypedStorage") {
      r->is_storage_class = true;
      r->untyped = true;
      return r;
    }
    if (module == "torch") {
      for (const Named& c : kStorageClasses)
        if (name == c.name) {
          r->is_storage_class = true;
          r->dtype = c.dtype;
          return r;
        }
      for (const char* c : kUnsupportedStorage)
        if (name == c) {
          r->is_storage_class = true;
          r->unsupported = name;
          return r;
        }
      if (name == "UntypedStorage") {
        r->is_storage_class = true;
        r->untyped = true;
        return r;
      }
      for (const Named& d : kDtypes)
        if (name == d.name) {
          r->is_dtype = true;
          r->dtype = d.dtype;
          return r;
        }
      for (const char* d : kUnsupportedDtypes)
        if (name == d) {
          r->is_dtype = true;
          r->unsupported = name;
          return r;
        }
    }
    fail("data.pkl refers to " + printable(module + "." + name) + ", which a state dict does not need; not loaded");
  }

  Ref persistent(const Ref& pid) {
    if (pid->kind != Kind::Tuple || pid->items.size() != 5 || pid->items[0]->kind != Kind::Str ||
        pid->items[0]->s != "storage")
      fail("a persistent id that is not ('storage', type, key, location, numel)");
    const Ref& cls = pid->items[1];
    const Ref& key = pid->items[2];
    const Ref& numel = pid->items[4];
    if (cls->kind != Kind::Global || !cls->is_storage_class) fail("a storage whose type is not a torch storage class");
    if (key->kind != Kind::Str) fail("a storage key that is not a string");
    if (numel->kind != Kind::Int || numel->i < 0) fail("a storage size that is not a non-negative integer");
    // One object per key, so that views of one storage share it.
    if (const auto it = storages_.find(key->s); it != storages_.end()) return it->second;
    Ref s = make(Kind::Storage);
    s->s = key->s;
    s->dtype = cls->dtype;
    s->untyped = cls->untyped;
    s->unsupported = cls->unsupported;
    s->numel = uint64_t(numel->i);
    storages_[key->s] = s;
    return s;
  }

  static bool int_tuple(const Ref& r, std::vector<int64_t>& out) {
    if (r->kind != Kind::Tuple) return false;
    out.clear();
    for (const Ref& v : r->items) {
      if (v->kind != Kind::Int) return false;
      out.push_back(v->i);
    }
    return true;
  }

  Ref call(const Ref& fn, const Ref& args) {
    if (fn->kind != Kind::Global) fail("calls a " + std::string(to_string(fn->kind)) + ", not an allowed function");
    if (args->kind != Kind::Tuple) fail("calls " + fn->s + " without an argument tuple");
    const std::vector<Ref>& a = args->items;
    if (fn->s == "collections.OrderedDict") {
      Ref d = make(Kind::Dict);
      if (a.empty()) return d;
      if (a.size() == 1 && a[0]->kind == Kind::List) {  // OrderedDict([(k, v), ...])
        std::vector<Ref> kv;
        for (const Ref& pair : a[0]->items) {
          if (pair->kind != Kind::Tuple || pair->items.size() != 2) fail("OrderedDict with an item that is not a pair");
          kv.push_back(pair->items[0]);
          kv.push_back(pair->items[1]);
        }
        set_items(d, kv);
        return d;
      }
      fail("OrderedDict called with arguments a state dict does not use");
    }
    if (fn->s == "torch._utils._rebuild_tensor_v2" || fn->s == "torch._utils._rebuild_tensor_v3") {
      const bool v3 = fn->s.back() == '3';
      if (a.size() < (v3 ? 7u : 6u) || a.size() > (v3 ? 8u : 7u)) fail(fn->s + " with " + std::to_string(a.size()) + " arguments");
      Ref t = make(Kind::Tensor);
      if (a[0]->kind != Kind::Storage) fail(fn->s + ": its first argument is not a storage");
      t->storage = a[0];
      if (a[1]->kind != Kind::Int || a[1]->i < 0) fail(fn->s + ": the storage offset is not a non-negative integer");
      t->offset = a[1]->i;
      if (!int_tuple(a[2], t->size) || !int_tuple(a[3], t->stride) || t->size.size() != t->stride.size())
        fail(fn->s + ": size and stride are not integer tuples of one length");
      if (t->size.size() > 64) fail(fn->s + ": " + std::to_string(t->size.size()) + " dimensions");
      for (std::size_t d = 0; d < t->size.size(); ++d)
        if (t->size[d] < 0 || t->stride[d] < 0) fail(fn->s + ": a negative size or stride");
      if (v3) {
        if (a[6]->kind != Kind::Global || !a[6]->is_dtype) fail(fn->s + ": its dtype argument is not a torch dtype");
        t->dtype = a[6]->dtype;
        t->unsupported = a[6]->unsupported;
      } else {
        t->dtype = a[0]->dtype;
        t->unsupported = a[0]->unsupported;
        if (a[0]->untyped) fail(fn->s + ": an untyped storage without a dtype");
      }
      adopt(*t, t->storage);
      return t;
    }
    if (fn->s == "torch._utils._rebuild_parameter" || fn->s == "torch._utils._rebuild_parameter_with_state") {
      if (a.empty() || a[0]->kind != Kind::Tensor) fail(fn->s + ": its first argument is not a tensor");
      return a[0];
    }
    fail("calls " + fn->s + ", which is not a function");
  }

  const uint8_t* p_;
  std::size_t n_, pos_ = 0;
  const std::string& label_;
  std::vector<Ref> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<uint64_t, Ref> memo_;
  std::unordered_map<std::string, Ref> storages_;
};

}  // namespace

const char* to_string(Kind k) {
  switch (k) {
    case Kind::None: return "None";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Str: return "str";
    case Kind::Bytes: return "bytes";
    case Kind::Tuple: return "tuple";
    case Kind::List: return "list";
    case Kind::Dict: return "dict";
    case Kind::Global: return "global";
    case Kind::Storage: return "storage";
    case Kind::Tensor: return "tensor";
  }
  return "?";
}

Ref load(const uint8_t* data, std::size_t n, const std::string& label) {
  Vm vm(data, n, label);
  return vm.run();
}

}  // namespace qs::pickle
