// The plan `joint` searches over (joint.h): pieces per table, loads per device, the exact objective.
#include <algorithm>
#include <cmath>

#include "embshard/core/error.h"
#include "embshard/cost/link_model.h"
#include "shard/joint/joint.h"

namespace embshard::detail::joint {

/** From this many devices on, the fast path where it applies (joint.h). */
constexpr std::size_t kFastFromDevices = 64;

std::vector<Shard> layout_shards(Layout layout, std::int64_t rows, int cols) {
  std::vector<Shard> shards;
  switch (layout.kind) {
    case Layout::Kind::kWhole: shards.push_back({0, 0, rows, 0, cols, -1}); break;
    case Layout::Kind::kRows: {
      const std::int64_t block = (rows + layout.parts - 1) / layout.parts;
      for (std::int64_t begin = 0; begin < rows; begin += block)
        shards.push_back({0, begin, std::min(rows, begin + block), 0, cols, -1});
      break;
    }
    case Layout::Kind::kCopies:
      for (int i = 0; i < layout.parts; ++i) shards.push_back({0, 0, rows, 0, cols, -1});
      break;
    case Layout::Kind::kColumns:
    case Layout::Kind::kGrid: {
      const int units = cols / 4;
      int begin = 0;
      const Layout blocks{Layout::Kind::kRows, layout.kind == Layout::Kind::kGrid ? layout.row_parts : 1};
      for (int i = 0; i < layout.parts; ++i) {
        const int width = 4 * (units / layout.parts + (i < units % layout.parts ? 1 : 0));
        if (width == 0) continue;
        for (Shard s : layout_shards(blocks, rows, cols)) {
          s.col_begin = begin, s.col_end = begin + width;
          shards.push_back(s);
        }
        begin += width;
      }
      break;
    }
  }
  return shards;
}

State::State(const Task& task, CostModel& cost, Objective objective, const Context& ctx)
    : task_(task), cost_(cost), objective_(objective), ctx_(ctx), additive_(cost.compute().is_additive()),
      devices_(static_cast<std::size_t>(task.topology.num_devices())), tables_(task.workload.tables.size()),
      layouts_(task.workload.tables.size()), device_tables_(static_cast<std::size_t>(task.topology.num_devices())),
      table_type_(task.workload.tables.size(), -1) {
  if (additive_) overhead_ = cost.compute().device_overhead();
  index_placement_groups();
  const std::size_t n = devices_.size();
  by_device_.resize(additive_ ? 0 : n);
  cached_.resize(n);
  dirty_.assign(n, false);
  breakdown_.devices.resize(n);
  outputs_.pooled.resize(n);
  outputs_.partial.resize(n);
  host_reduced_.assign(static_cast<std::size_t>(task.topology.num_hosts()), 0);
  fw_comp_.resize(n);
  input_bytes_.resize(n);
  input_ms_.resize(n);
  comm_.resize(n);
  const InputCommMode mode = cost.comm().input_options().mode;
  // fast_step.h keeps each link's larger direction: full-duplex links only.
  fast_ = additive_ && cost.comm().is_link_model() && objective == Objective::kStep &&
          mode != InputCommMode::kOverlap && !task.topology.half_duplex && n >= kFastFromDevices;
  if (static_cast<int>(n) > kAllCandidatesUpTo) {
    // kAll, and on the fast path kCompute, kOutput and (where it is paid) kInput.
    const int terms = !fast_ ? 1 : mode == InputCommMode::kExposed ? 4 : 3;
    loads_.assign(static_cast<std::size_t>(terms), LoadIndex(static_cast<int>(n)));
    stale_loads_.assign(static_cast<std::size_t>(terms), {});
    stale_terms_.assign(n, 0);
    for (std::size_t d = 0; d < n; ++d) mark_load_stale(static_cast<int>(d));
  }
  if (fast_) {
    input_exposed_ = mode == InputCommMode::kExposed;
    out_ = FastExchange(task.topology);
    in_ = FastExchange(task.topology);
    fw_tree_ = MaxTree(static_cast<int>(n));
    bw_tree_ = MaxTree(static_cast<int>(n));
    fast_terms_.assign(n, {0, 0, 0, 0});
    fast_host_terms_.assign(static_cast<std::size_t>(task.topology.num_hosts()), 0);
  }
}

void State::set_replica_sync(const ReplicaSyncCost& sync) {
  sync_ = sync;
  if (fast_ && sync_.enabled()) sync_tree_ = MaxTree(num_devices());
}

void State::update_fast(int device) {
  const DeviceCompute c = device_compute(device);
  fw_tree_.set(device, c.fw_ms);
  bw_tree_.set(device, c.bw_ms);
  const DeviceLoad& load = devices_[static_cast<std::size_t>(device)];
  if (sync_.enabled()) sync_tree_.set(device, sync_.at(static_cast<double>(load.hbm_bytes + load.uvm_bytes)));
  const double n = num_devices();
  // The link model's bytes per peer (cost/link_model.cpp PeerBytes), output and input.
  const auto batch = static_cast<double>(task_.workload.batch_size);
  out_.set(device, static_cast<std::int64_t>(batch * static_cast<double>(load.dims - load.partial_dims) * 4 / n),
           static_cast<std::int64_t>(batch * static_cast<double>(load.partial_dims) * 4 / task_.topology.host_size()));
  if (input_exposed_) in_.set(device, static_cast<std::int64_t>(static_cast<double>(load.input_bytes) / n));
  update_spread(device, c);
}

namespace {
/** Whole µs of a time in ms ≥ 0 (the fast path's spread). */
std::int64_t whole_us(double ms) { return static_cast<std::int64_t>(ms * 1e3 + 0.5); }
}  // namespace

void State::update_spread(int device, const DeviceCompute& c) {
  auto& terms = fast_terms_[static_cast<std::size_t>(device)];
  for (const std::int64_t v : terms) fast_spread_ -= v * v;
  terms = {whole_us(c.fw_ms), whole_us(c.bw_ms), 2 * whole_us(out_.own_ms(device)),
           input_exposed_ ? whole_us(in_.own_ms(device)) : 0};
  for (const std::int64_t v : terms) fast_spread_ += v * v;
}

double State::device_load_ms(int device) {
  const DeviceCompute c = device_compute(device);
  if (fast_) {
    // The spread's terms: compute and the device's own sending and receiving times on its links.
    return c.fw_ms + c.bw_ms + 2.0 * out_.own_ms(device) + (input_exposed_ ? in_.own_ms(device) : 0.0);
  }
  const DeviceLoad& load = devices_[static_cast<std::size_t>(device)];
  const double bytes = 2.0 * static_cast<double>(task_.workload.batch_size) * static_cast<double>(load.dims) * 4 +
                       static_cast<double>(load.input_bytes);
  const double gbps = std::max(task_.topology.intra_gbps(device), 1e-9);
  return c.fw_ms + c.bw_ms + bytes / (gbps * 1e6);
}

void State::least_loaded(int k, std::int64_t bytes, const std::vector<bool>& skip, std::vector<int>& out,
                         LoadTerm term) {
  EMBSHARD_ASSERT(num_devices() > kAllCandidatesUpTo && static_cast<int>(term) < load_terms());
  // Only this term's index is brought up to date: every change marks each term of every device
  // whose loads it touches (mark_load_stale), so what is not marked is current.
  const auto i = static_cast<std::size_t>(term);
  for (const int d : stale_loads_[i]) {
    const std::int64_t used = devices_[static_cast<std::size_t>(d)].hbm_bytes;
    const std::int64_t free = task_.topology.devices[static_cast<std::size_t>(d)].hbm_bytes - used;
    loads_[i].set(d, term_load_ms(d, term), used, free);
    stale_terms_[static_cast<std::size_t>(d)] &= static_cast<std::uint8_t>(~(1U << i));
  }
  stale_loads_[i].clear();
  const LoadIndex& index = loads_[i];
  const std::size_t before = out.size();
  index.least(k, bytes, true, skip, out);
  if (out.size() == before) index.least(k, bytes, false, skip, out);
}

double State::term_load_ms(int device, LoadTerm term) {
  switch (term) {
    case LoadTerm::kAll: return device_load_ms(device);
    case LoadTerm::kCompute: {
      const DeviceCompute c = device_compute(device);
      return c.fw_ms + c.bw_ms;
    }
    case LoadTerm::kOutput:  // what it sends across hosts, its host's reduced rows included (fast_step.h)
      return out_.own_ms(device) + out_.host_ms(task_.topology.host_of(device));
    case LoadTerm::kInput: return in_.own_ms(device);
  }
  return 0.0;
}

void State::mark_load_stale(int device) {
  const auto d = static_cast<std::size_t>(device);
  if (stale_terms_.empty()) return;
  const std::uint8_t all = static_cast<std::uint8_t>((1U << loads_.size()) - 1);
  if (stale_terms_[d] == all) return;
  for (std::size_t i = 0; i < loads_.size(); ++i)
    if ((stale_terms_[d] & (1U << i)) == 0) stale_loads_[i].push_back(device);
  stale_terms_[d] = all;
}

void State::index_placement_groups() {
  const PlacementGroups& groups = task_.constraints.groups;
  if (groups.empty()) return;
  std::unordered_map<std::string, int> index;
  for (std::size_t t = 0; t < task_.workload.tables.size(); ++t)
    index[task_.workload.tables[t].name] = static_cast<int>(t);
  const auto members = [&](const std::vector<std::string>& names) {
    std::vector<int> out;
    for (const std::string& name : names) out.push_back(index.at(name));
    return out;
  };
  colocated_with_.assign(task_.workload.tables.size(), {});
  separated_from_.assign(task_.workload.tables.size(), {});
  for (const auto& group : groups.colocate) {
    const std::vector<int> m = members(group);
    for (int t : m) colocated_with_[static_cast<std::size_t>(t)] = m;
  }
  for (const auto& group : groups.separate) {
    const std::vector<int> m = members(group);
    for (int t : m) {
      auto& others = separated_from_[static_cast<std::size_t>(t)];
      for (int u : m)
        if (u != t) others.push_back(u);
    }
  }
}

int State::colocated_device(int table) const {
  if (colocated_with_.empty()) return -1;
  for (int u : colocated_with_[static_cast<std::size_t>(table)]) {
    const auto& pieces = tables_[static_cast<std::size_t>(u)];
    if (u != table && !pieces.empty()) return pieces.front().placed.shard.device;
  }
  return -1;
}

bool State::keeps_placement_groups(int table, int device) const {
  if (colocated_with_.empty()) return true;
  const auto holds = [&](int u) {
    const auto& pieces = tables_[static_cast<std::size_t>(u)];
    return std::any_of(pieces.begin(), pieces.end(), [&](const Piece& p) { return p.placed.shard.device == device; });
  };
  for (int u : colocated_with_[static_cast<std::size_t>(table)]) {
    // Another member placed elsewhere: this one must go where it is.
    if (u != table && !tables_[static_cast<std::size_t>(u)].empty() && !holds(u)) return false;
  }
  for (int u : separated_from_[static_cast<std::size_t>(table)])
    if (holds(u)) return false;
  return true;
}

std::int64_t State::moved_bytes_of(int table, const Shard& shard) const {
  if (origin_.shards.empty()) return 0;
  const auto& before = origin_.shards[static_cast<std::size_t>(table)];
  if (before.empty()) return 0;  // a table the old plan did not have: created, not moved
  const TableSpec& spec = task_.workload.tables[static_cast<std::size_t>(table)];
  const std::int64_t whole = spec.shard_bytes(shard.num_rows(), shard.num_cols());
  if (origin_.copies[static_cast<std::size_t>(table)]) return shard.device < origin_.old_devices ? 0 : whole;
  std::int64_t kept = 0;
  for (const Shard& o : before) {
    if (o.device == shard.device) kept += shared_bytes(spec, o, shard);
  }
  return whole - kept;
}

bool State::make_piece(int table, Shard shard, int device, bool uvm, Piece& out) {
  if (!keeps_placement_groups(table, device)) return false;
  const TableSpec& spec = task_.workload.tables[static_cast<std::size_t>(table)];
  const Device& dev = task_.topology.devices[static_cast<std::size_t>(device)];
  const DeviceLoad& load = devices_[static_cast<std::size_t>(device)];
  shard.device = device;
  const std::int64_t rows = shard.num_rows();
  const bool copy = layouts_[static_cast<std::size_t>(table)].kind == Layout::Kind::kCopies;
  if (copy) uvm = false;  // TorchRec's dense kernel: all in HBM (plan/plan.h)
  const bool tiers = !copy && cold_rows_to_uvm_ && task_.constraints.allow_uvm && spec.constraints.allow_uvm;
  std::int64_t hbm_rows = rows;
  if (tiers && spec.stats.icdf.size() == static_cast<std::size_t>(kNumIcdfSteps)) {
    // Rows no profiled lookup touched (beyond the ICDF's last step, in the shard's share) cost
    // nothing in UVM: RecShard's tiering (cost/analytic.h: the shard is a uniform sample of rows).
    const double share = static_cast<double>(rows) / static_cast<double>(std::max<std::int64_t>(spec.num_rows(), 1));
    hbm_rows = std::min(rows, static_cast<std::int64_t>(std::ceil(spec.stats.icdf.back() * share)));
  }
  if (load.hbm_bytes + spec.shard_bytes(hbm_rows, shard.num_cols()) > dev.hbm_bytes) {
    if (!uvm || !task_.constraints.allow_uvm || !spec.constraints.allow_uvm) return false;
    const std::int64_t row_bytes = std::max<std::int64_t>(spec.shard_bytes(1, shard.num_cols()), 1);
    hbm_rows = std::max<std::int64_t>(dev.hbm_bytes - load.hbm_bytes, 0) / row_bytes;  // may be 0
  }
  const std::int64_t hbm_bytes = spec.shard_bytes(hbm_rows, shard.num_cols());
  const std::int64_t uvm_bytes = spec.shard_bytes(rows - hbm_rows, shard.num_cols());
  if (load.uvm_bytes + uvm_bytes > dev.uvm_bytes) return false;
  shard.hbm_rows = hbm_rows == rows ? -1 : hbm_rows;
  out.placed = {table, shard, copy ? num_devices() : 0};
  out.gradient_bytes = copy ? spec.weight_bytes() : 0;  // a copy is the whole table
  out.hbm_bytes = hbm_bytes;
  out.uvm_bytes = uvm_bytes;
  out.input_bytes = std::llround(shard_input_bytes(task_, out.placed, cost_.comm().input_options()));
  out.moved_bytes = moved_bytes_of(table, shard);
  if (additive_) {
    const DeviceCompute c = cost_.compute().shard_compute(task_, out.placed);
    out.fw_units = std::llround(c.fw_ms * kUnitsPerMs);
    out.bw_units = std::llround(c.bw_ms * kUnitsPerMs);
  }
  return true;
}

void State::apply(const Piece& p, int sign) {
  ++changes_;
  const auto d = static_cast<std::size_t>(p.placed.shard.device);
  DeviceLoad& load = devices_[d];
  load.fw_units += sign * p.fw_units;
  load.bw_units += sign * p.bw_units;
  load.pieces += sign;
  if (p.placed.is_replica()) {
    load.copies += sign;
    if (d == 0) gradient_bytes_ += sign * p.gradient_bytes;
  } else {
    load.dims += sign * output_columns(task_, p.placed);
    if (outputs_partial_sums(task_, p.placed)) {
      load.partial_dims += sign * p.placed.shard.num_cols();
      count_reduced(p, sign);
    }
  }
  load.input_bytes += sign * p.input_bytes;
  moved_ += sign * p.moved_bytes;
  load.hbm_bytes += sign * p.hbm_bytes;
  load.uvm_bytes += sign * p.uvm_bytes;
  std::vector<int>& held = device_tables_[d];
  if (sign > 0) {
    held.push_back(p.placed.table);
  } else {
    const auto it = std::find(held.begin(), held.end(), p.placed.table);
    EMBSHARD_ASSERT(it != held.end());
    *it = held.back();
    held.pop_back();
  }
  if (fast_) update_fast(static_cast<int>(d));
  mark_load_stale(static_cast<int>(d));
  if (additive_) return;
  dirty_[d] = true;
  auto& list = by_device_[d];
  if (sign > 0) {
    list.push_back(p.placed);
    return;
  }
  const auto it = std::find_if(list.begin(), list.end(), [&](const PlacedShard& s) {
    return s.table == p.placed.table && s.shard.row_begin == p.placed.shard.row_begin &&
           s.shard.col_begin == p.placed.shard.col_begin;
  });
  EMBSHARD_ASSERT(it != list.end());
  list.erase(it);
}

void State::count_reduced(const Piece& p, int sign) {
  // (table, first column, host): < 2^16, < 2^16, < 2^18 (data/table.h, data/topology.h limits).
  const int host = task_.topology.host_of(p.placed.shard.device);
  const std::uint64_t key = (static_cast<std::uint64_t>(p.placed.table) << 34) |
                            (static_cast<std::uint64_t>(p.placed.shard.col_begin) << 18) |
                            static_cast<std::uint64_t>(host);
  int& count = reduced_pieces_[key];
  count += sign;
  EMBSHARD_ASSERT(count >= 0);
  if (count > 1 || (count == 1 && sign < 0)) return;  // the host's reduced columns did not change
  if (count == 0) reduced_pieces_.erase(key);
  std::int64_t& cols = host_reduced_[static_cast<std::size_t>(host)];
  cols += sign * p.placed.shard.num_cols();
  if (!fast_) return;
  out_.set_host(host, static_cast<std::int64_t>(static_cast<double>(task_.workload.batch_size) *
                                                static_cast<double>(cols) * 4 / num_devices()));
  // The host's term of the spread (joint.h): twice its devices' cross-host sending, once per host.
  std::int64_t& term = fast_host_terms_[static_cast<std::size_t>(host)];
  fast_spread_ -= term * term;
  term = 2 * whole_us(out_.host_ms(host));
  fast_spread_ += term * term;
  // Every device of the host sends its reduced rows: their output load changed (least_loaded).
  const int size = task_.topology.host_size();
  for (int d = host * size; d < (host + 1) * size; ++d) mark_load_stale(d);
}

void State::add(const Piece& piece) {
  tables_[static_cast<std::size_t>(piece.placed.table)].push_back(piece);
  apply(piece, +1);
  refresh_type(piece.placed.table);
}

std::vector<Piece> State::remove_table(int table) {
  std::vector<Piece> pieces = std::move(tables_[static_cast<std::size_t>(table)]);
  tables_[static_cast<std::size_t>(table)].clear();
  for (const Piece& p : pieces) apply(p, -1);
  refresh_type(table);
  return pieces;
}

Piece State::pop_piece(int table) {
  auto& pieces = tables_[static_cast<std::size_t>(table)];
  EMBSHARD_ASSERT(!pieces.empty());
  Piece p = pieces.back();
  pieces.pop_back();
  apply(p, -1);
  refresh_type(table);
  return p;
}

Piece State::lift(int table, std::size_t index) {
  const Piece p = tables_[static_cast<std::size_t>(table)][index];
  apply(p, -1);
  return p;
}

void State::place(std::size_t index, const Piece& piece) {
  tables_[static_cast<std::size_t>(piece.placed.table)][index] = piece;
  apply(piece, +1);
  refresh_type(piece.placed.table);
}

ShardingType State::type_of(int table) const {
  const Layout& layout = layouts_[static_cast<std::size_t>(table)];
  switch (layout.kind) {
    case Layout::Kind::kWhole: return ShardingType::kTableWise;
    case Layout::Kind::kCopies: return ShardingType::kDataParallel;
    case Layout::Kind::kColumns: return ShardingType::kColumnWise;
    case Layout::Kind::kGrid: return ShardingType::kGridShard;
    default: break;
  }
  // Row pieces on one host of several are table_row_wise where the table may take it; else
  // row_wise, the general row split (a sequence table, TableSpec::allows, or constraints that name
  // row_wise only: the search offers rows on several hosts only where row_wise is allowed).
  if (!task_.workload.tables[static_cast<std::size_t>(table)].allows(ShardingType::kTableRowWise))
    return ShardingType::kRowWise;
  const std::vector<Piece>& pieces = tables_[static_cast<std::size_t>(table)];
  const bool one_host = std::all_of(pieces.begin(), pieces.end(), [&](const Piece& p) {
    return task_.topology.same_host(p.placed.shard.device, pieces.front().placed.shard.device);
  });
  return task_.topology.num_hosts() > 1 && one_host ? ShardingType::kTableRowWise : ShardingType::kRowWise;
}

void State::refresh_type(int table) {
  int& type = table_type_[static_cast<std::size_t>(table)];
  if (type >= 0) --type_tables_[static_cast<std::size_t>(type)];
  type = tables_[static_cast<std::size_t>(table)].empty() ? -1 : static_cast<int>(type_of(table));
  if (type >= 0) ++type_tables_[static_cast<std::size_t>(type)];
}

int State::exchange_groups() const { return embshard::exchange_groups(type_tables_); }

namespace {
bool same_pieces(std::span<const Piece> a, std::span<const Piece> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const Piece& x, const Piece& y) {
    const Shard& s = x.placed.shard;
    const Shard& t = y.placed.shard;
    return s.device == t.device && s.row_begin == t.row_begin && s.row_end == t.row_end && s.col_begin == t.col_begin &&
           s.col_end == t.col_end && s.hbm_rows == t.hbm_rows && x.placed.replicas == y.placed.replicas;
  });
}
}  // namespace

