// Every row cut at once by a linear program (row_cuts.h).
#include "shard/joint/row_cuts.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <limits>
#include <string>
#include <utility>

#include "embshard/milp/cbc_solver.h"
#include "embshard/milp/milp.h"

namespace embshard::detail::joint {
namespace {

/** A piece's two variables: rows grown and rows taken away, as shares of its rows. */
struct PieceVars {
  int grow = -1;
  int shrink = -1;
};

/** Terms of a linear form: Σ coef · variable, plus a constant. */
struct Linear {
  std::vector<MilpTerm> terms;
  double constant = 0.0;
};

class Program {
 public:
  Program(const Topology& topology, const std::vector<std::vector<RowCutPiece>>& tables, const RowCutDevices& devices,
          bool input_charged, double trust, const std::optional<RowCutMoves>& moves = {})
      : topology_(topology), tables_(tables), devices_(devices) {
    m_fw_ = lp_.add_continuous("m_fw", 0.0, kMilpInfinity, 1.0);
    m_bw_ = lp_.add_continuous("m_bw", 0.0, kMilpInfinity, 1.0);
    add_pieces(trust);
    add_compute();
    if (input_charged && topology.num_devices() > 1) {
      m_in_ = lp_.add_continuous("m_in", 0.0, kMilpInfinity, 1.0);
      add_input();
    }
    add_memory();
    if (moves) add_moves(*moves);
  }

  /** The program's optimum, where the solver proves one below the cuts as they are within `time_limit_s`. */
  [[nodiscard]] std::optional<std::vector<double>> solve(double time_limit_s) const {
    CbcOptions options;
    options.time_limit_s = time_limit_s;
    const MilpResult result = solve_with_cbc(lp_, options);
    if (result.status != MilpStatus::kOptimal) return std::nullopt;
    const double now = now_by_[0] + now_by_[1] + now_by_[2];  // the objective at the cuts as they are (none moved)
    if (result.objective >= now - 1e-9 * std::max(1.0, now)) return std::nullopt;
    return result.values;
  }

  /** The objective at `rows` (each table's row counts): each M the largest of its forms and floors. */
  [[nodiscard]] double value_at(const std::vector<std::vector<std::int64_t>>& rows) const {
    std::vector<double> values(static_cast<std::size_t>(lp_.num_variables()), 0.0);
    for (std::size_t t = 0; t < tables_.size(); ++t)
      for (std::size_t i = 0; i < tables_[t].size(); ++i) {
        const double r = static_cast<double>(tables_[t][i].rows);
        const double change = (static_cast<double>(rows[t][i]) - r) / r;
        values[static_cast<std::size_t>(vars_[t][i].grow)] = std::max(change, 0.0);
        values[static_cast<std::size_t>(vars_[t][i].shrink)] = std::max(-change, 0.0);
      }
    double total = 0.0;
    for (const int m : {m_fw_, m_bw_, m_in_}) {
      if (m < 0) continue;
      double largest = lp_.variables[static_cast<std::size_t>(m)].lower;
      for (const auto& [form, of] : forms_) {
        if (of != m) continue;
        double v = form.constant;
        for (const MilpTerm& term : form.terms) v += term.coef * values[static_cast<std::size_t>(term.var)];
        largest = std::max(largest, v);
      }
      total += largest;
    }
    return total;
  }

  /** Each table's new row counts from a solution: cuts rounded in row order, every piece ≥ 1 row. */
  [[nodiscard]] std::vector<std::vector<std::int64_t>> rows(const std::vector<double>& values) const {
    std::vector<std::vector<std::int64_t>> out;
    for (std::size_t t = 0; t < tables_.size(); ++t) {
      const std::vector<RowCutPiece>& pieces = tables_[t];
      std::int64_t total = 0;
      for (const RowCutPiece& p : pieces) total += p.rows;
      std::vector<std::int64_t> sizes;
      std::int64_t begin = 0;
      double cut = 0.0;
      for (std::size_t i = 0; i < pieces.size(); ++i) {
        const PieceVars& v = vars_[t][i];
        cut += static_cast<double>(pieces[i].rows) *
               (1.0 + values[static_cast<std::size_t>(v.grow)] - values[static_cast<std::size_t>(v.shrink)]);
        const auto left = static_cast<std::int64_t>(pieces.size() - i - 1);  // pieces after this one
        const std::int64_t end =
            i + 1 == pieces.size() ? total : std::clamp<std::int64_t>(std::llround(cut), begin + 1, total - left);
        sizes.push_back(end - begin);
        begin = end;
      }
      out.push_back(std::move(sizes));
    }
    return out;
  }

