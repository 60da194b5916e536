#include "data/torch_format/pickle.h"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <unordered_map>

#include "embshard/core/error.h"

namespace embshard::detail {
namespace {

constexpr std::size_t kMaxGlobalLine = 256;
constexpr std::size_t kMaxDims = 16;

struct StorageClass {
  const char* name;
  TensorType type;
};
constexpr StorageClass kStorageClasses[] = {
    {"FloatStorage", TensorType::kF32},     {"DoubleStorage", TensorType::kF64}, {"HalfStorage", TensorType::kF16},
    {"BFloat16Storage", TensorType::kBF16}, {"LongStorage", TensorType::kI64},   {"IntStorage", TensorType::kI32},
    {"ShortStorage", TensorType::kI16},     {"CharStorage", TensorType::kI8},    {"ByteStorage", TensorType::kU8},
    {"BoolStorage", TensorType::kBool},
};

/** `text` quoted for a message: printable ASCII kept, anything else as \xNN, at most 80 chars. */
std::string quoted(const std::string& text) {
  std::string out = "'";
  for (std::size_t i = 0; i < text.size() && i < 80; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= 0x20 && c < 0x7f && c != '\'') {
      out.push_back(static_cast<char>(c));
    } else {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    }
  }
  if (text.size() > 80) out += "...";
  return out + "'";
}

class Unpickler {
 public:
  Unpickler(ByteSource& src, PickleArena& arena, const std::string& label)
      : src_(src), arena_(arena), label_(label), start_(src.position()) {}

  PickleValue run() {
    for (;;) {
      op_pos_ = src_.position() - start_;
      if (op_pos_ > kMaxPickleBytes) fail("pickle is larger than ", kMaxPickleBytes, " bytes");
      const std::uint8_t code = src_.get();
      if (code == '.') return pop();
      step(code);
    }
  }

 private:
  template <typename... Parts>
  [[noreturn]] void fail(Parts&&... parts) const {
    EMBSHARD_THROW(src_.name(), ": ", std::forward<Parts>(parts)..., " at byte ", op_pos_, " of ", label_);
  }

  // ---- raw reads ----
  std::uint64_t uint_le(int bytes) {
    std::uint8_t b[8];
    src_.read(b, static_cast<std::size_t>(bytes));
    std::uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | b[i];
    return v;
  }
  std::string raw(std::uint64_t n) {
    const std::uint64_t used = src_.position() - start_;
    if (n > kMaxPickleBytes - std::min(used, kMaxPickleBytes))
      fail("string of ", n, " bytes exceeds the pickle size limit");
    if (auto left = src_.remaining(); left && n > *left) src_.fail_truncated(n);
    std::string s(static_cast<std::size_t>(n), '\0');
    src_.read(s.data(), s.size());
    return s;
  }
  std::string line() {
    std::string s;
    for (;;) {
      const auto c = static_cast<char>(src_.get());
      if (c == '\n') return s;
      if (s.size() >= kMaxGlobalLine) fail("GLOBAL name longer than ", kMaxGlobalLine, " bytes");
      s.push_back(c);
    }
  }

  // ---- stack ----
  std::size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  PickleValue& top() {
    if (stack_.size() <= floor()) fail("pickle stack underflow");
    return stack_.back();
  }
  PickleValue pop() {
    PickleValue v = top();
    stack_.pop_back();
    return v;
  }
  std::vector<PickleValue> pop_mark() {
    if (marks_.empty()) fail("pickle opcode needs a MARK");
    const std::size_t k = marks_.back();
    std::vector<PickleValue> items(stack_.begin() + static_cast<std::ptrdiff_t>(k), stack_.end());
    stack_.resize(k);
    marks_.pop_back();
    return items;
  }
  void push(PickleValue v) { stack_.push_back(v); }
  void push_int(std::int64_t v) { push({PickleKind::kInt, v, 0, 0}); }
  void push_text(PickleKind kind, std::string s) {
    arena_.strings.push_back(std::move(s));
    push({kind, 0, 0, static_cast<std::uint32_t>(arena_.strings.size() - 1)});
  }
  PickleValue make_items(PickleKind kind, std::vector<PickleValue> items) {
    arena_.items.push_back(std::move(items));
    return {kind, 0, 0, static_cast<std::uint32_t>(arena_.items.size() - 1)};
  }
  std::vector<PickleValue>& items_of(const PickleValue& v, PickleKind kind, const char* op) {
    if (v.kind != kind) fail(op, " expects a ", to_string(kind), ", got a ", to_string(v.kind));
    return arena_.items[v.ref];
  }

