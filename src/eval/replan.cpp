#include "embshard/eval/replan.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <tuple>

#include <nlohmann/json.hpp>

#include "embshard/core/error.h"
#include "embshard/core/markup.h"
#include "embshard/core/spec.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/shard/sharder.h"

namespace embshard {
namespace {

constexpr std::size_t kMostCurvePoints = 400;
/** Hosts matched by their best device matchings (H² of them); beyond, by the bytes between them. */
constexpr int kMostMatchedHosts = 128;
/** The prices of movement the search from the kept plan is run at: moving every table byte costs
 *  this many times the kept plan's step (0: the step alone). */
constexpr double kMovePrices[] = {0.0, 0.03, 0.1, 0.3, 1.0, 3.0};
constexpr int kPriceBisections = 3;  // between the two prices that straddle the budget

/** A table of the old plan: its shape read off its shards, and its placement. */
struct OldTable {
  std::int64_t rows = 0;
  int cols = 0;
  const TablePlacement* placement = nullptr;
};

std::map<std::string, OldTable> old_tables(const Plan& old_plan) {
  std::map<std::string, OldTable> out;
  for (const TablePlacement& p : old_plan.tables) {
    OldTable& o = out[p.table];
    o.placement = &p;
    for (const Shard& s : p.shards) o.rows = std::max(o.rows, s.row_end), o.cols = std::max(o.cols, s.col_end);
  }
  return out;
}

/** The old placement of `table` when the old plan has it with the same shape, else nullptr. */
const TablePlacement* same_shape(const std::map<std::string, OldTable>& old, const TableSpec& table) {
  const auto it = old.find(table.name);
  if (it == old.end() || it->second.rows != table.num_rows() || it->second.cols != table.dim) return nullptr;
  return it->second.placement;
}

double overlap_bytes(const TableSpec& t, const Shard& a, const Shard& b) {
  return static_cast<double>(shared_bytes(t, a, b));
}

/** A region of a table (a shard's rows and columns) and every device that holds it. */
struct Holding {
  Shard region;
  std::vector<int> devices;
};

/** The world a 2D plan's ranks are spread over: the one it records, else `world` (the task's). */
int world_of(const ShardingGroups& groups, int world) { return groups.world > 0 ? groups.world : world; }

/**
 * Where `p` puts each region of its table: a shard on its device; a data-parallel table's one
 * region on every device of a copy; a 2D plan's shard of rank r on every replica of r in `world`
 * (plan/sharding_groups.h `global_device`).
 */
std::vector<Holding> holdings(const TablePlacement& p, const ShardingGroups& groups, int world) {
  std::vector<Holding> out;
  if (p.type == ShardingType::kDataParallel && !p.shards.empty()) {
    out.push_back({p.shards.front(), {}});
    for (const Shard& s : p.shards) out.back().devices.push_back(s.device);
    return out;
  }
  const int replicas = groups.enabled() ? world / groups.size : 1;
  for (const Shard& s : p.shards) {
    out.push_back({s, {}});
    for (int g = 0; g < replicas; ++g) out.back().devices.push_back(global_device(groups, world, g, s.device));
  }
  return out;
}

/** Device `d`'s replica (sharding group) in a 2D layout of `world` ranks; −1 in a 1D plan. */
int replica_of(const ShardingGroups& groups, int world, int d) {
  if (!groups.enabled()) return -1;
  return groups.ranks == GroupRanks::kStrided ? d % (world / groups.size) : d / groups.size;
}

/**
 * Adds one table's movement to `m` (file comment of replan.h): for each region of `now` on each
 * of its devices, what that device held before is kept, and what other devices held is sent by
 * one of them — the holder in the device's own replica where the old plan had that replica (a 2D
 * layout's holders are listed by replica), else the holder at the device's number modulo their
 * count (the next one the world still has, where that one is gone); with nothing `before`, it is
 * created. `layout`: `now`'s, over `world` ranks.
 */
void add_table_movement(const TableSpec& t, const std::vector<Holding>& now, const std::vector<Holding>* before,
                        Movement& m, const ShardingGroups& layout, int world) {
  const auto grow = [&](int device) {
    if (static_cast<std::size_t>(device) >= m.sent.size())
      m.sent.resize(device + 1, 0.0), m.received.resize(device + 1, 0.0);
  };
  for (const Holding& h : now) {
    for (const int d : h.devices) {
      grow(d);
      if (!before) {
        m.created_bytes += static_cast<double>(t.shard_bytes(h.region.num_rows(), h.region.num_cols()));
        continue;
      }
      for (const Holding& o : *before) {
        const double shared = overlap_bytes(t, h.region, o.region);
        if (shared <= 0) continue;
        if (std::find(o.devices.begin(), o.devices.end(), d) != o.devices.end()) {
          m.kept_bytes += shared;
          continue;
        }
        const int k = replica_of(layout, world, d);
        const std::size_t count = o.devices.size();
        int from = k >= 0 && static_cast<std::size_t>(k) < count ? o.devices[static_cast<std::size_t>(k)]
                                                                 : o.devices[static_cast<std::size_t>(d) % count];
        for (std::size_t i = 1; k < 0 && from >= world && i < count; ++i)  // a holder the world still has
          from = o.devices[(static_cast<std::size_t>(d) + i) % count];
        grow(from);
        m.moved_bytes += shared, m.received[d] += shared, m.sent[from] += shared;
      }
    }
  }
}

/**
 * Why the shards of one table of an old plan are not a plan of a table of `shape` (read off
 * them), or "": each a non-empty range inside the table, on a device ≥ 0, with hbm_rows in [−1,
 * rows]; a data-parallel table's all whole copies on distinct devices, a table-wise one's a single
 * shard, any other's covering every cell once (plan.h `find_coverage_error`). The old task is not
 * known, so neither its constraints nor its memory are checked.
 */
std::string find_error_in_old_table(const TablePlacement& p, const OldTable& shape) {
  const std::string at = "table '" + one_line(p.table) + "' of the old plan";
  if (p.shards.empty()) return at + " has no shards";
  for (std::size_t i = 0; i < p.shards.size(); ++i) {
    const Shard& s = p.shards[i];
    if (s.device < 0 || s.row_begin < 0 || s.row_begin >= s.row_end || s.col_begin < 0 || s.col_begin >= s.col_end ||
        s.hbm_rows < -1 || s.hbm_rows > s.num_rows())
      return at + ": shard " + std::to_string(i) + " (device " + std::to_string(s.device) + ", rows " +
             std::to_string(s.row_begin) + "–" + std::to_string(s.row_end) + ", columns " +
             std::to_string(s.col_begin) + "–" + std::to_string(s.col_end) + ", hbm_rows " +
             std::to_string(s.hbm_rows) + ") is not a shard: a range must be non-empty, a device ≥ 0";
  }
  if (p.type == ShardingType::kDataParallel) {
    std::set<int> devices;
    for (const Shard& s : p.shards)
      if (s.row_begin != 0 || s.row_end != shape.rows || s.col_begin != 0 || s.col_end != shape.cols ||
          !devices.insert(s.device).second)
        return at + " is data_parallel but its shards are not whole copies on distinct devices";
    return "";
  }
  if (p.type == ShardingType::kTableWise && p.shards.size() != 1)
    return at + " is table_wise but has " + std::to_string(p.shards.size()) + " shards";
  const std::string why = find_coverage_error(shape.rows, shape.cols, p.shards);
  return why.empty() ? "" : at + ": " + why;
}

void check_old_plan(const Task& task, const Plan& old_plan, const std::map<std::string, OldTable>& old) {
  const ShardingGroups& groups = old_plan.groups;
  const int old_world = world_of(groups, task.topology.num_devices());
  EMBSHARD_CHECK(!groups.enabled() || old_world % groups.size == 0, "replan: the old plan's world of ", old_world,
                 " ranks (", groups.world > 0 ? "its sharding_groups.world" : "the task's, as the plan records none",
                 ") is not a multiple of its sharding_groups.size ", groups.size);
  const bool shared = std::any_of(task.workload.tables.begin(), task.workload.tables.end(),
                                  [&](const TableSpec& t) { return old.count(t.name) > 0; });
  const std::string& old_id = old_plan.provenance.task_id;
  EMBSHARD_CHECK(shared, "replan: the old plan",
                 old_id.empty() || old_id == task.id ? std::string() : " (of task '" + one_line(old_id) + "')",
                 " shares no table name with task '", one_line(task.id), "': it is a plan of another task");
  std::set<std::string> seen;
  for (const TablePlacement& p : old_plan.tables) {
    EMBSHARD_CHECK(seen.insert(p.table).second, "replan: table '", one_line(p.table),
                   "' appears twice in the old plan");
    const std::string why = find_error_in_old_table(p, old.at(p.table));
    EMBSHARD_CHECK(why.empty(), "replan: ", why);
    EMBSHARD_CHECK(!groups.enabled() || p.type != ShardingType::kDataParallel, "replan: table '", one_line(p.table),
                   "' of the old plan is data_parallel, which a 2D plan (sharding_groups) does not take");
    for (const Shard& s : p.shards)
      EMBSHARD_CHECK(!groups.enabled() || s.device < groups.size, "replan: table '", one_line(p.table),
                     "' of the old plan has a shard on rank ", s.device, ", beyond its sharding groups of ",
                     groups.size, " ranks");
  }
}

// ---- relabelling ----

/**
 * The assignment of rows to columns of the square matrix `weight` with the largest total weight
 * (the Hungarian algorithm with potentials, O(n³)); result[i] is row i's column.
 */
std::vector<int> max_weight_assignment(const std::vector<std::vector<double>>& weight) {
  const int n = static_cast<int>(weight.size());
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> u(n + 1, 0.0), v(n + 1, 0.0);
  std::vector<int> p(n + 1, 0), way(n + 1, 0);
  for (int i = 1; i <= n; ++i) {
    p[0] = i;
    int j0 = 0;
    std::vector<double> minv(n + 1, inf);
    std::vector<char> used(n + 1, 0);
    do {
      used[j0] = 1;
      const int i0 = p[j0];
      double delta = inf;
      int j1 = 0;
      for (int j = 1; j <= n; ++j) {
        if (used[j]) continue;
        const double cur = -weight[i0 - 1][j - 1] - u[i0] - v[j];
        if (cur < minv[j]) minv[j] = cur, way[j] = j0;
        if (minv[j] < delta) delta = minv[j], j1 = j;
      }
      for (int j = 0; j <= n; ++j) {
        if (used[j])
          u[p[j]] += delta, v[j] -= delta;
        else
          minv[j] -= delta;
      }
      j0 = j1;
    } while (p[j0] != 0);
    do {
      const int j1 = way[j0];
      p[j0] = p[j1];
      j0 = j1;
    } while (j0);
  }
  std::vector<int> row_to_col(n, 0);
  for (int j = 1; j <= n; ++j) row_to_col[p[j] - 1] = j - 1;
  return row_to_col;
}

/** keep[d][e]: bytes of `plan`'s shards on device d that the old plan holds on device e. */
std::vector<std::vector<double>> bytes_in_place(const Task& task, const Plan& plan,
                                                const std::map<std::string, OldTable>& old) {
  const int n = task.topology.num_devices();
  std::vector<std::vector<double>> keep(n, std::vector<double>(n, 0.0));
  std::map<std::string, const TableSpec*> spec;
  for (const TableSpec& t : task.workload.tables) spec[t.name] = &t;
  for (const TablePlacement& p : plan.tables) {
    const TablePlacement* before = same_shape(old, *spec.at(p.table));
    if (!before) continue;
    for (const Shard& s : p.shards) {
      for (const Shard& o : before->shards) {
        if (o.device < n) keep[s.device][o.device] += overlap_bytes(*spec.at(p.table), s, o);
      }
    }
  }
  return keep;
}

/** The bytes a host pair (g of the plan, h of the old) keeps at best, and its device matching. */
struct HostMatch {
  double kept = 0;
  std::vector<int> to;  ///< per device of g, the device of h it becomes (offsets in the host)
};

HostMatch match_devices(const std::vector<std::vector<double>>& keep, int g, int h, int per_host) {
  std::vector<std::vector<double>> w(per_host, std::vector<double>(per_host, 0.0));
  for (int i = 0; i < per_host; ++i)
    for (int j = 0; j < per_host; ++j) w[i][j] = keep[g * per_host + i][h * per_host + j];
  HostMatch m{0.0, max_weight_assignment(w)};
  for (int i = 0; i < per_host; ++i) m.kept += w[i][m.to[i]];
  return m;
}

/**
 * Each host's kind: the first host whose devices are like its own (one kind on hosts of one
 * kind of device); empty where a host's devices are of several kinds (no labels to swap there).
 */
std::vector<int> host_kinds(const Topology& topo) {
  const int hosts = topo.num_hosts(), per_host = topo.host_size();
  std::vector<int> kind(hosts, 0);
  for (int g = 0; g < hosts; ++g) {
    for (int i = 1; i < per_host; ++i) {
      if (!topo.alike(g * per_host, g * per_host + i)) return {};
    }
    kind[g] = g;
    for (int h = 0; h < g && kind[g] == g; ++h) {
      if (topo.alike(h * per_host, g * per_host)) kind[g] = kind[h];
    }
  }
  return kind;
}

/** The hosts' assignment of the largest total `weight` among hosts of one kind (Hungarian per kind). */
std::vector<int> assign_within_kinds(const std::vector<std::vector<double>>& weight, const std::vector<int>& kind) {
  std::vector<int> to(kind.size(), 0);
  std::map<int, std::vector<int>> members;
  for (std::size_t g = 0; g < kind.size(); ++g) members[kind[g]].push_back(static_cast<int>(g));
  for (const auto& [k, hosts] : members) {
    std::vector<std::vector<double>> w(hosts.size(), std::vector<double>(hosts.size(), 0.0));
    for (std::size_t i = 0; i < hosts.size(); ++i)
      for (std::size_t j = 0; j < hosts.size(); ++j) w[i][j] = weight[hosts[i]][hosts[j]];
    const std::vector<int> sub = max_weight_assignment(w);
    for (std::size_t i = 0; i < hosts.size(); ++i) to[hosts[i]] = hosts[sub[i]];
  }
  return to;
}

/**
 * `plan` with its devices relabelled to keep the most bytes where the old plan has them: every
 * host pair's best device matching (Hungarian), then hosts matched by what those keep (Hungarian
 * again; beyond kMostMatchedHosts hosts, by the pair's total bytes), and the identity labelling
 * where it keeps more (file comment). On mixed hardware hosts swap labels only with hosts of
 * their own kind, whose devices and links are the same: the step stays as it was.
 */
Plan relabelled(const Task& task, Plan plan, const std::map<std::string, OldTable>& old) {
  const Topology& topo = task.topology;
  const std::vector<int> kind = host_kinds(topo);
  if (kind.empty()) return plan;
  const std::vector<std::vector<double>> keep = bytes_in_place(task, plan, old);
  const int hosts = topo.num_hosts(), per_host = topo.host_size(), n = topo.num_devices();
  const bool exact = hosts <= kMostMatchedHosts;
  std::vector<std::vector<double>> host_weight(hosts, std::vector<double>(hosts, 0.0));
  for (int g = 0; g < hosts; ++g) {
    for (int h = 0; h < hosts; ++h) {
      if (kind[g] != kind[h]) continue;
      if (exact) {
        host_weight[g][h] = match_devices(keep, g, h, per_host).kept;
      } else {
        for (int i = 0; i < per_host; ++i)
          for (int j = 0; j < per_host; ++j) host_weight[g][h] += keep[g * per_host + i][h * per_host + j];
      }
    }
  }
  const std::vector<int> host_to = assign_within_kinds(host_weight, kind);
  std::vector<int> label(n, 0);
  double kept = 0, in_place = 0;
  for (int g = 0; g < hosts; ++g) {
    const HostMatch m = match_devices(keep, g, host_to[g], per_host);
    for (int i = 0; i < per_host; ++i) label[g * per_host + i] = host_to[g] * per_host + m.to[i];
    kept += m.kept;
  }
  for (int d = 0; d < n; ++d) in_place += keep[d][d];
  if (in_place >= kept) return plan;
  for (TablePlacement& p : plan.tables) {
    for (Shard& s : p.shards) s.device = label[s.device];
  }
  return plan;
}

// ---- the curve ----

/** The old placement of a table, kept as it is where its devices still exist (file comment). */
std::optional<TablePlacement> kept_placement(const TablePlacement* before, int devices) {
  if (!before) return std::nullopt;
  TablePlacement p = *before;
  if (p.type == ShardingType::kDataParallel) {  // a copy per device of the new world
    const Shard whole = p.shards.front();
    p.shards.clear();
    for (int d = 0; d < devices; ++d) {
      Shard s = whole;
      s.device = d;
      p.shards.push_back(s);
    }
    return p;
  }
  const bool alive = std::all_of(p.shards.begin(), p.shards.end(), [&](const Shard& s) { return s.device < devices; });
  if (!alive) return std::nullopt;
  return p;
}

bool same_placement(const TablePlacement& a, const TablePlacement& b) {
  if (a.type != b.type || a.shards.size() != b.shards.size()) return false;
  for (std::size_t i = 0; i < a.shards.size(); ++i) {
    const Shard &x = a.shards[i], &y = b.shards[i];
    if (x.device != y.device || x.row_begin != y.row_begin || x.row_end != y.row_end || x.col_begin != y.col_begin ||
        x.col_end != y.col_end || x.rows_in_hbm() != y.rows_in_hbm())
      return false;
  }
  return true;
}

std::string gib(double bytes) { return gib_text(bytes, 4); }

std::string describe(const ReplanPoint& p) {
  char text[96];
  std::snprintf(text, sizeof text, "step %.3f ms moving %s (%.1f%%)", p.step_ms, gib(p.moved_bytes).c_str(),
                100.0 * p.moved_share);
  return text;
}

/** plan_movement once the old plan is read (its tables by name, its layout `old_groups`) and checked. */
Movement movement_from(const Task& task, const Plan& plan, const std::map<std::string, OldTable>& old,
                       const ShardingGroups& old_groups = {}) {
  std::map<std::string, const TableSpec*> spec;
  for (const TableSpec& t : task.workload.tables) spec[t.name] = &t;
  const int world = task.topology.num_devices(), old_world = world_of(old_groups, world);
  Movement m;
  m.sent.assign(world, 0.0);
  m.received.assign(world, 0.0);
  for (const TablePlacement& p : plan.tables) {
    const auto it = spec.find(p.table);
    EMBSHARD_CHECK(it != spec.end(), "replan: the plan places table '", one_line(p.table),
                   "', which the task does not have");
    const TablePlacement* before = same_shape(old, *it->second);
    const std::vector<Holding> was = before ? holdings(*before, old_groups, old_world) : std::vector<Holding>{};
    add_table_movement(*it->second, holdings(p, plan.groups, world), before ? &was : nullptr, m, plan.groups, world);
  }
  return m;
}

/**
 * What plans of the searched task move from the old plan as the whole job holds them (replan.h):
 * a 1D plan's shards; a 2D re-plan's group plan on every replica of the layout `groups`, from
 * every replica of the old plan's.
 */
class MovementMeter {
 public:
  MovementMeter(const Task& whole, const Plan& old_plan, const ShardingGroups& groups)
      : whole_(whole), old_plan_(old_plan), old_(old_tables(old_plan)), groups_(groups) {}

