// embshard._embshard: the Python bindings — thin, one call per arrow of the data flow
// (docs/architecture.md). Objects cross as the library's own types (Task, Plan) or as the JSON the
// library already writes; every check and message stays in C++. embshard.Error carries the
// library's one-line message; long calls release the GIL. No libtorch here (docs/python.md).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "embshard/core/clock.h"
#include "embshard/core/context.h"
#include "embshard/core/error.h"
#include "embshard/core/version.h"
#include "embshard/data/data_io.h"
#include "embshard/data/derived_stats.h"
#include "embshard/data/dlrm_file.h"
#include "embshard/data/index_batch.h"
#include "embshard/data/task_lookups.h"
#include "embshard/data/topology.h"
#include "embshard/eval/compare.h"
#include "embshard/eval/cost_model_registry.h"
#include "embshard/eval/evaluator.h"
#include "embshard/eval/replan.h"
#include "embshard/eval/task_gen.h"
#include "embshard/eval/what_if.h"
#include "embshard/plan/plan_io.h"
#include "embshard/plan/torchrec_export.h"
#include "embshard/profile/compute_sampler.h"
#include "embshard/profile/cost_sample.h"
#include "embshard/shard/sharder.h"
#include "embshard/shard/torchrec_reservation.h"

namespace py = pybind11;

namespace embshard::python {
namespace {

/**
 * The warnings of one call, collected from any of its threads while the GIL is released, then
 * issued as Python RuntimeWarnings (so `warnings` filters and `logging.captureWarnings` see them).
 */
class CallWarnings {
 public:
  void add(const std::string& message) {
    const std::lock_guard<std::mutex> lock(mutex_);
    messages_.push_back(message);
  }
  /** Issues the collected warnings; needs the GIL. Raises the Python error if a filter turns one into one. */
  void issue() {
    std::vector<std::string> messages;
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      messages.swap(messages_);
    }
    for (const std::string& m : messages) {
      if (PyErr_WarnEx(PyExc_RuntimeWarning, m.c_str(), 2) != 0) throw py::error_already_set();
    }
  }