State::Snapshot State::snapshot() const {
  Snapshot s;
  s.first.reserve(tables_.size() + 1);
  s.first.push_back(0);
  for (const std::vector<Piece>& pieces : tables_) s.first.push_back(s.first.back() + pieces.size());
  s.pieces.reserve(s.first.back());
  for (const std::vector<Piece>& pieces : tables_) s.pieces.insert(s.pieces.end(), pieces.begin(), pieces.end());
  s.layouts = layouts_;
  return s;
}

void State::restore(const Snapshot& snapshot) {
  EMBSHARD_ASSERT(snapshot.first.size() == tables_.size() + 1 && snapshot.layouts.size() == tables_.size());
  // Only the tables that differ are taken off and put back: the loads are exact sums, so the
  // result does not depend on which (a perturbation round changes a few tables of thousands).
  for (int t = 0; t < num_tables(); ++t) {
    const auto i = static_cast<std::size_t>(t);
    if (layouts_[i] == snapshot.layouts[i] && same_pieces(tables_[i], snapshot.table(t))) continue;
    remove_table(t);
    layouts_[i] = snapshot.layouts[i];
    for (const Piece& p : snapshot.table(t)) add(p);
  }
}

void State::set_table_order(std::vector<std::vector<int>> order) {
  EMBSHARD_ASSERT(order.size() == device_tables_.size());
  for (std::size_t d = 0; d < order.size(); ++d) EMBSHARD_ASSERT(order[d].size() == device_tables_[d].size());
  device_tables_ = std::move(order);
}