  /** The bytes table `t` moves placed as `p` (a placement of the searched task). */
  [[nodiscard]] double table_moved(const TableSpec& t, const TablePlacement& p) const {
    const TablePlacement* before = same_shape(old_, t);
    if (!before) return 0.0;  // created, not moved
    const int world = whole_.topology.num_devices();
    const std::vector<Holding> was = holdings(*before, old_plan_.groups, world_of(old_plan_.groups, world));
    Movement m;
    add_table_movement(t, holdings(p, groups_, world), &was, m, groups_, world);
    return m.moved_bytes;
  }
  /** The movement of `plan`, a plan of the searched task (1D), in the layout. */
  [[nodiscard]] Movement movement(Plan plan) const {
    plan.groups = groups_;
    return movement_from(whole_, plan, old_, old_plan_.groups);
  }

 private:
  const Task& whole_;
  const Plan& old_plan_;
  std::map<std::string, OldTable> old_;
  ShardingGroups groups_;
};

/** The plan between the kept and the target plans with the first `k` of `order` switched. */
class Curve {
 public:
  /** `step`: a plan's step as the re-plan judges it (a 2D re-plan's on the whole task). */
  Curve(const Task& task, const MovementMeter& meter, std::vector<TablePlacement> kept,
        std::vector<TablePlacement> target, std::function<double(const Plan&)> step)
      : task_(task), meter_(meter), kept_(std::move(kept)), target_(std::move(target)), step_(std::move(step)) {
    for (std::size_t i = 0; i < kept_.size(); ++i) {
      const TableSpec& t = task_.workload.tables[i];
      kept_moved_.push_back(meter_.table_moved(t, kept_[i]));
      target_moved_.push_back(meter_.table_moved(t, target_[i]));
      if (!same_placement(kept_[i], target_[i])) differing_.push_back(i);
    }
  }