 private:
  std::mutex mutex_;
  std::vector<std::string> messages_;
};

/**
 * Runs `body(ctx)` with the GIL released under the context of one call (its seed and threads,
 * warnings collected), then issues the warnings; returns what `body` returns. Errors are thrown.
 */
template <class Body>
auto run_call(std::uint64_t seed, int threads, Body&& body) {
  const auto warnings = std::make_shared<CallWarnings>();
  Context ctx;
  ctx.seed = seed;
  ctx.num_threads = std::max(1, threads);
  ctx.verbosity = LogLevel::kWarning;
  ctx.sink = [warnings](LogLevel level, const std::string& message) {
    if (level == LogLevel::kWarning) warnings->add(message);
  };
  std::optional<decltype(body(ctx))> out;
  {
    py::gil_scoped_release release;
    out.emplace(body(ctx));
  }
  warnings->issue();
  return std::move(*out);
}

/** A cost-sample file open for appending; `close` (or leaving a `with` block) releases its lock. */
struct ComputeSampleFile {
  std::shared_ptr<CostSampleWriter> file;
  [[nodiscard]] CostSampleWriter& writer() const {
    EMBSHARD_CHECK(file != nullptr, "compute samples: the file is closed");
    return *file;
  }
};

/** A plan with the status the sharder reported (infeasible plans are empty). */
struct PlanResult {
  Plan plan;
  std::string status = "ok";
  std::string reason;
};

PlanResult plan_with(const Task& task, const std::string& sharder, const std::string& cost, std::uint64_t seed,
                     int threads) {
  ShardResult r = run_call(seed, threads, [&](const Context& ctx) {
    std::unique_ptr<CostModel> model;
    if (make_sharder(sharder)->uses_cost_model()) model = make_cost_model(cost, task, ctx);
    return plan_task(sharder, task, model.get(), ctx);
  });
  return {std::move(r.plan), to_string(r.status), std::move(r.reason)};
}

/** A topology in the task file's explicit form (presets expanded), as a dict. */
py::dict topology_dict(const Topology& topo) {
  py::list devices;
  for (const Device& d : topo.devices) {
    py::dict dev;
    dev["hbm_bytes"] = d.hbm_bytes;
    dev["uvm_bytes"] = d.uvm_bytes;
    dev["hbm_gbps"] = d.hbm_gbps;
    dev["uvm_gbps"] = d.uvm_gbps;
    if (d.intra_host_gbps > 0) dev["intra_host_gbps"] = d.intra_host_gbps;  // a host's own links (mixed hardware)
    if (d.inter_host_gbps > 0) dev["inter_host_gbps"] = d.inter_host_gbps;
    devices.append(dev);
  }
  py::dict out;
  out["name"] = topo.name;
  out["device_kind"] = topo.device_kind;
  out["devices_per_host"] = topo.devices_per_host;
  out["intra_host_gbps"] = topo.intra_host_gbps;
  out["inter_host_gbps"] = topo.inter_host_gbps;
  out["a2a_latency_us"] = topo.a2a_latency_us;
  out["half_duplex"] = topo.half_duplex;
  out["devices"] = devices;
  return out;
}

py::list registry_entries(const std::vector<RegistryEntryInfo>& entries) {
  py::list out;
  for (const RegistryEntryInfo& e : entries) {
    py::list params;
    for (const ParamSpec& p : e.params) {
      py::dict d;
      d["name"] = p.name;
      d["type"] = to_string(p.type);
      d["default"] = p.default_value;
      d["min"] = p.min_value ? py::cast(*p.min_value) : py::none();
      d["max"] = p.max_value ? py::cast(*p.max_value) : py::none();
      d["choices"] = p.choices;
      d["doc"] = p.doc;
      params.append(d);
    }
    py::dict entry;
    entry["name"] = e.name;
    entry["describe"] = e.describe;
    entry["params"] = params;
    out.append(entry);
  }
  return out;
}

py::list list_family(const std::string& family) {
  if (family == "sharder") return registry_entries(sharder_registry().list());
  if (family == "cost") return registry_entries(cost_model_registry().list());
  if (family == "topology") return registry_entries(topology_registry().list());
  if (family == "protocol") return registry_entries(task_protocol_registry().list());
  if (family == "backend") {
    py::list out;
    for (const std::string& b : eval_backends()) {
      py::dict d;
      d["name"] = b;
      out.append(d);
    }
    return out;
  }
  throw Error("embshard.list: unknown family '" + family + "' (expected sharder, cost, topology, protocol or backend)");
}

/** Statistics of one table's CSR batch: offsets (B + 1 entries) and indices, int32 or int64. */
template <typename IndexT, typename OffsetT>
std::string csr_stats(py::array_t<IndexT, py::array::c_style> indices, py::array_t<OffsetT, py::array::c_style> offsets,
                      std::int64_t num_rows, const std::string& where) {
  EMBSHARD_CHECK(indices.ndim() == 1 && offsets.ndim() == 1, where,
                 ": indices and offsets must be one-dimensional arrays");
  EMBSHARD_CHECK(offsets.size() >= 2, where, ": offsets needs batch_size + 1 >= 2 entries, got ", offsets.size());
  EMBSHARD_CHECK(num_rows >= 1 && num_rows <= kMaxTableRows, where, ": num_rows must lie in [1, ", kMaxTableRows,
                 "], got ", num_rows);
  TableBatch batch;
  batch.offsets.assign(offsets.data(), offsets.data() + offsets.size());
  // Offsets are re-based to start at 0; checked first, so a huge or decreasing one is an error,
  // never an overflow.
  const std::int64_t base = batch.offsets.front();
  for (std::size_t i = 0; i < batch.offsets.size(); ++i) {
    EMBSHARD_CHECK(i == 0 || batch.offsets[i] >= batch.offsets[i - 1], where, ": offsets decrease at entry ", i, " (",
                   batch.offsets[i - (i > 0)], " then ", batch.offsets[i], ")");
    std::int64_t rebased = 0;
    EMBSHARD_CHECK(!__builtin_sub_overflow(batch.offsets[i], base, &rebased), where, ": offset ", batch.offsets[i],
                   " at entry ", i, " is too far from the first, ", base);
    batch.offsets[i] = rebased;
  }
  EMBSHARD_CHECK(batch.offsets.back() == indices.size(), where, ": offsets end at ", batch.offsets.back(),
                 " lookups but indices holds ", indices.size());
  batch.indices.assign(indices.data(), indices.data() + indices.size());
  std::string err;
  {
    py::gil_scoped_release release;
    err = find_error_in_batch(batch, num_rows, where);
  }
  EMBSHARD_CHECK(err.empty(), err);
  TableStats stats;
  {
    py::gil_scoped_release release;
    stats = compute_table_stats(batch);
  }
  stats.num_rows = num_rows;  // the table's own size, not the 100-row floor
  return stats_to_json({stats});
}

/** `judge` with the exchange options Python gave (empty: as the judge says) set where it takes them. */
std::string judge_with_exchanges(std::string judge, const std::string& input_comm, const std::string& exchanges) {
  if (!input_comm.empty()) judge = set_judge_value(judge, "input_comm", input_comm);
  if (!exchanges.empty()) judge = set_judge_value(judge, "exchanges", exchanges);
  return judge;
}

py::dict compare_row_dict(const CompareRow& r, const Task& task, const Plan& plan) {
  py::dict d;
  d["task_id"] = r.task_id;
  d["sharder"] = r.sharder;
  d["status"] = r.status;
  d["reason"] = r.reason;
  d["plan_ms"] = r.plan_ms;
  d["lower_bound_ms"] = r.lower_bound_ms;
  d["step_ms"] = r.eval.step_ms;
  d["max_sum_ms"] = r.eval.max_sum_ms;
  d["balance"] = r.eval.balance;
  d["evaluation_json"] = r.ok() ? eval_result_json(r.eval, task, plan) : std::string();
  return d;
}

}  // namespace
}  // namespace embshard::python