DeviceCompute State::device_compute(int device) {
  const auto d = static_cast<std::size_t>(device);
  const DeviceLoad& load = devices_[d];
  if (load.pieces == 0) return {};
  if (additive_) {  // one fused call for its shards, one for its copies (compute_model.h)
    const double calls = (load.pieces > load.copies ? 1.0 : 0.0) + (load.copies > 0 ? 1.0 : 0.0);
    return {calls * overhead_.fw_ms + static_cast<double>(load.fw_units) / kUnitsPerMs,
            calls * overhead_.bw_ms + static_cast<double>(load.bw_units) / kUnitsPerMs};
  }
  if (dirty_[d]) {
    cached_[d] = cost_.compute().device_compute(task_, by_device_[d], ctx_);
    dirty_[d] = false;
  }
  return cached_[d];
}

double State::objective() {
  if (fast_) {
    // objective_value's order: in, fw, fw_comm, bw_comm, bw.
    const double out = out_.max_ms();
    spread_ = static_cast<double>(fast_spread_);
    const double extra = extra_group_latency_ms(task_.topology, cost_.comm().input_options(), exchange_groups());
    return (input_exposed_ ? in_.max_ms() + extra : 0.0) + fw_tree_.max() + out + out + 2 * extra + bw_tree_.max() +
           all_reduce_ms(task_.topology, static_cast<double>(gradient_bytes_)) +
           (sync_.enabled() ? sync_tree_.max() : 0.0);
  }
  const int n = num_devices();
  for (int d = 0; d < n; ++d) {
    const DeviceCompute c = device_compute(d);
    DeviceCost& cost = breakdown_.devices[static_cast<std::size_t>(d)];
    cost = {};
    cost.fw_comp_ms = fw_comp_[static_cast<std::size_t>(d)] = c.fw_ms;
    cost.bw_comp_ms = c.bw_ms;
    const DeviceLoad& load = devices_[static_cast<std::size_t>(d)];
    outputs_.pooled[static_cast<std::size_t>(d)] = load.dims - load.partial_dims;
    outputs_.partial[static_cast<std::size_t>(d)] = load.partial_dims;
    input_bytes_[static_cast<std::size_t>(d)] = static_cast<double>(devices_[static_cast<std::size_t>(d)].input_bytes);
  }
  outputs_.reduced = host_reduced_;
  cost_.comm().device_comm_into(task_, outputs_, fw_comp_, comm_);
  // Every further exchange group pays each exchange's latency again (cost_model.cpp does the same).
  const double extra = extra_group_latency_ms(task_.topology, cost_.comm().input_options(), exchange_groups());
  for (int d = 0; d < n; ++d) {
    breakdown_.devices[static_cast<std::size_t>(d)].fw_comm_ms = comm_[static_cast<std::size_t>(d)].fw_ms + extra;
    breakdown_.devices[static_cast<std::size_t>(d)].bw_comm_ms = comm_[static_cast<std::size_t>(d)].bw_ms + extra;
  }
  const double ar_ms = all_reduce_ms(task_.topology, static_cast<double>(gradient_bytes_));
  for (int d = 0; d < n; ++d) {
    const DeviceLoad& load = devices_[static_cast<std::size_t>(d)];
    breakdown_.devices[static_cast<std::size_t>(d)].ar_comm_ms =
        ar_ms + sync_.at(static_cast<double>(load.hbm_bytes + load.uvm_bytes));
  }
  const InputCommOptions& input = cost_.comm().input_options();
  if (input.mode != InputCommMode::kOmit) {
    // input_all_to_all_ms is the exchange of the input bytes (cost/link_model.h).
    exchange_ms_into(task_.topology, input_bytes_, input_ms_);
    for (double& m : input_ms_) m += extra;
    apply_input_comm(input_ms_, input.mode, breakdown_);
  }
  fill_straggler_wait(breakdown_);
  spread_ = 0.0;
  for (const DeviceCost& c : breakdown_.devices) spread_ += c.sum_ms() * c.sum_ms();
  const double value = objective_value(breakdown_, objective_);
  return objective_ == Objective::kBalance ? -value : value;
}