  /** The order tables switch in: the step gain of each alone per byte it adds (file comment).
   *  One whole-plan evaluation per differing table: O(T²) at T tables, ~1 s at 500 × 72. */
  std::vector<std::size_t> order() {
    const double base = step(plan_with(0, {}));
    std::vector<std::pair<std::pair<int, double>, std::size_t>> keyed;  // (tier, key) then table
    for (std::size_t i : differing_) {
      const double gain = base - step(plan_with(1, {i}));
      const double bytes = std::max(0.0, target_moved_[i] - kept_moved_[i]);
      // Free switches first by their gain; then gain per byte; switches that lose come last.
      const int tier = bytes <= 0 ? 0 : gain > 0 ? 1 : 2;
      keyed.push_back({{tier, tier == 0 ? -gain : tier == 1 ? -gain / bytes : bytes - gain}, i});
    }
    std::stable_sort(keyed.begin(), keyed.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<std::size_t> out;
    for (const auto& k : keyed) out.push_back(k.second);
    return out;
  }

  /** The plan with the first `k` tables of `order` switched to their target layout. */
  Plan plan_with(std::size_t k, const std::vector<std::size_t>& order) const {
    Plan p;
    p.tables = kept_;
    for (std::size_t j = 0; j < k; ++j) p.tables[order[j]] = target_[order[j]];
    return p;
  }

  ReplanPoint point(std::size_t k, const std::vector<std::size_t>& order) {
    ReplanPoint pt;
    double moved = std::accumulate(kept_moved_.begin(), kept_moved_.end(), 0.0);
    for (std::size_t j = 0; j < k; ++j) moved += target_moved_[order[j]] - kept_moved_[order[j]];
    pt.moved_bytes = moved;
    pt.tables_switched = static_cast<int>(k);
    return pt;
  }

  [[nodiscard]] double step(const Plan& plan) const { return step_(plan); }
  [[nodiscard]] std::size_t size() const { return differing_.size(); }

 private:
  const Task& task_;
  const MovementMeter& meter_;
  std::vector<TablePlacement> kept_, target_;
  std::vector<double> kept_moved_, target_moved_;
  std::vector<std::size_t> differing_;
  std::function<double(const Plan&)> step_;
};

}  // namespace

namespace {

/** A table's shards as TorchRec's reshard compares them: rows, columns and rows in HBM, and the
 *  device too where `with_devices`. */
std::vector<std::tuple<std::int64_t, std::int64_t, int, int, std::int64_t, int>> shard_geometry(const TablePlacement& p,
                                                                                                bool with_devices) {
  std::vector<std::tuple<std::int64_t, std::int64_t, int, int, std::int64_t, int>> out;
  for (const Shard& s : p.shards)
    out.emplace_back(s.row_begin, s.row_end, s.col_begin, s.col_end, s.rows_in_hbm(), with_devices ? s.device : 0);
  std::sort(out.begin(), out.end());
  return out;
}

/** TorchRec's reshard moves the shards of table-wise and column-wise tables only (row blocks
 *  stay in rank order, copies on every rank). */
bool movable_by_reshard(ShardingType type) {
  return type == ShardingType::kTableWise || type == ShardingType::kColumnWise;
}

/** Whether TorchRec's reshard can turn placement `from` into `to`: the same type and shards, on
 *  other devices only where the type's shards move. */
bool reshardable(const TablePlacement& from, const TablePlacement& to) {
  const bool fixed = !movable_by_reshard(to.type);
  return from.type == to.type && shard_geometry(from, fixed) == shard_geometry(to, fixed);
}

/** The ranks a plan uses: one past its highest device. */
int ranks_of(const Plan& plan) {
  int ranks = 0;
  for (const TablePlacement& p : plan.tables)
    for (const Shard& s : p.shards) ranks = std::max(ranks, s.device + 1);
  return ranks;
}

}  // namespace

std::string torchrec_reshard_problem(const Plan& old_plan, const Plan& plan) {
  if (old_plan.groups.enabled() || plan.groups.enabled())
    return "a 2D plan: TorchRec's reshard moves the shards of DistributedModelParallel's 1D plans";
  std::map<std::string, const TablePlacement*> old;
  for (const TablePlacement& p : old_plan.tables) old[p.table] = &p;
  const int ranks = ranks_of(old_plan);
  std::size_t matched = 0;
  for (const TablePlacement& p : plan.tables) {
    const auto it = old.find(p.table);
    const std::string table = "table '" + one_line(p.table) + "'";
    if (it == old.end()) return table + " is not in the old plan: TorchRec's reshard moves the tables the job has";
    ++matched;
    if (p.type != it->second->type)
      return detail::concat(table, " changes its sharding type (", to_string(it->second->type), " to ",
                            to_string(p.type), "): TorchRec's reshard only moves shards between ranks");
    if (!reshardable(*it->second, p))
      return table + (movable_by_reshard(p.type)
                          ? " changes its shards (rows, columns or rows in HBM): TorchRec's reshard only moves shards "
                            "between ranks"
                          : " moves: TorchRec's reshard moves only table-wise and column-wise shards");
    for (const Shard& s : p.shards) {
      if (s.device >= ranks)
        return detail::concat(table, " moves to rank ", s.device, ", beyond the old plan's ", ranks,
                              ": TorchRec's reshard keeps the job's world");
    }
  }
  if (matched < old.size()) {
    for (const TablePlacement& p : old_plan.tables) {
      const bool kept = std::any_of(plan.tables.begin(), plan.tables.end(),
                                    [&](const TablePlacement& q) { return q.table == p.table; });
      if (!kept)
        return "table '" + one_line(p.table) +
               "' of the old plan is not in the plan: TorchRec's reshard moves the tables the job has";
    }
  }
  return "";
}

Movement plan_movement(const Task& task, const Plan& plan, const Plan& old_plan) {
  const auto old = old_tables(old_plan);
  check_old_plan(task, old_plan, old);
  const std::string why = find_error_in_groups(task, plan.groups);
  EMBSHARD_CHECK(why.empty(), "replan: the plan's ", why);
  return movement_from(task, plan, old, old_plan.groups);
}

namespace {

/**
 * Where a re-plan searches (replan.h, "2D plans"): for a 1D old plan the task itself; for a 2D one
 * the task of one sharding group of the layout kept from it, with the old plan's group (1D over
 * its ranks) as the old plan; every point's plan is lifted back onto the whole task.
 */
struct ReplanFrame {
  Task task;              ///< the task searched
  Plan old_plan;          ///< the old plan as `task` sees it (1D)
  ShardingGroups groups;  ///< the new plans' layout; disabled for a 1D re-plan
  /// Replicas on devices of an old replica (those that remain), each moving what its group moves;
  /// beside them, each added replica (contiguous groups in a larger world) receives every table the
  /// old plan has: `filled_bytes` at least
  int moving_replicas = 1;
  double filled_bytes = 0;
  bool world_assumed = false;  ///< the old 2D plan records no world: taken as the task's
  /// Of a 1D re-plan of a 2D plan: every replica's shards of every table (frame_1d_of_2d)
  std::optional<Plan> holders;
  /** What each device held before, as joint's price counts it (PlanOrigin::old). */
  [[nodiscard]] const Plan& origin() const { return holders ? *holders : old_plan; }
  /** The most one group may move for the whole job to move at most `whole` bytes (about). */
  [[nodiscard]] double group_bytes(double whole) const { return std::max(0.0, whole - filled_bytes) / moving_replicas; }
};

/** The old plan's 2D layout on the task's world, its ranks keeping their devices (replan.h), or
 *  nothing and why it cannot be kept (`why`). */
std::optional<ShardingGroups> kept_layout(const Task& task, const ShardingGroups& old, std::string& why) {
  const int world = task.topology.num_devices(), old_world = world_of(old, world);
  const int replicas = old_world / old.size;
  ShardingGroups layout = old;
  layout.world = world;
  if (world != old_world && old.ranks == GroupRanks::kStrided) {  // rank r of group g: device r·R + g
    if (world % replicas != 0) {
      why = detail::concat("its ", replicas, " replicas of ", old.size, " ranks (strided) do not split the task's ",
                           world, " devices into equal groups (strided groups keep their replicas and resize)");
      return std::nullopt;
    }
    layout.size = world / replicas;
  }
  if (world != old_world && old.ranks == GroupRanks::kContiguous && world % old.size != 0) {
    why = detail::concat("its contiguous sharding groups of ", old.size, " ranks do not divide the task's ", world,
                         " devices (contiguous groups keep their size and add or drop replicas)");
    return std::nullopt;
  }
  if (std::string e = find_error_in_groups(task, layout); !e.empty()) {
    why = detail::concat("its layout (", describe_groups(layout, world), ") does not suit the task: ", e);
    return std::nullopt;
  }
  return layout;
}

/** A 1D old plan's frame: the task itself. */
ReplanFrame frame_1d(const Task& task, const Plan& old_plan) { return {task, old_plan, {}, 1, 0.0, false, {}}; }

/**
 * The frame of a 1D re-plan of a 2D old plan (replan.h, "2D plans"): the whole task; as the old
 * plan, the 1D plan that keeps each table of the task's (same name and shape) on the devices of
 * one of its replicas that the task still has (a table-row-wise one's on one host), tables by
 * decreasing bytes, each on the replica keeping the fewest bytes so far, so the tables spread over
 * the replicas; as its origin every replica's shards of every table.
 */
ReplanFrame frame_1d_of_2d(const Task& task, const Plan& old_plan, const std::map<std::string, OldTable>& shapes) {
  const int world = task.topology.num_devices(), old_world = world_of(old_plan.groups, world);
  const int replicas = old_world / old_plan.groups.size;
  std::map<std::string, double> bytes;  // the task's tables the old plan has with their shape
  for (const TableSpec& t : task.workload.tables)
    if (same_shape(shapes, t)) bytes[t.name] = static_cast<double>(t.size_bytes());
  std::vector<const TablePlacement*> order;
  for (const TablePlacement& p : old_plan.tables) order.push_back(&p);
  const auto bytes_of = [&](const TablePlacement* p) {
    const auto it = bytes.find(p->table);
    return it == bytes.end() ? -1.0 : it->second;
  };
  std::stable_sort(order.begin(), order.end(),
                   [&](const TablePlacement* a, const TablePlacement* b) { return bytes_of(a) > bytes_of(b); });
  ReplanFrame f{task, {}, {}, 1, 0.0, old_plan.groups.world == 0, Plan{}};
  std::vector<double> kept_bytes(static_cast<std::size_t>(replicas), 0.0);
  for (const TablePlacement* p : order) {
    TablePlacement every = *p;
    every.shards.clear();
    std::optional<TablePlacement> kept;
    std::size_t kept_on = 0;
    for (int g = 0; g < replicas; ++g) {
      TablePlacement on = *p;
      for (Shard& s : on.shards) s.device = global_device(old_plan.groups, old_world, g, s.device);
      every.shards.insert(every.shards.end(), on.shards.begin(), on.shards.end());
      const int first = on.shards.front().device;
      const bool valid = std::all_of(on.shards.begin(), on.shards.end(), [&](const Shard& s) {
        return s.device < world && (on.type != ShardingType::kTableRowWise || task.topology.same_host(s.device, first));
      });
      const auto k = static_cast<std::size_t>(g);
      if (valid && (!kept || kept_bytes[k] < kept_bytes[kept_on])) kept = std::move(on), kept_on = k;
    }
    f.holders->tables.push_back(std::move(every));
    // A table no replica of which remains, or not the task's with its shape, takes the target's layout.
    if (!kept || bytes_of(p) < 0) continue;
    kept_bytes[kept_on] += bytes_of(p);
    f.old_plan.tables.push_back(std::move(*kept));
  }
  return f;
}

/** The frame of a 2D re-plan in the old plan's own layout (replan.h), or nothing and why not. */
std::optional<ReplanFrame> frame_2d(const Task& task, const Plan& old_plan,
                                    const std::map<std::string, OldTable>& shapes, std::string& why) {
  const std::optional<ShardingGroups> kept = kept_layout(task, old_plan.groups, why);
  if (!kept) return std::nullopt;
  const ShardingGroups& layout = *kept;
  Plan old = old_plan;
  old.groups = {};
  const int world = task.topology.num_devices();
  const int replicas = world / layout.size, old_replicas = world_of(old_plan.groups, world) / old_plan.groups.size;
  const int added = std::max(0, replicas - old_replicas);
  double kept_tables = 0.0;  // an added replica receives these; the others are created
  for (const TableSpec& t : task.workload.tables)
    if (same_shape(shapes, t)) kept_tables += static_cast<double>(t.size_bytes());
  return ReplanFrame{sharding_group_task(task, layout),
                     std::move(old),
                     layout,
                     std::min(replicas, old_replicas),
                     added * kept_tables,
                     old_plan.groups.world == 0,
                     {}};
}

/** The options in `frame`: joint plans 1D where the frame is 1D, and a group's plan has no
 *  data-parallel table (a 2D plan has none). */
ReplanOptions frame_options(ReplanOptions options, const ReplanFrame& frame) {
  if (frame.holders && options.sharder.rfind("joint", 0) == 0) {
    Spec spec = parse_spec(options.sharder);
    set_spec_value(spec, "groups", "none");  // a 1D re-plan of a 2D plan
    options.sharder = format_spec(spec);
  }
  if (frame.groups.enabled() && options.sharder.rfind("joint", 0) == 0) {
    Spec spec = parse_spec(options.sharder);
    set_spec_value(spec, "data_parallel", "false");  // a 2D plan has none (plan/sharding_groups.h)
    set_spec_value(spec, "groups", "none");          // the group's own plan is 1D
    options.sharder = format_spec(spec);
  }
  return options;
}

/** One run of `replan` (replan.h): the points found so far, their plans, the best within budget. */
class ReplanSearch {
 public:
  /** Re-plans `whole` from `old_plan` in `frame` (frame_1d, frame_2d, frame_1d_of_2d). */
  ReplanSearch(const Task& whole, const Plan& old_plan, const ReplanFrame& frame, const ReplanOptions& options,
               const Context& ctx)
      : whole_(whole), frame_(frame), task_(frame.task), old_plan_(frame.old_plan), old_(old_tables(frame.old_plan)),
        holders_(frame.holders ? old_tables(*frame.holders) : std::map<std::string, OldTable>{}),
        meter_(whole, old_plan, frame.groups), options_(frame_options(options, frame)), ctx_(ctx),
        cost_(make_cost_model(options_.cost, task_, ctx)),
        judge_(make_judge(task_, group_judge(whole, lift(Plan{}), options_.judge), ctx)),
        table_bytes_(static_cast<double>(task_.workload.total_bytes())) {}