 private:
  /** The variables, and each table's rows kept: Σ rows_p (g_p − s_p) / rows = 0. */
  void add_pieces(double trust) {
    on_device_.resize(static_cast<std::size_t>(topology_.num_devices()));
    for (std::size_t t = 0; t < tables_.size(); ++t) {
      std::int64_t total = 0;
      for (const RowCutPiece& p : tables_[t]) total += p.rows;
      std::vector<MilpTerm> kept;
      std::vector<PieceVars>& vars = vars_.emplace_back();
      for (std::size_t i = 0; i < tables_[t].size(); ++i) {
        const RowCutPiece& p = tables_[t][i];
        const std::string name = std::to_string(t) + "_" + std::to_string(i);
        const double rows = static_cast<double>(p.rows);
        const PieceVars v{lp_.add_continuous("g" + name, 0.0, trust),
                          lp_.add_continuous("s" + name, 0.0, std::min(trust, (rows - 1.0) / rows))};
        vars.push_back(v);
        kept.push_back({v.grow, rows / static_cast<double>(total)});
        kept.push_back({v.shrink, -rows / static_cast<double>(total)});
        on_device_[static_cast<std::size_t>(p.device)].emplace_back(t, i);
      }
      lp_.add_constraint("rows" + std::to_string(t), std::move(kept), MilpSense::kEqual, 0.0);
    }
  }

  /** Σ over d's pieces of `per_row(piece)` × its rows × (g − s), scaled by `scale`, added to `form`. */
  template <typename PerRow>
  void add_rows_of(int device, double scale, PerRow per_row, Linear& form) const {
    for (const auto& [t, i] : on_device_[static_cast<std::size_t>(device)]) {
      const RowCutPiece& p = tables_[t][i];
      const auto [up, down] = per_row(p);
      const PieceVars& v = vars_[t][i];
      form.terms.push_back({v.grow, scale * up * static_cast<double>(p.rows)});
      form.terms.push_back({v.shrink, -scale * down * static_cast<double>(p.rows)});
    }
  }

  /** form ≤ m: a row, or (no variable in it) a floor under m. Tracks the cuts' own value of m. */
  void at_most(Linear form, int m, const std::string& name) {
    const auto i = static_cast<std::size_t>(m);
    double& now = now_by_[m == m_fw_ ? 0 : m == m_bw_ ? 1 : 2];
    now = std::max(now, form.constant);
    if (form.terms.empty()) {
      lp_.variables[i].lower = std::max(lp_.variables[i].lower, form.constant);
    } else {
      forms_.emplace_back(form, m);
      form.terms.push_back({m, -1.0});
      lp_.add_constraint(name, std::move(form.terms), MilpSense::kLessEqual, -form.constant);
    }
  }

  void add_compute() {
    for (int d = 0; d < topology_.num_devices(); ++d) {
      const DeviceCompute& c = devices_.compute[static_cast<std::size_t>(d)];
      Linear fw{{}, c.fw_ms}, bw{{}, c.bw_ms};
      add_rows_of(
          d, 1.0,
          [](const RowCutPiece& p) {
            return std::pair{p.grow.fw_ms, p.shrink.fw_ms};
          },
          fw);
      add_rows_of(
          d, 1.0,
          [](const RowCutPiece& p) {
            return std::pair{p.grow.bw_ms, p.shrink.bw_ms};
          },
          bw);
      at_most(std::move(fw), m_fw_, "fw" + std::to_string(d));
      at_most(std::move(bw), m_bw_, "bw" + std::to_string(d));
    }
  }

  /** Device d's input bytes as a linear form, times `scale`. */
  void add_input_of(int device, double scale, Linear& form) const {
    form.constant += scale * devices_.input_bytes[static_cast<std::size_t>(device)];
    add_rows_of(
        device, scale,
        [](const RowCutPiece& p) {
          return std::pair{p.input_bytes_per_row, p.input_bytes_per_row};
        },
        form);
  }

