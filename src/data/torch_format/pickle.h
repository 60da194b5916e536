#pragma once
/**
 * @file pickle.h
 * @brief A restricted unpickler for torch.save pickles and a small pickle writer.
 *
 * Reading understands only the opcodes that torch.save emits for plain tensors (protocols 2-5,
 * shared/docs/references/fbgemm-dlrm-data.md §1.5). GLOBALs are symbols and never imported: only
 * `torch._utils._rebuild_tensor_v2` (and `_rebuild_tensor`), `collections.OrderedDict` and the
 * torch storage classes are accepted, which mirrors `torch.load(weights_only=True)`.
 *
 * Values live in a flat arena, so nothing is recursive (a hostile pickle with deep nesting or a
 * list that contains itself is harmless) and memory is bounded by a byte budget that is checked
 * before any string is allocated. Errors read "NAME: <problem> at byte K of LABEL", where K
 * counts from the pickle's first byte, e.g. "x.pt: unknown pickle opcode 0xfe at byte 17 of
 * data.pkl".
 */
#include <cstdint>
#include <string>
#include <vector>

#include "data/torch_format/byte_source.h"
#include "embshard/data/dlrm_file.h"

namespace embshard::detail {

enum class PickleKind : std::uint8_t {
  kNone,
  kBool,
  kInt,
  kBigInt,
  kFloat,
  kString,
  kBytes,
  kGlobal,
  kTuple,
  kList,
  kDict,
  kStorage,
  kTensor
};

/**
 * One value. `number` holds kInt and kBool; `real` holds kFloat; `ref` indexes the arena vector
 * for the kind: `strings` (kString, kBytes, and kBigInt as little-endian two's complement bytes),
 * `globals`, `items` (kTuple, kList, kDict), `storages` or `tensors`.
 */
struct PickleValue {
  PickleKind kind = PickleKind::kNone;
  std::int64_t number = 0;
  double real = 0;
  std::uint32_t ref = 0;
};

/** What a GLOBAL names. */
enum class PickleGlobal : std::uint8_t { kRebuildTensorV2, kRebuildTensor, kOrderedDict, kStorage };

struct GlobalRecord {
  PickleGlobal what = PickleGlobal::kOrderedDict;
  TensorType type = TensorType::kU8;  ///< for kStorage
  std::string name;                   ///< "module.name"
};

/** A storage named by a persistent id ('storage', class, key, location, numel[, None]). */
struct StorageRecord {
  std::string key;
  TensorType type = TensorType::kU8;
  std::string class_name;  ///< e.g. "torch.IntStorage"
  std::int64_t numel = 0;  ///< elements, not bytes
  std::string location;    ///< "cpu", "cuda:0", ...
};

/** A tensor built by `_rebuild_tensor(_v2)`: a strided view of a storage. */
struct TensorRecord {
  std::uint32_t storage = 0;  ///< index into PickleArena::storages
  std::int64_t offset = 0;    ///< in elements
  std::vector<std::int64_t> sizes;
  std::vector<std::int64_t> strides;
};

/** Everything the pickles of one file create. Storages are shared by key across pickles. */
struct PickleArena {
  std::vector<std::string> strings;
  std::vector<GlobalRecord> globals;
  std::vector<std::vector<PickleValue>> items;  ///< tuple/list elements; dicts as k0, v0, k1, ...
  std::vector<StorageRecord> storages;
  std::vector<TensorRecord> tensors;

  [[nodiscard]] const std::string& text(const PickleValue& v) const { return strings[v.ref]; }
  [[nodiscard]] const std::vector<PickleValue>& elements(const PickleValue& v) const { return items[v.ref]; }
};

/** Largest pickle accepted (a real data.pkl is about 300 bytes). */
inline constexpr std::uint64_t kMaxPickleBytes = std::uint64_t{16} << 20;

/** Reads one pickle (up to and including STOP) from `src` and returns the object it builds. */
PickleValue read_pickle(ByteSource& src, PickleArena& arena, const std::string& label);

/** The torch storage class of `type`, e.g. "IntStorage" (module `torch`). */
[[nodiscard]] const char* storage_class_name(TensorType type);

/** Human-readable kind name for messages ("tuple", "int", ...). */
[[nodiscard]] const char* to_string(PickleKind kind);

/** Opcode bytes used by the writer. */
namespace pickle_op {
inline constexpr std::uint8_t kMark = '(';
inline constexpr std::uint8_t kStop = '.';
inline constexpr std::uint8_t kNone = 'N';
inline constexpr std::uint8_t kNewTrue = 0x88;
inline constexpr std::uint8_t kNewFalse = 0x89;
inline constexpr std::uint8_t kEmptyTuple = ')';
inline constexpr std::uint8_t kTuple = 't';
inline constexpr std::uint8_t kTuple1 = 0x85;
inline constexpr std::uint8_t kTuple2 = 0x86;
inline constexpr std::uint8_t kTuple3 = 0x87;
inline constexpr std::uint8_t kEmptyList = ']';
inline constexpr std::uint8_t kAppends = 'e';
inline constexpr std::uint8_t kEmptyDict = '}';
inline constexpr std::uint8_t kSetItems = 'u';
inline constexpr std::uint8_t kReduce = 'R';
inline constexpr std::uint8_t kBinPersId = 'Q';
}  // namespace pickle_op

/** Builds a protocol-2 pickle opcode by opcode, with a memo for repeated values. */
class PickleWriter {
 public:
  void op(std::uint8_t code) { out_.push_back(static_cast<char>(code)); }
  void proto(int version);
  void global(const std::string& module, const std::string& name);  ///< GLOBAL, memoized
  void unicode(const std::string& text);                            ///< BINUNICODE
  void memo_unicode(const std::string& text);                       ///< BINUNICODE, memoized
  void integer(std::int64_t value);         ///< BININT1 / BININT2 / BININT / LONG1, smallest that fits
  void long1(const std::string& le_bytes);  ///< LONG1 of little-endian two's complement bytes
  /** Emits the tuple opcode for `n` items (TUPLE needs a MARK before the items when n > 3). */
  void tuple(int n);
  /** BINPUT of the value just built, as Python's pickler does for tuples and REDUCE results. */
  void memoize() { put("#" + std::to_string(memo_.size())); }
  [[nodiscard]] const std::string& bytes() const { return out_; }

 private:
  /** BINGET when `key` was memoized before (returns true); otherwise records it. */
  bool reuse(const std::string& key);
  /** BINPUT of the value just written, remembered under `key`. */
  void put(const std::string& key);
  std::string out_;
  std::vector<std::string> memo_;  ///< memo key i -> what was stored there
};

}  // namespace embshard::detail