  ReplanResult run() {
    if (options_.reshard) check_reshardable_task();
    const Plan scratch = from_scratch();
    result_.scratch_moved_bytes = meter_.movement(scratch).moved_bytes;
    Curve curve = curve_to(relabelled(task_, scratch, frame_.holders ? holders_ : old_));
    const std::optional<Plan> start = walk(curve);
    // No point of the curve fits (the kept plan does not, and under `reshard` neither may the
    // target): nothing to search from, and `finish` says why.
    if (start) search_priced(*start);
    walk_back_nearest_over_budget();
    return finish(scratch.provenance);
  }

 private:
  /** The sharder's plan of the searched task, 1D (of a 2D re-plan, the group's plan). */
  Plan from_scratch() {
    if (std::optional<Plan> plan = joint_in_layout()) return std::move(*plan);
    ShardResult r = plan_task(options_.sharder, task_, cost_.get(), ctx_);
    EMBSHARD_CHECK(r.status == ShardStatus::kOk, "replan: ", r.plan.provenance.sharder,
                   " finds no plan of the new task: ", to_string(r.status), " (", one_line(r.reason), ")");
    EMBSHARD_CHECK(!r.plan.groups.enabled(),
                   "replan: the sharder made a 2D plan; give a 1D one (e.g. joint:groups=none)");
    const std::string why = find_error_in_plan(whole_, lift(r.plan));
    EMBSHARD_CHECK(why.empty(), "replan: the sharder's plan of one sharding group is no 2D plan of the task (", why,
                   "); give one without data-parallel tables (e.g. joint:groups=none,data_parallel=false)");
    return std::move(r.plan);
  }