std::vector<int> State::critical_devices() const {
  const auto& devs = breakdown_.devices;
  std::vector<int> out;
  if (fast_) {
    out = {fw_tree_.argmax(), bw_tree_.argmax(), out_.busiest()};
    if (input_exposed_) out.push_back(in_.busiest());
    if (sync_.enabled()) out.push_back(sync_tree_.argmax());
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }
  const auto argmax = [&](auto term) {
    int best = 0;
    for (int d = 1; d < num_devices(); ++d)
      if (term(devs[static_cast<std::size_t>(d)]) > term(devs[static_cast<std::size_t>(best)])) best = d;
    out.push_back(best);
  };
  switch (objective_) {
    case Objective::kStep:
      argmax([](const DeviceCost& c) { return c.in_comm_ms; });
      argmax([](const DeviceCost& c) { return c.fw_comp_ms; });
      argmax([](const DeviceCost& c) { return c.fw_comm_ms; });
      argmax([](const DeviceCost& c) { return c.bw_comm_ms; });
      argmax([](const DeviceCost& c) { return c.bw_comp_ms; });
      if (sync_.enabled()) argmax([](const DeviceCost& c) { return c.ar_comm_ms; });
      break;
    case Objective::kMaxSum: argmax([](const DeviceCost& c) { return c.sum_ms(); }); break;
    case Objective::kBalance:
      argmax([](const DeviceCost& c) { return c.fw_comp_ms + c.bw_comp_ms; });
      argmax([](const DeviceCost& c) { return -(c.fw_comp_ms + c.bw_comp_ms); });
      break;
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Plan State::plan() const {
  Plan plan;
  plan.tables.reserve(tables_.size());
  for (int t = 0; t < num_tables(); ++t) {
    TablePlacement tp;
    tp.table = task_.workload.tables[static_cast<std::size_t>(t)].name;
    for (const Piece& p : tables_[static_cast<std::size_t>(t)]) tp.shards.push_back(p.placed.shard);
    std::sort(tp.shards.begin(), tp.shards.end(), [](const Shard& a, const Shard& b) {
      if (a.row_begin != b.row_begin) return a.row_begin < b.row_begin;
      return a.col_begin != b.col_begin ? a.col_begin < b.col_begin : a.device < b.device;
    });
    tp.type = type_of(t);
    plan.tables.push_back(std::move(tp));
  }
  return plan;
}

}  // namespace embshard::detail::joint