  /** The link terms of each device's input all-to-all (file comment), each ≤ M_in. */
  void add_input() {
    const int n = topology_.num_devices();
    const int per_host = topology_.host_size();
    double total = 0.0;
    for (const double b : devices_.input_bytes) total += b;
    const double latency_ms = topology_.a2a_latency_us / 1000.0;
    for (int d = 0; d < n; ++d) {
      const int host = topology_.host_of(d);
      const int first = host * per_host, last = std::min(n, first + per_host);
      const int peers_in_host = last - first - 1;
      const auto ms_per_byte = [&](double gbps) { return gbps > 0.0 ? 1.0 / (gbps * 1e6 * n) : 0.0; };
      const double intra = ms_per_byte(topology_.intra_gbps(d)), inter = ms_per_byte(topology_.inter_gbps(d));
      Linear sent_intra{{}, latency_ms}, received_intra{{}, latency_ms}, sent_inter{{}, latency_ms},
          received_inter{{}, latency_ms + total * inter};
      add_input_of(d, intra * peers_in_host, sent_intra);
      add_input_of(d, inter * (n - (last - first)), sent_inter);
      for (int e = first; e < last; ++e) {
        if (e != d) add_input_of(e, intra, received_intra);
        add_input_of(e, -inter, received_inter);
      }
      const std::string name = std::to_string(d);
      if (topology_.half_duplex) {
        at_most(sum(sent_intra, received_intra, latency_ms), m_in_, "in_intra" + name);
        at_most(sum(sent_inter, received_inter, latency_ms), m_in_, "in_inter" + name);
      } else {
        at_most(std::move(sent_intra), m_in_, "in_sent_intra" + name);
        at_most(std::move(received_intra), m_in_, "in_received_intra" + name);
        at_most(std::move(sent_inter), m_in_, "in_sent_inter" + name);
        at_most(std::move(received_inter), m_in_, "in_received_inter" + name);
      }
    }
  }

  /** a + b, the latency they both carry counted once; a variable's terms added. */
  static Linear sum(const Linear& a, const Linear& b, double latency_ms) {
    Linear s{a.terms, a.constant + b.constant - latency_ms};
    for (const MilpTerm& term : b.terms) {
      const auto same =
          std::find_if(s.terms.begin(), s.terms.end(), [&](const MilpTerm& x) { return x.var == term.var; });
      if (same == s.terms.end())
        s.terms.push_back(term);
      else
        same->coef += term.coef;
    }
    return s;
  }

  /** Each device's HBM, in GB: Σ_p hbm_p · rows_p · (g − s) ≤ free. */
  void add_memory() {
    for (int d = 0; d < topology_.num_devices(); ++d) {
      Linear used;
      add_rows_of(
          d, 1e-9,
          [](const RowCutPiece& p) {
            return std::pair{p.hbm_bytes_per_row, p.hbm_bytes_per_row};
          },
          used);
      if (used.terms.empty()) continue;
      lp_.add_constraint("hbm" + std::to_string(d), std::move(used.terms), MilpSense::kLessEqual,
                         1e-9 * devices_.hbm_free_bytes[static_cast<std::size_t>(d)]);
    }
  }