PYBIND11_MODULE(_embshard, m) {
  using namespace embshard;
  using namespace embshard::python;
  m.doc() = "embshard's C++ library (use the embshard package, not this module)";

  // embshard::Error → embshard.Error (a ValueError) with the library's message.
  py::register_exception<Error>(m, "Error", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InternalError& e) {
      PyErr_SetString(PyExc_RuntimeError, (std::string("embshard internal error: ") + e.what()).c_str());
    }
  });

  m.def("version", &embshard_version);

  py::class_<Task>(m, "Task")
      .def_static("from_json", &task_from_json, py::arg("text"), py::arg("where"))
      .def_static("from_file", &read_task_file, py::arg("path"))
      .def_static(
          "generate",
          [](const std::string& protocol, std::uint64_t seed, int index, std::uint64_t pool_seed) {
            const auto gen = make_task_generator(protocol);
            return gen->generate(TableSource::from_pool(pool_seed, gen->batch_size()), seed, index);
          },
          py::arg("protocol"), py::arg("seed") = 0, py::arg("index") = 0, py::arg("pool_seed") = 0)
      .def_static("default", &default_task)
      .def("to_json", &task_to_json)
      .def_property_readonly("id", [](const Task& t) { return t.id; })
      .def_property_readonly("batch_size", [](const Task& t) { return t.workload.batch_size; })
      .def_property_readonly("num_devices", [](const Task& t) { return t.topology.num_devices(); })
      .def_property_readonly("topology", [](const Task& t) { return t.topology.name; })
      .def_property_readonly("num_tables", [](const Task& t) { return t.workload.tables.size(); })
      .def_property_readonly("total_bytes", [](const Task& t) { return t.workload.total_bytes(); })
      .def("topology_detail", [](const Task& t) { return topology_dict(t.topology); })
      .def("__repr__", [](const Task& t) {
        return "<embshard.Task '" + t.id + "': " + std::to_string(t.workload.tables.size()) + " tables on " +
               std::to_string(t.topology.num_devices()) + " devices>";
      });

  py::class_<PlanResult>(m, "PlanResult")
      .def_static(
          "from_json",
          [](const std::string& text, const std::string& where) {
            return PlanResult{plan_from_json(text, where), "ok", ""};
          },
          py::arg("text"), py::arg("where"))
      .def_static("failed",
                  [](const std::string& reason) {
                    return PlanResult{{}, "infeasible", reason};
                  })
      .def("to_json",
           [](const PlanResult& p) {
             // A failed plan has no file form: writing it would read back as an empty, valid plan.
             EMBSHARD_CHECK(p.status == "ok", "embshard.Plan: the plan is ", p.status, " (", p.reason,
                            "); there is no plan to write");
             return plan_to_json(p.plan);
           })
      .def_readonly("status", &PlanResult::status)
      .def_readonly("reason", &PlanResult::reason);

  m.def("plan", &plan_with, py::arg("task"), py::arg("sharder"), py::arg("cost"), py::arg("seed"), py::arg("threads"));

  m.def(
      "evaluate",
      [](const Task& task, const PlanResult& plan, const std::string& backend, std::int64_t batch_size,
         std::uint64_t seed, int threads, const std::string& input_comm, const std::string& exchanges) {
        EMBSHARD_CHECK(plan.status == "ok", "embshard.evaluate: the plan is ", plan.status, " (", plan.reason,
                       "); there is nothing to evaluate");
        // Each option given (batch ≥ 0, a non-empty name) set in the judge where it takes it.
        std::string judge = batch_size >= 0 ? set_judge_value(backend, "batch", std::to_string(batch_size)) : backend;
        judge = judge_with_exchanges(judge, input_comm, exchanges);
        return run_call(seed, threads, [&](const Context& ctx) {
          const EvalResult r = evaluate_plan(task, plan.plan, judge, ctx);
          return std::make_pair(eval_result_json(r, task, plan.plan),
                                eval_result_table(r, sharding_group_topology(task.topology, plan.plan.groups)));
        });
      },
      py::arg("task"), py::arg("plan"), py::arg("backend"), py::arg("batch_size"), py::arg("seed"), py::arg("threads"),
      py::arg("input_comm") = "", py::arg("exchanges") = "");

  m.def(
      "check", [](const Task& task, const PlanResult& plan) { return find_error_in_plan(task, plan.plan); },
      py::arg("task"), py::arg("plan"));

  m.def(
      "compare",
      [](const std::vector<Task>& tasks, const std::vector<std::string>& sharders, const std::string& cost,
         const std::string& backend, std::uint64_t seed, int threads, const std::string& input_comm) {
        CompareOptions options;
        options.sharders = sharders.empty() ? default_sharders() : sharders;
        options.cost = cost;
        options.judge = judge_with_exchanges(backend, input_comm, "");
        std::vector<Plan> plans;
        const std::vector<CompareRow> rows =
            run_call(seed, threads, [&](const Context& ctx) { return run_compare(tasks, options, ctx, &plans); });
        py::list out;
        const std::size_t per_task = options.sharders.size();
        EMBSHARD_ASSERT(rows.size() == tasks.size() * per_task && plans.size() == rows.size());
        for (std::size_t i = 0; i < rows.size(); ++i) {
          py::dict d = compare_row_dict(rows[i], tasks[i / per_task], plans[i]);
          d["plan"] = PlanResult{plans[i], rows[i].status, rows[i].reason};
          out.append(d);
        }
        return out;
      },
      py::arg("tasks"), py::arg("sharders"), py::arg("cost"), py::arg("backend"), py::arg("seed"), py::arg("threads"),
      py::arg("input_comm") = "");

  m.def(
      "plan_fastest",
      [](const Task& task, const std::vector<std::string>& candidates, const std::string& cost,
         const std::string& backend, std::uint64_t seed, int threads) {
        CompareOptions options;
        options.sharders = candidates.empty() ? default_sharders() : candidates;
        options.cost = cost;
        options.judge = backend;
        std::vector<Plan> plans;
        const std::vector<CompareRow> rows =
            run_call(seed, threads, [&](const Context& ctx) { return run_compare({task}, options, ctx, &plans); });
        if (const CompareRow* best = fastest_row(rows))
          return PlanResult{plans[static_cast<std::size_t>(best - rows.data())], best->status, best->reason};
        std::string reasons;
        for (const CompareRow& r : rows) reasons += (reasons.empty() ? "" : "; ") + r.sharder + ": " + r.reason;
        return PlanResult{Plan{}, "infeasible", "no sharder found a plan (" + reasons + ")"};
      },
      py::arg("task"), py::arg("candidates"), py::arg("cost"), py::arg("backend"), py::arg("seed"), py::arg("threads"));

  m.def(
      "size",
      [](const Task& task, int min_devices, int max_devices, double target_ms, const std::string& sharder,
         const std::string& cost, const std::string& backend, std::uint64_t seed, int threads) {
        const WhatIfOptions options{sharder, cost, backend};
        return run_call(seed, threads, [&](const Context& ctx) {
          return capacity_json(plan_capacity(task, min_devices, max_devices, target_ms, options, ctx));
        });
      },
      py::arg("task"), py::arg("min_devices"), py::arg("max_devices"), py::arg("target_ms"), py::arg("sharder"),
      py::arg("cost"), py::arg("backend"), py::arg("seed"), py::arg("threads"));

  m.def(
      "replan",
      [](const Task& task, const PlanResult& old_plan, double max_move_bytes, const std::string& sharder,
         const std::string& cost, const std::string& backend, std::uint64_t seed, int threads, bool reshard,
         const std::string& layout) {
        EMBSHARD_CHECK(old_plan.status == "ok", "embshard.replan: the old plan is ", old_plan.status,
                       "; there is nothing to start from");
        ReplanOptions options;
        options.sharder = sharder, options.cost = cost, options.judge = backend;
        options.max_move_bytes = max_move_bytes;
        options.reshard = reshard;
        options.layout = parse_replan_layout(layout, "embshard.replan: layout");
        return run_call(seed, threads, [&](const Context& ctx) {
          ReplanResult r = replan(task, old_plan.plan, options, ctx);
          return std::make_pair(PlanResult{r.plan, "ok", ""}, replan_json(r));
        });
      },
      py::arg("task"), py::arg("old_plan"), py::arg("max_move_bytes"), py::arg("sharder"), py::arg("cost"),
      py::arg("backend"), py::arg("seed"), py::arg("threads"), py::arg("reshard") = false, py::arg("layout") = "best");

  m.def(
      "fit",
      [](const Task& task, const std::string& sharder, const std::string& cost, const std::string& backend,
         std::uint64_t seed, int threads) {
        const WhatIfOptions options{sharder, cost, backend};
        return run_call(seed, threads,
                        [&](const Context& ctx) { return fit_advice_json(advise_fit(task, options, ctx)); });
      },
      py::arg("task"), py::arg("sharder"), py::arg("cost"), py::arg("backend"), py::arg("seed"), py::arg("threads"));

  m.def(
      "topology", [](const std::string& spec) { return topology_dict(make_topology(spec)); }, py::arg("spec"));
  m.def("default_sharders", &default_sharders);
  // TorchRec's storage reservation, for EmbshardPlanner (shard/torchrec_reservation.h).
  m.attr("TORCHREC_RESERVATION_SHARE") = kTorchrecReservationShare;
  m.attr("TORCHREC_DENSE_MULTIPLIER") = kTorchrecDenseMultiplier;
  m.def("torchrec_kjt_reservation_bytes", &torchrec_kjt_reservation_bytes, py::arg("ids_per_rank"));
  m.def("torchrec_table_budget_bytes", &torchrec_table_budget_bytes, py::arg("memory_bytes"), py::arg("share"),
        py::arg("dense_bytes"), py::arg("kjt_bytes"));
  m.def("canonical_sharder", &canonical_sharder_spec, py::arg("spec"));
  m.def("torchrec_runnable_spec", &torchrec_runnable_spec, py::arg("spec"), py::arg("groups"),
        py::arg("memory_is_net"));
  m.def("list", &list_family, py::arg("family"));

  m.def(
      "torchrec_plan_json",
      [](const Task& task, const PlanResult& plan, const std::string& module_path, const std::string& device) {
        EMBSHARD_CHECK(device == "cuda" || device == "cpu", "embshard: compute device '", device,
                       "' is not one TorchRec plans for here (cuda or cpu)");
        TorchrecExportOptions o;
        o.module_path = module_path;
        o.compute_device = device == "cpu" ? TorchrecDevice::kCpu : TorchrecDevice::kCuda;
        return torchrec_plan_json(task, plan.plan, o);
      },
      py::arg("task"), py::arg("plan"), py::arg("module_path"), py::arg("device"));

  m.def("csr_stats", &csr_stats<std::int64_t, std::int64_t>, py::arg("indices"), py::arg("offsets"),
        py::arg("num_rows"), py::arg("where"));
  m.def("csr_stats", &csr_stats<std::int32_t, std::int64_t>, py::arg("indices"), py::arg("offsets"),
        py::arg("num_rows"), py::arg("where"));
  m.def("csr_stats", &csr_stats<std::int32_t, std::int32_t>, py::arg("indices"), py::arg("offsets"),
        py::arg("num_rows"), py::arg("where"));
  m.def(
      "dlrm_file_stats",
      [](const std::string& path, int threads) {
        return run_call(0, threads, [&](const Context& ctx) { return stats_to_json(compute_file_stats(path, ctx)); });
      },
      py::arg("path"), py::arg("threads"));
  m.def(
      "task_lookups",
      [](const Task& task, std::int64_t batch_size, std::uint64_t batch_number, int threads) {
        std::vector<TableBatch> batches;
        {
          py::gil_scoped_release release;
          batches = draw_task_batch(task, batch_size, batch_number, std::max(1, threads));
        }
        const auto array = [](const std::vector<std::int64_t>& v) {
          return py::array_t<std::int64_t>(static_cast<py::ssize_t>(v.size()), v.data());
        };
        py::list out;
        for (const TableBatch& b : batches) out.append(py::make_tuple(array(b.offsets), array(b.indices)));
        return out;
      },
      py::arg("task"), py::arg("batch_size"), py::arg("batch_number"), py::arg("threads"));
  // Compute samples measured outside the C++ timers (embshard.torchrec.profile): the C++ sampler's
  // draws and its append-only, resumable file (profile/compute_sampler.h, profile/cost_sample.h).
  m.def(
      "draw_compute_sample",
      [](std::uint64_t pool_seed, std::uint64_t seed, std::int64_t index, int max_tables, std::int64_t max_bytes,
         const std::vector<int>& dims) {
        const ComputeSamplerParams params{max_tables, max_bytes, dims};
        py::list out;
        for (const SampleTable& t : draw_compute_sample(Pool::generate(pool_seed), params, seed, index))
          out.append(py::make_tuple(t.pool_id, t.dim));
        return out;
      },
      py::arg("pool_seed"), py::arg("seed"), py::arg("index"), py::arg("max_tables"), py::arg("max_bytes"),
      py::arg("dims"));
  m.def("compute_sampler_spec", [](int max_tables, std::int64_t max_bytes, const std::vector<int>& dims) {
    return canonical_sampler_spec(ComputeSamplerParams{max_tables, max_bytes, dims});
  });
  py::class_<ComputeSampleFile>(m, "ComputeSampleFile")
      .def(py::init([](const std::string& path, const std::string& backend, const std::string& sampler,
                       std::uint64_t seed, std::uint64_t pool_seed, std::int64_t batch_size, int warmup, int repeats,
                       int threads) {
             CostSampleHeader h;
             h.kind = SampleKind::kCompute;
             h.backend = backend;
             h.sampler = sampler;
             h.seed = seed;
             h.pool_seed = pool_seed;
             h.batch_size = batch_size;
             h.measure.warmup = warmup;
             h.measure.repeats = repeats;
             h.measure.flush_cache = false;
             h.measure.trim = 0.0;
             h.fingerprint = this_machine("cpu", threads);
             h.embshard_version = embshard_version();
             h.created_utc = utc_timestamp();
             return run_call(0, 1, [&](const Context& ctx) {
               return ComputeSampleFile{std::make_shared<CostSampleWriter>(path, h, ctx)};
             });
           }),
           py::arg("path"), py::arg("backend"), py::arg("sampler"), py::arg("seed"), py::arg("pool_seed"),
           py::arg("batch_size"), py::arg("warmup"), py::arg("repeats"), py::arg("threads"))
      .def_property_readonly("next_index", [](const ComputeSampleFile& f) { return f.writer().next_index(); })
      .def(
          "append",
          [](ComputeSampleFile& f, std::int64_t index, const std::vector<std::pair<std::int64_t, int>>& tables,
             double fw_ms, double bw_ms) {
            CostSampleWriter& w = f.writer();
            EMBSHARD_CHECK(index == w.next_index(), "compute samples: sample ", index, " appended where ",
                           w.next_index(), " is next");
            EMBSHARD_CHECK(fw_ms > 0 && bw_ms > 0, "compute samples: sample ", index, " has fw_ms ", fw_ms,
                           " and bw_ms ", bw_ms, "; both must be positive");
            ComputeSample s;
            s.index = index;
            for (const auto& [pool_id, dim] : tables) s.tables.push_back({pool_id, dim});
            s.fw_ms = s.fw_trimmed_ms = fw_ms;
            s.bw_ms = s.bw_trimmed_ms = bw_ms;
            w.append(s);
          },
          py::arg("index"), py::arg("tables"), py::arg("fw_ms"), py::arg("bw_ms"))
      .def("close", [](ComputeSampleFile& f) { f.file.reset(); })
      .def("__enter__", [](ComputeSampleFile& f) -> ComputeSampleFile& { return f; })
      .def("__exit__", [](ComputeSampleFile& f, const py::args&) { f.file.reset(); });
  m.def("derived_model_defaults", [] {
    const DerivedStatsModel d = pool_median_model();
    py::dict out;
    out["zipf_alpha"] = d.zipf_alpha;
    out["active_ratio"] = d.active_ratio;
    out["zipf_offset"] = d.zipf_offset;
    return out;
  });
}