  /**
   * Of a 2D re-plan whose sharder is joint: joint's own plan of the whole task at the layout's
   * group size, which it searches with the replica sync (joint.h, "2D"), as the group's plan,
   * where joint chose the layout's ranks; else nothing (the group's task is planned instead).
   */
  std::optional<Plan> joint_in_layout() const {
    if (!frame_.groups.enabled() || options_.sharder.rfind("joint", 0) != 0) return std::nullopt;
    Spec spec = parse_spec(canonical_sharder_spec(options_.sharder));
    const bool balance = std::any_of(spec.pairs.begin(), spec.pairs.end(), [](const auto& kv) {
      return kv.first == "objective" && kv.second == to_string(Objective::kBalance);
    });
    if (balance) return std::nullopt;  // joint chooses 2D layouts on time
    set_spec_value(spec, "groups", std::to_string(frame_.groups.size));
    const auto cost = make_cost_model(options_.cost, whole_, ctx_);
    if (!cost->for_task(task_)) return std::nullopt;  // it cannot cost a sharding group
    ShardResult r = plan_task(format_spec(spec), whole_, cost.get(), ctx_);
    if (r.status != ShardStatus::kOk || r.plan.groups.size != frame_.groups.size ||
        r.plan.groups.ranks != frame_.groups.ranks)
      return std::nullopt;
    r.plan.groups = {};
    return std::move(r.plan);
  }