  // ---- memo ----
  void memo_put(std::uint64_t key) { memo_[key] = top(); }
  void memo_get(std::uint64_t key) {
    auto it = memo_.find(key);
    if (it == memo_.end()) fail("memo key ", key, " was never stored");
    push(it->second);
  }

  // ---- opcodes ----
  void step(std::uint8_t code) {
    switch (code) {
      case 0x80: {
        const int version = src_.get();
        if (version > 5) fail("unsupported pickle protocol ", version);
        break;
      }
      case 0x95: uint_le(8); break;  // FRAME: framing is transparent
      case '(': marks_.push_back(stack_.size()); break;
      case '0':
        if (stack_.size() > floor())
          stack_.pop_back();
        else if (!marks_.empty())
          marks_.pop_back();
        else
          fail("POP on an empty stack");
        break;
      case '1': pop_mark(); break;
      case 'q': memo_put(src_.get()); break;
      case 'r': memo_put(uint_le(4)); break;
      case 0x94: memo_put(memo_.size()); break;
      case 'h': memo_get(src_.get()); break;
      case 'j': memo_get(uint_le(4)); break;
      case 'J': push_int(static_cast<std::int32_t>(uint_le(4))); break;
      case 'K': push_int(src_.get()); break;
      case 'M': push_int(static_cast<std::int64_t>(uint_le(2))); break;
      case 0x8a: long1(src_.get()); break;
      case 'N': push({}); break;
      case 0x88: push({PickleKind::kBool, 1, 0, 0}); break;
      case 0x89: push({PickleKind::kBool, 0, 0, 0}); break;
      case 'G': push({PickleKind::kFloat, 0, std::bit_cast<double>(float_be()), 0}); break;
      case 'X': push_text(PickleKind::kString, raw(uint_le(4))); break;
      case 0x8c: push_text(PickleKind::kString, raw(src_.get())); break;
      case 0x8d: push_text(PickleKind::kString, raw(uint_le(8))); break;
      case 'T': binstring(); break;
      case 'U': push_text(PickleKind::kString, raw(src_.get())); break;
      case 'B': push_text(PickleKind::kBytes, raw(uint_le(4))); break;
      case 'C': push_text(PickleKind::kBytes, raw(src_.get())); break;
      case 0x8e: push_text(PickleKind::kBytes, raw(uint_le(8))); break;
      case ')': push(make_items(PickleKind::kTuple, {})); break;
      case 't': push(make_items(PickleKind::kTuple, pop_mark())); break;
      case 0x85:
      case 0x86:
      case 0x87: tuple_n(code - 0x84); break;
      case ']': push(make_items(PickleKind::kList, {})); break;
      case 'a': append(); break;
      case 'e': appends(); break;
      case '}': push(make_items(PickleKind::kDict, {})); break;
      case 's': setitem(); break;
      case 'u': setitems(); break;
      case 'c': {
        std::string module = line();
        push(make_global(module, line()));
        break;
      }
      case 0x93: stack_global(); break;
      case 'R': reduce(); break;
      case 0x81: newobj(); break;
      case 'b': build(); break;
      case 'Q': push(persistent_id(pop())); break;
      default: {
        char hex[8];
        std::snprintf(hex, sizeof hex, "0x%02x", code);
        fail("unknown pickle opcode ", hex);
      }
    }
  }

  std::uint64_t float_be() {
    std::uint8_t b[8];
    src_.read(b, 8);
    std::uint64_t v = 0;
    for (std::uint8_t byte : b) v = (v << 8) | byte;
    return v;
  }

  void long1(std::size_t n) {
    std::string bytes = raw(n);
    if (n > 8) {
      push_text(PickleKind::kBigInt, std::move(bytes));
      return;
    }
    std::uint64_t v = 0;
    for (std::size_t i = n; i-- > 0;) v = (v << 8) | static_cast<std::uint8_t>(bytes[i]);
    if (n > 0 && n < 8 && (static_cast<std::uint8_t>(bytes[n - 1]) & 0x80))
      v |= ~std::uint64_t{0} << (8 * n);  // sign-extend
    push_int(static_cast<std::int64_t>(v));
  }