  /** Re-planning (file comment): each cut's shift as rows gained before it and after it, their
   *  moved bytes within the budget left, priced in the objective. */
  void add_moves(const RowCutMoves& moves) {
    Linear moved;
    double rounding = 0.0;  // bytes: a row either way at each cut
    for (std::size_t t = 0; t < tables_.size(); ++t) {
      const std::vector<RowCutPiece>& pieces = tables_[t];
      std::vector<MilpTerm> shift;  // Σ_{p up to the cut} r_p (g_p − s_p)
      for (std::size_t i = 0; i + 1 < pieces.size(); ++i) {
        const double rows = static_cast<double>(pieces[i].rows);
        shift.push_back({vars_[t][i].grow, rows});
        shift.push_back({vars_[t][i].shrink, -rows});
        const std::string name = std::to_string(t) + "_" + std::to_string(i);
        const double before = pieces[i].moved_per_row_at_end, after = pieces[i + 1].moved_per_row_at_start;
        const int right = lp_.add_continuous("R" + name, 0.0, kMilpInfinity, moves.ms_per_byte * before);
        const int left = lp_.add_continuous("L" + name, 0.0, kMilpInfinity, moves.ms_per_byte * after);
        std::vector<MilpTerm> cut = shift;
        cut.push_back({right, -1.0});
        cut.push_back({left, 1.0});
        lp_.add_constraint("cut" + name, std::move(cut), MilpSense::kEqual, 0.0);
        moved.terms.push_back({right, 1e-9 * before});
        moved.terms.push_back({left, 1e-9 * after});
        rounding += std::max(before, after);
      }
    }
    // No budget: the price alone. A row either way per cut is left for the rounding (`rows`).
    if (!moved.terms.empty() && moves.bytes_left < std::numeric_limits<double>::infinity())
      lp_.add_constraint("moved", std::move(moved.terms), MilpSense::kLessEqual,
                         1e-9 * std::max(moves.bytes_left - rounding, 0.0));
  }

  const Topology& topology_;
  const std::vector<std::vector<RowCutPiece>>& tables_;
  const RowCutDevices& devices_;
  MilpModel lp_;
  int m_fw_ = -1, m_bw_ = -1, m_in_ = -1;
  std::vector<std::vector<PieceVars>> vars_;                                 ///< per table, per piece
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> on_device_;  ///< (table, piece) per device
  std::vector<std::pair<Linear, int>> forms_;                                ///< each row bounding an M, and which M
  std::vector<double> now_by_ = std::vector<double>(3, 0.0);  ///< M_fw, M_bw, M_in at the cuts as they are
};

/** Whether every figure the program is built from is finite (else it is not built). */
bool finite(const std::vector<std::vector<RowCutPiece>>& tables, const RowCutDevices& devices) {
  const auto all = [](std::initializer_list<double> xs) {
    return std::all_of(xs.begin(), xs.end(), [](double x) { return std::isfinite(x); });
  };
  for (const auto& pieces : tables)
    for (const RowCutPiece& p : pieces)
      if (!all({p.grow.fw_ms, p.grow.bw_ms, p.shrink.fw_ms, p.shrink.bw_ms, p.input_bytes_per_row, p.hbm_bytes_per_row,
                p.moved_per_row_at_end, p.moved_per_row_at_start}))
        return false;
  for (std::size_t d = 0; d < devices.compute.size(); ++d)
    if (!all({devices.compute[d].fw_ms, devices.compute[d].bw_ms, devices.input_bytes[d], devices.hbm_free_bytes[d]}))
      return false;
  return true;
}

}  // namespace

double row_cut_objective(const Topology& topology, const std::vector<std::vector<RowCutPiece>>& tables,
                         const RowCutDevices& devices, bool input_charged, double trust,
                         const std::vector<std::vector<std::int64_t>>& rows) {
  return Program(topology, tables, devices, input_charged, trust).value_at(rows);
}

std::optional<std::vector<std::vector<std::int64_t>>> cut_rows(const Topology& topology,
                                                               const std::vector<std::vector<RowCutPiece>>& tables,
                                                               const RowCutDevices& devices, bool input_charged,
                                                               double trust, double time_limit_s,
                                                               const std::optional<RowCutMoves>& moves) {
  if (tables.empty() || !(time_limit_s > 0.0) || !finite(tables, devices)) return std::nullopt;
  if (moves && !(std::isfinite(moves->ms_per_byte) && moves->ms_per_byte >= 0.0 && !std::isnan(moves->bytes_left)))
    return std::nullopt;
  const Program program(topology, tables, devices, input_charged, trust, moves);
  const std::optional<std::vector<double>> solution = program.solve(time_limit_s);
  if (!solution) return std::nullopt;
  std::vector<std::vector<std::int64_t>> rows = program.rows(*solution);
  for (std::size_t t = 0; t < tables.size(); ++t)
    for (std::size_t i = 0; i < tables[t].size(); ++i)
      if (rows[t][i] != tables[t][i].rows) return rows;
  return std::nullopt;
}

}  // namespace embshard::detail::joint