  /** The curve from the kept plan to `target`, table by table in the task's order. */
  Curve curve_to(const Plan& target) {
    std::map<std::string, const TablePlacement*> by_name;
    for (const TablePlacement& p : target.tables) by_name[p.table] = &p;
    std::vector<TablePlacement> kept, ends;
    for (const TableSpec& t : task_.workload.tables) {
      const TablePlacement& to = *by_name.at(t.name);
      kept.push_back(kept_placement(same_shape(old_, t), task_.topology.num_devices()).value_or(to));
      // Under `reshard` a table whose target changes its shards stays as it is (TorchRec moves shards only).
      ends.push_back(options_.reshard && !reshardable(kept.back(), to) ? kept.back() : to);
    }
    Curve curve(task_, meter_, std::move(kept), std::move(ends), [this](const Plan& p) { return step_of(p); });
    order_ = curve.order();
    return curve;
  }

  /**
   * The search that moved least beyond the budget, where it is faster than the best within it,
   * walked back: the curve from the kept plan to it, table by table (replan.h), whose points up to
   * the budget keep most of what it gained (at a price a search may move just too much, and the
   * next price nothing). While no point is within the budget (the kept plan does not fit the new
   * task), the next nearest is walked back too, until one is.
   */
  void walk_back_nearest_over_budget() {
    std::vector<std::size_t> over;
    for (std::size_t i = 0; i < result_.curve.size(); ++i)
      if (result_.curve[i].price >= 0 && result_.curve[i].moved_bytes > budget()) over.push_back(i);
    std::stable_sort(over.begin(), over.end(), [&](std::size_t a, std::size_t b) {
      return result_.curve[a].moved_bytes < result_.curve[b].moved_bytes;
    });
    // The next nearest too while no plan is within the budget (the kept plan does not fit).
    for (const std::size_t i : over) {
      if (best_ && result_.curve[*best_].step_ms <= result_.curve[i].step_ms) return;
      const bool had = best_.has_value();
      Curve curve = curve_to(plans_[i]);
      walk(curve, false);
      if (had || best_) return;
    }
  }

  /** Every kMostCurvePoints-th plan of the curve that fits becomes a point; returns the first
   *  that fits (the kept plan, where it fits). `ends`: the curve's ends are the kept plan and
   *  the target (result_.kept and result_.target); else they are left out (already points). */
  std::optional<Plan> walk(Curve& curve, bool ends = true) {
    const std::size_t n = curve.size();
    const std::size_t stride = std::max<std::size_t>(1, (n + kMostCurvePoints - 1) / kMostCurvePoints);
    std::optional<Plan> first;
    for (std::size_t k = 0; k <= n; k = k == n ? n + 1 : std::min(n, k + stride)) {
      if (!ends && (k == 0 || k == n)) continue;  // the kept plan and the search: points already
      Plan p = curve.plan_with(k, order_);
      if (!find_error_in_plan(whole_, lift(p)).empty()) continue;
      ReplanPoint pt = curve.point(k, order_);
      pt.step_ms = curve.step(p);
      if (ends && k == 0) result_.kept = with_share(pt), kept_fits_ = true;
      if (ends && k == n) result_.target = with_share(pt);
      if (!first) first = p;
      add(pt, std::move(p));
    }
    return first;
  }