  void binstring() {
    const auto n = static_cast<std::int32_t>(uint_le(4));
    if (n < 0) fail("negative BINSTRING length ", n);
    push_text(PickleKind::kString, raw(static_cast<std::uint64_t>(n)));
  }

  void tuple_n(int n) {
    if (stack_.size() < floor() + static_cast<std::size_t>(n)) fail("pickle stack underflow");
    std::vector<PickleValue> items(stack_.end() - n, stack_.end());
    stack_.resize(stack_.size() - static_cast<std::size_t>(n));
    push(make_items(PickleKind::kTuple, std::move(items)));
  }

  void append() {
    const PickleValue v = pop();
    items_of(top(), PickleKind::kList, "APPEND").push_back(v);
  }
  void appends() {
    std::vector<PickleValue> values = pop_mark();
    auto& list = items_of(top(), PickleKind::kList, "APPENDS");
    list.insert(list.end(), values.begin(), values.end());
  }
  void setitem() {
    const PickleValue v = pop();
    const PickleValue k = pop();
    auto& dict = items_of(top(), PickleKind::kDict, "SETITEM");
    dict.push_back(k);
    dict.push_back(v);
  }
  void setitems() {
    std::vector<PickleValue> kv = pop_mark();
    if (kv.size() % 2 != 0) fail("SETITEMS with an odd number of items");
    auto& dict = items_of(top(), PickleKind::kDict, "SETITEMS");
    dict.insert(dict.end(), kv.begin(), kv.end());
  }

  void stack_global() {
    const PickleValue name = pop();
    const PickleValue module = pop();
    if (name.kind != PickleKind::kString || module.kind != PickleKind::kString)
      fail("STACK_GLOBAL expects two strings");
    push(make_global(arena_.text(module), arena_.text(name)));
  }

  PickleValue make_global(const std::string& module, const std::string& name) {
    GlobalRecord g;
    g.name = module + "." + name;
    if (module == "torch._utils" && name == "_rebuild_tensor_v2") {
      g.what = PickleGlobal::kRebuildTensorV2;
    } else if (module == "torch._utils" && name == "_rebuild_tensor") {
      g.what = PickleGlobal::kRebuildTensor;
    } else if (module == "collections" && name == "OrderedDict") {
      g.what = PickleGlobal::kOrderedDict;
    } else if (module == "torch" && name.ends_with("Storage")) {
      const auto* it = std::find_if(std::begin(kStorageClasses), std::end(kStorageClasses),
                                    [&](const StorageClass& c) { return name == c.name; });
      if (it == std::end(kStorageClasses)) fail("unknown storage class ", quoted(g.name));
      g.what = PickleGlobal::kStorage;
      g.type = it->type;
    } else {
      fail("unsupported global ", quoted(g.name), " (only plain torch tensors can be read)");
    }
    arena_.globals.push_back(std::move(g));
    return {PickleKind::kGlobal, 0, 0, static_cast<std::uint32_t>(arena_.globals.size() - 1)};
  }

  const GlobalRecord& global_of(const PickleValue& v, const char* op) {
    if (v.kind != PickleKind::kGlobal) fail(op, " on a ", to_string(v.kind), ", not a callable");
    return arena_.globals[v.ref];
  }

  void reduce() {
    const PickleValue args = pop();
    const GlobalRecord& fn = global_of(pop(), "REDUCE");
    const auto& a = items_of(args, PickleKind::kTuple, "REDUCE");
    switch (fn.what) {
      case PickleGlobal::kOrderedDict:
        if (!a.empty()) fail("OrderedDict() with arguments is not supported");
        push(make_items(PickleKind::kDict, {}));
        return;
      case PickleGlobal::kRebuildTensorV2:
      case PickleGlobal::kRebuildTensor: push(rebuild_tensor(fn, std::vector<PickleValue>(a))); return;
      case PickleGlobal::kStorage: fail("calling ", quoted(fn.name), " is not supported");
    }
  }