  /** joint from `start` with movement priced (replan.h): the fixed prices, then bisected between
   *  the two that straddle the budget. From the target the search would have to move back pieces
   *  it never looks at (those off the critical devices), so only the kept side is a start. */
  void search_priced(const Plan& start) {
    const double base = step_of(start);
    const ReplicaSyncCost sync =
        frame_.groups.enabled() ? replica_sync_cost(whole_.topology, frame_.groups, whole_.workload.replica_sync_every)
                                : ReplicaSyncCost{};
    // At each price: within budget, over it, or no plan (which says nothing of the budget).
    enum class Outcome { kWithin, kOver, kNone };
    const auto at = [&](double price, double cap = std::numeric_limits<double>::infinity(), double rebuild = 0.0,
                        bool split = false) {
      // joint counts one group's bytes (the job moves them on every replica: frame_.group_bytes)
      const double per_byte = price * base / table_bytes_ * frame_.moving_replicas;
      const PlanOrigin origin{
          &start, &frame_.origin(), per_byte, frame_.group_bytes(cap), frame_.group_bytes(rebuild), split, sync};
      ShardResult r = plan_task_from(searcher(), task_, cost_.get(), origin, ctx_);
      if (r.status != ShardStatus::kOk) return Outcome::kNone;
      ReplanPoint pt;
      pt.moved_bytes = meter_.movement(r.plan).moved_bytes;
      pt.step_ms = step_of(r.plan);
      pt.tables_switched = -1;
      pt.price = price;
      if (rebuild > 0) pt.rebuilt = split ? "split" : "whole";
      const Outcome outcome = pt.moved_bytes <= budget() ? Outcome::kWithin : Outcome::kOver;
      add(pt, std::move(r.plan));
      return outcome;
    };
    double under = 0.0, over = std::numeric_limits<double>::infinity();  // within budget at `over`, not at `under`
    for (const double price : kMovePrices) {
      const Outcome o = at(price);
      if (o == Outcome::kWithin) over = std::min(over, price);
      if (o == Outcome::kOver) under = std::max(under, price);
    }
    // Bisected geometrically; below the first price within budget when price 0 was over it.
    if (under == 0 && std::isfinite(over) && over > 0) under = over / 30;
    for (int i = 0; i < kPriceBisections && under > 0 && std::isfinite(over) && under < over; ++i) {
      const double price = std::sqrt(under * over);
      const Outcome o = at(price);
      if (o == Outcome::kNone) break;
      (o == Outcome::kWithin ? over : under) = price;
    }
    // The highest price that moved too much, held to the budget: it stops where the budget ends.
    if (under > 0 && std::isfinite(budget())) at(under, budget());
    // Twice more from the same start, the overloaded devices' densest tables placed again first
    // (PlanOrigin::rebuild_bytes): whole tables only, then split ones too (where the start has
    // any) — basins the moves alone do not reach. Not where layouts are kept (joint ignores it).
    if (under > 0 && std::isfinite(budget()) && !keeps_layouts()) {
      at(under, budget(), budget());
      const bool split = std::any_of(start.tables.begin(), start.tables.end(),
                                     [](const TablePlacement& p) { return p.shards.size() > 1; });
      if (split) at(under, budget(), budget(), true);
    }
  }

  ReplanResult finish(const Provenance& scratch) {
    if (!best_) {
      double least = std::numeric_limits<double>::infinity();
      for (std::size_t i = 0; i < result_.curve.size(); ++i)
        if (eligible(plans_[i])) least = std::min(least, result_.curve[i].moved_bytes);
      EMBSHARD_CHECK(!options_.reshard || std::isfinite(least),
                     "replan --reshard: no plan that fits is one TorchRec's reshard can run (the old plan itself "
                     "does not fit the task)");
      EMBSHARD_THROW("replan: no plan that fits", options_.reshard ? " and TorchRec's reshard can run" : "",
                     " moves at most ", gib(options_.max_move_bytes), "; the least any does is ", gib(least));
    }
    result_.chosen = result_.curve[*best_];
    result_.plan = lift(std::move(plans_[*best_]));
    result_.plan.provenance = scratch;
    result_.plan.provenance.sharder = "replan(" + scratch.sharder + ")";
    result_.movement = meter_.movement(result_.plan);
    std::stable_sort(result_.curve.begin(), result_.curve.end(),
                     [](const ReplanPoint& x, const ReplanPoint& y) { return x.moved_bytes < y.moved_bytes; });
    result_.verdict = "chosen: " + describe(result_.chosen) +
                      (options_.reshard ? "; from scratch, each table keeping its shards: " : "; from scratch: ") +
                      (result_.target.step_ms > 0 ? describe(result_.target) : std::string("does not fit")) + " (" +
                      gib(result_.scratch_moved_bytes) + " before relabelling); kept: " +
                      (kept_fits_ ? describe(result_.kept) : std::string("does not fit"));
    result_.kept_fits = kept_fits_;
    if (frame_.groups.enabled())
      result_.verdict += "; " + describe_groups(frame_.groups, whole_.topology.num_devices()) +
                         ", every replica moving what its group does";
    if (frame_.world_assumed)
      result_.verdict += detail::concat("; the old plan records no world (sharding_groups.world): taken as the task's ",
                                        whole_.topology.num_devices());
    result_.task_id = whole_.id;
    result_.sharder = scratch.sharder;
    result_.judge = judge_->spec();
    result_.max_move_bytes = options_.max_move_bytes;
    result_.table_bytes = table_bytes_;
    result_.reshard = options_.reshard;
    if (options_.reshard) result_.verdict += "; the chosen plan is one TorchRec's reshard can run";
    return std::move(result_);
  }

  /** Whether the priced searches keep every table's layout (`reshard`, or `keep_layouts=true`). */
  bool keeps_layouts() const {
    return canonical_sharder_spec(searcher()).find("keep_layouts=true") != std::string::npos;
  }

  /** The sharder of the priced searches: the options' when it is joint, else joint (only joint
   *  searches from a plan, shard/sharder.h PlanOrigin). */
  std::string searcher() const {
    Spec spec = parse_spec(options_.sharder.rfind("joint", 0) == 0 ? options_.sharder : "joint:groups=none");
    if (options_.reshard) set_spec_value(spec, "keep_layouts", "true");  // only pieces move
    return format_spec(spec);
  }

  void add(ReplanPoint pt, Plan plan) {
    pt = with_share(pt);
    const bool chosen_may_be = eligible(plan);
    result_.curve.push_back(pt);
    plans_.push_back(std::move(plan));
    if (chosen_may_be && pt.moved_bytes <= budget() && (!best_ || pt.step_ms < result_.curve[*best_].step_ms))
      best_ = result_.curve.size() - 1;
  }
  /** Whether `plan` may be chosen: any plan, or under `reshard` one TorchRec's reshard can run. */
  bool eligible(const Plan& plan) const {
    return !options_.reshard || torchrec_reshard_problem(old_plan_, plan).empty();
  }
  /** Under `reshard`: the task keeps the old plan's ranks and tables (else nothing can be resharded). */
  void check_reshardable_task() const {
    const int ranks = ranks_of(old_plan_);
    EMBSHARD_CHECK(task_.topology.num_devices() == ranks, "replan --reshard: the task has ",
                   task_.topology.num_devices(), " devices but the old plan uses ", ranks,
                   " ranks (its highest device + 1); TorchRec's reshard keeps the running job's world (re-plan "
                   "without --reshard)");
    for (const TableSpec& t : task_.workload.tables)
      EMBSHARD_CHECK(same_shape(old_, t) != nullptr, "replan --reshard: table '", one_line(t.name),
                     "' is not in the old plan with its shape; TorchRec's reshard moves the tables the job has");
    EMBSHARD_CHECK(old_.size() == task_.workload.tables.size(),
                   "replan --reshard: the old plan has tables the task does not; TorchRec's reshard moves the "
                   "tables the job has");
  }
  ReplanPoint with_share(ReplanPoint pt) const {
    pt.moved_share = pt.moved_bytes / table_bytes_;
    return pt;
  }
  double budget() const { return options_.max_move_bytes * (1 + 1e-12); }
  /** A plan of the searched task as a plan of the whole task (a 2D re-plan's layout). */
  Plan lift(Plan plan) const {
    plan.groups = frame_.groups;
    return plan;
  }
  double step_of(const Plan& plan) const {
    return objective_value(judge_->estimate(whole_, lift(plan), ctx_), Objective::kStep);
  }
  const Task& whole_;
  const ReplanFrame& frame_;
  const Task& task_;
  const Plan& old_plan_;
  std::map<std::string, OldTable> old_;      ///< the old plan's tables as the searched task keeps them
  std::map<std::string, OldTable> holders_;  ///< and as the devices hold them (frame.holders, where set)
  MovementMeter meter_;
  const ReplanOptions options_;
  const Context& ctx_;
  std::unique_ptr<CostModel> cost_, judge_;
  double table_bytes_;
  std::vector<std::size_t> order_;
  ReplanResult result_;
  std::vector<Plan> plans_;  ///< the plan of each point of result_.curve (before it is sorted)
  std::optional<std::size_t> best_;
  bool kept_fits_ = false;
};

/** A re-plan's result, or why it found none (the search's one-line error). */
struct Attempt {
  std::optional<ReplanResult> result;
  std::string why;        ///< without its leading "replan: "
  bool searched = false;  ///< the search ran (else the layout could not be kept or was not asked for)
};

Attempt attempt(const Task& task, const Plan& old_plan, const ReplanFrame& frame, const ReplanOptions& options,
                const Context& ctx) {
  try {
    return {ReplanSearch(task, old_plan, frame, options, ctx).run(), "", true};
  } catch (const Error& e) {
    std::string why = e.what();
    if (why.rfind("replan: ", 0) == 0) why.erase(0, 8);
    return {std::nullopt, why, true};
  }
}

/**
 * A 2D old plan re-planned in its own layout, where that can be kept and the budget covers what
 * its added replicas receive, and in 1D (replan.h, "2D plans"): the faster chosen plan wins, the
 * layout kept on a tie; the verdict says what the other found.
 */
ReplanResult replan_2d(const Task& task, const Plan& old_plan, const std::map<std::string, OldTable>& shapes,
                       const ReplanOptions& options, const Context& ctx) {
  Attempt in_layout, in_1d;
  if (options.layout != ReplanLayout::k1D) {
    if (std::optional<ReplanFrame> frame = frame_2d(task, old_plan, shapes, in_layout.why)) {
      if (frame->filled_bytes > options.max_move_bytes)
        in_layout = {
            std::nullopt,
            detail::concat("no plan moves at most ", gib(options.max_move_bytes), ": the added replicas ",
                           "each receive every table the old plan has, ", gib(frame->filled_bytes), " or more"),
            true};
      else
        in_layout = attempt(task, old_plan, *frame, options, ctx);
    }
    EMBSHARD_CHECK(in_layout.result || options.layout != ReplanLayout::kKept,
                   "replan: in the old plan's 2D layout: ", in_layout.why);
  }
  if (options.layout != ReplanLayout::kKept) {
    const ReplanFrame flat = frame_1d_of_2d(task, old_plan, shapes);
    in_1d = attempt(task, old_plan, flat, options, ctx);
  }
  if (!in_layout.result && !in_1d.result) {
    if (options.layout == ReplanLayout::k1D || in_layout.why == in_1d.why) EMBSHARD_THROW("replan: ", in_1d.why);
    EMBSHARD_THROW("replan: in the old plan's 2D layout: ", in_layout.why, "; in 1D: ", in_1d.why);
  }
  const bool best = options.layout == ReplanLayout::kBest;
  if (in_layout.result && (!in_1d.result || in_layout.result->chosen.step_ms <= in_1d.result->chosen.step_ms)) {
    ReplanResult r = std::move(*in_layout.result);
    if (best)
      r.verdict += "; in 1D: " + (in_1d.result ? describe(in_1d.result->chosen) : "no plan (" + in_1d.why + ")");
    return r;
  }
  ReplanResult r = std::move(*in_1d.result);
  if (!best) return r;
  if (in_layout.result)
    r.verdict += "; 1D, faster than the old plan's 2D layout kept (" + describe(in_layout.result->chosen) + ")";
  else
    r.verdict += (in_layout.searched ? "; 1D: no plan in the old plan's 2D layout ("
                                     : "; 1D: the old plan's 2D layout cannot be kept (") +
                 in_layout.why + ")";
  return r;
}

}  // namespace

std::string to_string(ReplanLayout layout) {
  switch (layout) {
    case ReplanLayout::kBest: return "best";
    case ReplanLayout::kKept: return "kept";
    case ReplanLayout::k1D: return "1d";
  }
  return "?";
}

ReplanLayout parse_replan_layout(const std::string& text, const std::string& what) {
  for (const ReplanLayout l : {ReplanLayout::kBest, ReplanLayout::kKept, ReplanLayout::k1D})
    if (text == to_string(l)) return l;
  EMBSHARD_THROW(what, ": expected best, kept or 1d, got '", one_line(text), "'");
}

ReplanResult replan(const Task& task, const Plan& old_plan, const ReplanOptions& options, const Context& ctx) {
  const auto shapes = old_tables(old_plan);
  check_old_plan(task, old_plan, shapes);
  EMBSHARD_CHECK(!(options.max_move_bytes < 0), "replan: the most bytes to move must be ≥ 0");
  EMBSHARD_CHECK(!options.reshard || !old_plan.groups.enabled(),
                 "replan --reshard: the old plan is 2D (DMPCollection); TorchRec's reshard moves the shards of "
                 "DistributedModelParallel's 1D plans");
  if (old_plan.groups.enabled()) return replan_2d(task, old_plan, shapes, options, ctx);
  const ReplanFrame frame = frame_1d(task, old_plan);
  return ReplanSearch(task, old_plan, frame, options, ctx).run();
}

std::string replan_json(const ReplanResult& r) {
  const auto point = [](const ReplanPoint& p) {
    return nlohmann::json{{"moved_bytes", p.moved_bytes},
                          {"moved_share", p.moved_share},
                          {"step_ms", p.step_ms},
                          {"tables_switched", p.tables_switched},
                          {"price", p.price},
                          {"rebuilt", p.rebuilt}};
  };
  nlohmann::json curve = nlohmann::json::array();
  for (const ReplanPoint& p : r.curve) curve.push_back(point(p));
  return nlohmann::json{{"chosen", point(r.chosen)},
                        {"kept", point(r.kept)},
                        {"target", point(r.target)},
                        {"scratch_moved_bytes", r.scratch_moved_bytes},
                        {"curve", curve},
                        {"sent_bytes", r.movement.sent},
                        {"received_bytes", r.movement.received},
                        {"created_bytes", r.movement.created_bytes},
                        {"reshard", r.reshard},
                        {"verdict", r.verdict}}
      .dump();
}

std::string replan_curve_csv(const ReplanResult& r) {
  std::ostringstream out;
  out << "moved_bytes,moved_share,step_ms,tables_switched,price,chosen,rebuilt\n";
  for (const ReplanPoint& p : r.curve) {
    char row[160];
    const bool chosen = p.moved_bytes == r.chosen.moved_bytes && p.step_ms == r.chosen.step_ms;
    std::snprintf(row, sizeof row, "%.0f,%.6f,%.4f,%d,%g,%s,%s\n", p.moved_bytes, p.moved_share, p.step_ms,
                  p.tables_switched, p.price, chosen ? "yes" : "no", p.rebuilt.empty() ? "-" : p.rebuilt.c_str());
    out << row;
  }
  return out.str();
}

}  // namespace embshard