  void newobj() {
    const PickleValue args = pop();
    const GlobalRecord& cls = global_of(pop(), "NEWOBJ");
    items_of(args, PickleKind::kTuple, "NEWOBJ");
    if (cls.what != PickleGlobal::kOrderedDict) fail("NEWOBJ of ", quoted(cls.name), " is not supported");
    push(make_items(PickleKind::kDict, {}));
  }

  void build() {
    const PickleValue state = pop();
    const PickleValue& obj = top();
    const bool ok =
        obj.kind == PickleKind::kDict && (state.kind == PickleKind::kNone || state.kind == PickleKind::kDict);
    if (!ok) fail("BUILD of a ", to_string(obj.kind), " is not supported");
  }

  std::int64_t int_arg(const PickleValue& v, const char* what) {
    if (v.kind != PickleKind::kInt || v.number < 0)
      fail(what, " must be a non-negative int, got a ", to_string(v.kind));
    return v.number;
  }

  std::vector<std::int64_t> int_tuple(const PickleValue& v, const char* what) {
    const auto& items = items_of(v, PickleKind::kTuple, what);
    if (items.size() > kMaxDims) fail(what, " has ", items.size(), " dimensions");
    std::vector<std::int64_t> out;
    for (const PickleValue& item : items) out.push_back(int_arg(item, what));
    return out;
  }

  PickleValue rebuild_tensor(const GlobalRecord& fn, const std::vector<PickleValue>& a) {
    const bool v2 = fn.what == PickleGlobal::kRebuildTensorV2;
    const bool arity_ok = v2 ? (a.size() == 6 || a.size() == 7) : a.size() == 4;
    if (!arity_ok) fail(fn.name, " called with ", a.size(), " arguments");
    if (a[0].kind != PickleKind::kStorage) fail(fn.name, " expects a storage, got a ", to_string(a[0].kind));
    TensorRecord t;
    t.storage = a[0].ref;
    t.offset = int_arg(a[1], "storage offset");
    t.sizes = int_tuple(a[2], "tensor size");
    t.strides = int_tuple(a[3], "tensor stride");
    if (t.sizes.size() != t.strides.size())
      fail("tensor has ", t.sizes.size(), " sizes but ", t.strides.size(), " strides");
    if (v2 && a[4].kind != PickleKind::kBool) fail("requires_grad must be a bool");
    if (v2 && a[5].kind != PickleKind::kDict) fail("backward hooks must be an OrderedDict");
    arena_.tensors.push_back(std::move(t));
    return {PickleKind::kTensor, 0, 0, static_cast<std::uint32_t>(arena_.tensors.size() - 1)};
  }

  PickleValue persistent_id(const PickleValue& pid) {
    const auto& f = items_of(pid, PickleKind::kTuple, "BINPERSID");
    if (f.size() != 5 && f.size() != 6) fail("persistent id has ", f.size(), " fields; expected 5 (zip) or 6 (legacy)");
    if (f[0].kind != PickleKind::kString || arena_.text(f[0]) != "storage")
      fail("persistent id is not a ('storage', ...) tuple");
    if (f[1].kind != PickleKind::kGlobal || arena_.globals[f[1].ref].what != PickleGlobal::kStorage)
      fail("persistent id names no storage class");
    if (f[2].kind != PickleKind::kString || f[3].kind != PickleKind::kString)
      fail("persistent id key and location must be strings");
    if (f.size() == 6 && f[5].kind != PickleKind::kNone) fail("storage views (legacy view_metadata) are not supported");
    StorageRecord s;
    s.key = arena_.text(f[2]);
    s.type = arena_.globals[f[1].ref].type;
    s.class_name = arena_.globals[f[1].ref].name;
    s.numel = int_arg(f[4], "storage size");
    s.location = arena_.text(f[3]);
    return {PickleKind::kStorage, 0, 0, add_storage(std::move(s))};
  }

  std::uint32_t add_storage(StorageRecord s) {
    auto& all = arena_.storages;
    auto it = std::find_if(all.begin(), all.end(), [&](const StorageRecord& r) { return r.key == s.key; });
    if (it == all.end()) {
      all.push_back(std::move(s));
      return static_cast<std::uint32_t>(all.size() - 1);
    }
    if (it->type != s.type || it->numel != s.numel)
      fail("storage ", quoted(s.key), " is declared twice with different types or sizes");
    return static_cast<std::uint32_t>(it - all.begin());
  }

  ByteSource& src_;
  PickleArena& arena_;
  const std::string& label_;
  std::uint64_t start_;
  std::uint64_t op_pos_ = 0;
  std::vector<PickleValue> stack_;
  std::vector<std::size_t> marks_;
  std::unordered_map<std::uint64_t, PickleValue> memo_;
};

}  // namespace

const char* to_string(PickleKind kind) {
  switch (kind) {
    case PickleKind::kNone: return "None";
    case PickleKind::kBool: return "bool";
    case PickleKind::kInt: return "int";
    case PickleKind::kBigInt: return "big int";
    case PickleKind::kFloat: return "float";
    case PickleKind::kString: return "string";
    case PickleKind::kBytes: return "bytes";
    case PickleKind::kGlobal: return "global";
    case PickleKind::kTuple: return "tuple";
    case PickleKind::kList: return "list";
    case PickleKind::kDict: return "dict";
    case PickleKind::kStorage: return "storage";
    case PickleKind::kTensor: return "tensor";
  }
  return "?";
}

const char* storage_class_name(TensorType type) {
  for (const StorageClass& c : kStorageClasses)
    if (c.type == type) return c.name;
  return "?";
}

PickleValue read_pickle(ByteSource& src, PickleArena& arena, const std::string& label) {
  return Unpickler(src, arena, label).run();
}

// ---- PickleWriter -----------------------------------------------------------------------------

void PickleWriter::proto(int version) {
  op(0x80);
  op(static_cast<std::uint8_t>(version));
}

bool PickleWriter::reuse(const std::string& key) {
  auto it = std::find(memo_.begin(), memo_.end(), key);
  if (it == memo_.end()) return false;
  const auto index = static_cast<std::uint32_t>(it - memo_.begin());
  if (index < 256) {
    op('h');
    op(static_cast<std::uint8_t>(index));
  } else {
    op('j');
    append_le(out_, index, 4);
  }
  return true;
}

void PickleWriter::put(const std::string& key) {
  const auto index = static_cast<std::uint32_t>(memo_.size());
  memo_.push_back(key);
  if (index < 256) {
    op('q');
    op(static_cast<std::uint8_t>(index));
  } else {
    op('r');
    append_le(out_, index, 4);
  }
}

void PickleWriter::global(const std::string& module, const std::string& name) {
  const std::string key = "global:" + module + "." + name;
  if (reuse(key)) return;
  op('c');
  out_ += module + "\n" + name + "\n";
  put(key);
}

void PickleWriter::unicode(const std::string& text) {
  op('X');
  append_le(out_, text.size(), 4);
  out_ += text;
}

void PickleWriter::memo_unicode(const std::string& text) {
  const std::string key = "str:" + text;
  if (reuse(key)) return;
  unicode(text);
  put(key);
}

void PickleWriter::integer(std::int64_t value) {
  if (value >= 0 && value < 256) {
    op('K');
    op(static_cast<std::uint8_t>(value));
  } else if (value >= 0 && value < 65536) {
    op('M');
    append_le(out_, static_cast<std::uint64_t>(value), 2);
  } else if (value >= INT32_MIN && value <= INT32_MAX) {
    op('J');
    append_le(out_, static_cast<std::uint32_t>(static_cast<std::int32_t>(value)), 4);
  } else {
    std::string bytes;
    append_le(bytes, static_cast<std::uint64_t>(value), 8);
    // Drop redundant sign bytes, keeping the top bit of the last byte equal to the sign.
    const char fill = value < 0 ? '\xff' : '\0';
    while (bytes.size() > 1 && bytes.back() == fill && ((bytes[bytes.size() - 2] & 0x80) != 0) == (value < 0))
      bytes.pop_back();
    long1(bytes);
  }
}

void PickleWriter::long1(const std::string& le_bytes) {
  op(0x8a);
  op(static_cast<std::uint8_t>(le_bytes.size()));
  out_ += le_bytes;
}

void PickleWriter::tuple(int n) {
  switch (n) {
    case 0: op(pickle_op::kEmptyTuple); break;
    case 1: op(pickle_op::kTuple1); break;
    case 2: op(pickle_op::kTuple2); break;
    case 3: op(pickle_op::kTuple3); break;
    default: op(pickle_op::kTuple); break;
  }
}

}  // namespace embshard::detail
