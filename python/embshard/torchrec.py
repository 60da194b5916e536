"""embshard inside TorchRec: `EmbshardPlanner`, a drop-in for `EmbeddingShardingPlanner`.

    planner = EmbshardPlanner(topology=Topology(world_size=8, compute_device="cuda"),
                              batch_size=512, constraints={"t_user": ParameterConstraints(...)})
    plan = planner.collective_plan(model, sharders, pg)      # a torchrec ShardingPlan
    model = DistributedModelParallel(model, plan=plan, sharders=sharders, ...)

2D parallelism (TorchRec's DMPCollection; include/embshard/plan/sharding_groups.h): with
`sharding_group_size="auto"` (joint chooses the group size, or none) or a number G, a 2D plan is
one sharding group's ShardingPlan and `planner.dmp_collection_kwargs` holds the rest of what
DMPCollection takes (world_size, sharding_group_size, node_group_size, use_inter_host_allreduce);
it is None for a 1D plan, which DistributedModelParallel takes.

How a TorchRec model becomes an embshard task (docs/python.md has the whole table):
  * every EmbeddingBagCollection / EmbeddingCollection in the module (nested too) that one of the
    `sharders` shards; its tables keep their names (qualified by module path if two modules share
    one); rows, dim and data type from the table configs;
  * pooling factor = Σ over the table's features of ParameterConstraints.pooling_factors (TorchRec's
    default 1.0 each); statistics derived from it (embshard.DERIVED_STATS_DEFAULTS), or measured
    ones from `table_stats` (e.g. `stats_from_kjt` of a real batch);
  * optimizer state from the parameter's `_optimizer_classes` (apply_optimizer_in_backward) or the
    sharder's fused_params["optimizer"], counted in memory as TorchRec's storage estimator does;
  * sharding types = the sharder's for the compute device ∩ the table's constraints ∩ the five
    embshard plans (table_wise, column_wise, row_wise, table_row_wise, data_parallel); kernels:
    "fused" keeps a table in HBM, fused_uvm / fused_uvm_caching allow UVM, "dense" is
    data_parallel's (without it no table is data-parallel); min_partition carries over;
  * topology: world size, local world size (whole hosts), per-device HBM / DDR, HBM, HBM→DDR and
    host bandwidths; HBM (DDR on cpu) less TorchRec's heuristical reservation (a share, 6× the
    dense parameters, 20× the KJT bytes), the budget every sharder plans against;
  * global batch = `batch_size` (per rank, TorchRec's meaning) × world size.
Re-planning: `reshard_delta(old, new)` is what DistributedModelParallel.reshard takes to move a
running job from one ShardingPlan to another, or an Error naming the table whose change TorchRec's
reshard cannot express (only shards moving between ranks).
What embshard cannot express raises embshard.Error naming the table or field, never a silent change.
TorchRec is imported lazily, so `import embshard.torchrec` works without it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import embshard
from embshard import Error

SUPPORTED_TYPES = ("table_wise", "column_wise", "row_wise", "table_row_wise", "data_parallel")
# What the TorchRec export gives on compute_device cpu (include/embshard/plan/torchrec_export.h):
# TorchRec's EmbeddingBagCollection sharder has no row-wise there. Its EmbeddingCollection sharder
# offers row_wise on cpu, but the planner keeps to what every collection can run.
CPU_TYPES = ("table_wise", "column_wise", "data_parallel")
HBM_KERNELS = ("fused", "dense")
UVM_KERNELS = ("fused_uvm", "fused_uvm_caching")
TORCHREC_DEFAULT_BATCH = 512          # torchrec.distributed.planner.constants.BATCH_SIZE
TORCHREC_DEFAULT_POOLING = 1.0        # ... POOLING_FACTOR
# TorchRec's storage reservation is embshard's C++ (include/embshard/shard/torchrec_reservation.h),
# which the `torchrec` sharder applies too: HeuristicalStorageReservation's percentage, and the
# dense parameters' multiplier.
RESERVATION_SHARE = embshard._embshard.TORCHREC_RESERVATION_SHARE
DENSE_MULTIPLIER = embshard._embshard.TORCHREC_DENSE_MULTIPLIER


@functools.lru_cache(maxsize=None)
def _gpu_presets() -> Tuple[Tuple[float, str], ...]:
    """(data-sheet HBM GB/s, name) of every GPU topology preset (data/topology.h): a TorchRec
    topology names no GPU, so the preset nearest its hbm_mem_bw gives the sim model its kind."""
    return tuple((embshard._embshard.topology(e["name"])["devices"][0]["hbm_gbps"], e["name"])
                 for e in embshard.list("topology") if e["name"] != "cpu")

# Optimizer state → table.h's names. TorchRec's storage estimator multiplies the weights by 0 for
# SGD, 1/dim for RowWiseAdagrad, 2 for Adam and 1 otherwise (torchrec-planner.md §1.6); embshard
# counts what FBGEMM keeps, which is never less: Adam-family optimizers (AdamW, LAMB) keep two
# moments (2, where TorchRec's estimate says 1), momentum SGD (LARS) one (1).
_OPTIMIZER_BY_NAME = {
    "SGD": "none", "EXACT_SGD": "none", "NONE": "none",
    "RowWiseAdagrad": "rowwise_adagrad", "EXACT_ROWWISE_ADAGRAD": "rowwise_adagrad",
    "ROWWISE_ADAGRAD": "rowwise_adagrad",
    "Adam": "adam", "AdamW": "adam", "ADAM": "adam", "LAMB": "adam", "PartialRowWiseAdam": "adam",
}


@dataclasses.dataclass
class PlannedTable:
    """Where one embshard task table came from in the TorchRec model."""
    task_name: str      # the table's name in the embshard task
    module_path: str    # FQN of its EmbeddingBagCollection / EmbeddingCollection ("" = root)
    name: str           # the TorchRec table name (the ShardingPlan's parameter name)
    features: List[str]
    kernels: List[str]  # compute kernels allowed for it
    cache_params: Any = None


def _sharded_modules(module, sharded_types) -> List[Tuple[str, Any]]:
    """The modules TorchRec would shard, as its `populate_shardable_modules` finds them: the walk
    stops at any module whose exact type has a sharder. embshard plans EmbeddingBagCollection and
    EmbeddingCollection; any other shardable module is an error naming its path, never skipped."""
    from torchrec.modules.embedding_modules import EmbeddingBagCollection, EmbeddingCollection

    found: List[Tuple[str, Any]] = []

    def walk(prefix: str, m) -> None:
        if type(m) in sharded_types:
            if type(m) not in (EmbeddingBagCollection, EmbeddingCollection):
                raise Error(f"EmbshardPlanner: module '{prefix or '(root)'}' is a "
                            f"{type(m).__name__}; embshard plans EmbeddingBagCollection and "
                            f"EmbeddingCollection only (drop its sharder to leave it unsharded)")
            found.append((prefix, m))
            return
        for name, child in m.named_children():
            walk(f"{prefix}.{name}" if prefix else name, child)

    walk("", module)
    return found


def _configs(m) -> list:
    from torchrec.modules.embedding_modules import EmbeddingBagCollection

    return m.embedding_bag_configs() if isinstance(m, EmbeddingBagCollection) else m.embedding_configs()


def _weight(m, table_name: str):
    from torchrec.modules.embedding_modules import EmbeddingBagCollection

    bags = m.embedding_bags if isinstance(m, EmbeddingBagCollection) else m.embeddings
    return bags[table_name].weight


def _optimizer_of(weight, sharder, where: str) -> str:
    classes = getattr(weight, "_optimizer_classes", None)
    if classes:
        name = getattr(classes[0], "__name__", str(classes[0]))
    else:
        fused = getattr(sharder, "fused_params", None) or {}
        opt = fused.get("optimizer")
        if opt is None:
            return "none"  # TorchRec counts no state when no optimizer is attached
        name = getattr(opt, "name", str(opt))
    return _OPTIMIZER_BY_NAME.get(name, "adagrad")  # one value per weight: "1 otherwise"


def _no_such_table(name: str, key: str, known: List[str]) -> Error:
    return Error(f"EmbshardPlanner: {key} names table '{name}', which the model does not have "
                 f"(its tables: {', '.join(known[:12])}{', ...' if len(known) > 12 else ''})")


def _dtype(config, where: str) -> str:
    name = getattr(config.data_type, "name", str(config.data_type))
    if name in ("FP32", "FLOAT32"):
        return "fp32"
    if name in ("FP16", "FLOAT16"):
        return "fp16"
    raise Error(f"{where}: data_type {name} is not one embshard plans (FP32 or FP16)")


def _gbps(bytes_per_ms: float) -> float:
    return float(bytes_per_ms) * 1000.0 / 1e9


class EmbshardPlanner:
    """Shaped like torchrec's EmbeddingShardingPlanner: `plan` and `collective_plan` return a
    ShardingPlan. `sharder` is any registered embshard sharder spec, or "best" (every default
    sharder, the plan the `judge` rates fastest). After a call, `last_task` and `last_plan` hold the
    embshard task and plan, and `tables` maps task tables to the model."""

    def __init__(self, topology=None, batch_size: Optional[int] = None,
                 constraints: Optional[Mapping[str, Any]] = None, *, sharder: str = "best",
                 cost: str = "default", judge: str = "sim", device_kind: Optional[str] = None,
                 storage_reservation: float = RESERVATION_SHARE,
                 table_stats: Optional[Mapping[str, Mapping[str, Any]]] = None,
                 derived_stats: Optional[Mapping[str, float]] = None, seed: int = 0,
                 threads: int = 1, sharding_group_size: Union[None, int, str] = None,
                 replica_sync_every: int = 1, colocate: Sequence[Sequence[str]] = (),
                 separate: Sequence[Sequence[str]] = ()):
        if not 0.0 <= storage_reservation < 1.0:
            raise Error(f"EmbshardPlanner: storage_reservation = {storage_reservation} must lie in [0, 1)")
        if batch_size is not None and batch_size < 1:
            raise Error(f"EmbshardPlanner: batch_size = {batch_size} must be at least 1")
        if not (sharding_group_size is None or sharding_group_size == "auto"
                or (isinstance(sharding_group_size, int) and not isinstance(sharding_group_size, bool)
                    and sharding_group_size >= 1)):
            raise Error(f"EmbshardPlanner: sharding_group_size = {sharding_group_size!r} must be None "
                        "(a 1D plan for DistributedModelParallel), 'auto' or a number of ranks ≥ 1")
        if sharding_group_size is not None and sharder != "best" and sharder.partition(":")[0] != "joint":
            raise Error(f"EmbshardPlanner: sharding_group_size needs sharder 'joint' or 'best' (only joint plans "
                        f"2D layouts), not '{sharder}'")
        self._placement_groups = {key: embshard._table_groups(groups, f"EmbshardPlanner: {key}")
                                  for key, groups in (("colocate", colocate), ("separate", separate))}
        self._groups = "none" if sharding_group_size is None else str(sharding_group_size)
        self._sync_every = replica_sync_every
        self._topology = topology
        self._batch_size = batch_size or TORCHREC_DEFAULT_BATCH
        self._constraints = dict(constraints or {})
        self._sharder = sharder
        self._cost = cost
        self._judge = judge
        self._device_kind = device_kind
        self._reservation = storage_reservation
        self._table_stats = dict(table_stats or {})
        self._derived_stats = derived_stats
        self._seed = seed
        self._threads = threads
        self.last_task: Optional[embshard.Task] = None
        self.last_plan: Optional[embshard.Plan] = None
        self.tables: List[PlannedTable] = []
        #: What DMPCollection takes beside the last 2D plan (module docstring); None for a 1D plan.
        self.dmp_collection_kwargs: Optional[Dict[str, Any]] = None

    # ---- TorchRec's interface -------------------------------------------------------------

    def plan(self, module, sharders):
        """Plans every sharded embedding module of `module`; returns a torchrec ShardingPlan."""
        task = self.task(module, sharders)
        plan = self._plan_task(task)
        self.last_plan = plan
        return self.sharding_plan(task, plan)

    def collective_plan(self, module, sharders=None, pg=None):
        """Plans on rank 0 of `pg` (default: the world) and broadcasts the plan to every rank."""
        import torch.distributed as dist

        if sharders is None:
            from torchrec.distributed.sharding_plan import get_default_sharders
            sharders = get_default_sharders()
        if pg is None:
            if not dist.is_initialized():
                raise Error("EmbshardPlanner.collective_plan: no process group (pass pg or "
                            "initialise torch.distributed)")
            pg = dist.group.WORLD
        world = dist.get_world_size(pg)
        expected = self._torchrec_topology().world_size
        if world != expected:
            raise Error(f"EmbshardPlanner.collective_plan: the process group has {world} ranks "
                        f"but the topology's world_size is {expected}")
        payload: List[Optional[str]] = [None]
        failure: Optional[BaseException] = None
        if dist.get_rank(pg) == 0:
            try:
                task = self.task(module, sharders)
                plan = self._plan_task(task)
                self.last_plan = plan
                payload = [json.dumps({"task": task.to_json(), "plan": plan.to_json()})]
            except Exception as e:  # every rank raises, none hangs in the broadcast
                failure = e
                payload = [json.dumps({"error": f"rank 0: {type(e).__name__}: {e}"})]
        dist.broadcast_object_list(payload, src=dist.get_global_rank(pg, 0), group=pg)
        message = json.loads(payload[0])
        if failure is not None:
            raise failure  # rank 0 keeps its exception's type and traceback
        if "error" in message:
            raise Error(message["error"])
        if dist.get_rank(pg) != 0:
            self.task(module, sharders)  # the same table map on every rank
        task = embshard.Task.from_json(message["task"], where="broadcast task")
        plan = embshard.Plan.from_json(message["plan"], where="broadcast plan")
        self.last_task, self.last_plan = task, plan
        return self.sharding_plan(task, plan)

    # ---- the embshard side ----------------------------------------------------------------

    def task(self, module, sharders) -> embshard.Task:
        """The embshard task of `module` under `sharders` and this planner's topology."""
        from torchrec.modules.embedding_modules import EmbeddingCollection
        topology = self._torchrec_topology()
        device = topology.compute_device
        by_type = {s.module_type: s for s in sharders}
        modules = _sharded_modules(module, set(by_type))
        if not modules:
            raise Error("EmbshardPlanner: the module holds no EmbeddingBagCollection or "
                        "EmbeddingCollection that the given sharders shard")
        names: Dict[str, int] = {}
        for _, m in modules:
            for config in _configs(m):
                names[config.name] = names.get(config.name, 0) + 1
        known = set(names)
        for name in self._constraints:
            if name not in known:
                raise Error(f"EmbshardPlanner: constraints name table '{name}', which is not in "
                            f"the model (tables: {', '.join(sorted(known))})")
        for name in self._table_stats:
            if name not in known:
                raise Error(f"EmbshardPlanner: table_stats names table '{name}', which is not in the model")
        tables: List[embshard.Table] = []
        self.tables = []
        allow_uvm_any = False
        total_pooling = 0.0
        for path, m in modules:
            sharder = by_type[type(m)]
            for config in _configs(m):
                task_name = config.name if names[config.name] == 1 else f"{path}.{config.name}"
                where = f"EmbshardPlanner: table '{config.name}'" + (f" of '{path}'" if path else "")
                constraint = self._constraints.get(config.name)
                types, kernels = self._allowed(sharder, device, constraint, where)
                pooling = self._pooling(config, constraint, where)
                total_pooling += pooling
                weight = _weight(m, config.name)
                allow_uvm = any(k in UVM_KERNELS for k in kernels)
                allow_uvm_any |= allow_uvm
                stats = self._table_stats.get(config.name)
                tables.append(embshard.Table(
                    name=task_name, rows=config.num_embeddings, dim=config.embedding_dim,
                    pooling_factor=None if stats else pooling, dtype=_dtype(config, where),
                    stats=stats, optimizer=_optimizer_of(weight, sharder, where),
                    sharding_types=types, allow_uvm=allow_uvm,
                    min_partition=(constraint.min_partition or 0) if constraint else 0,
                    pooled=not isinstance(m, EmbeddingCollection)))
                self.tables.append(PlannedTable(task_name, path, config.name, list(config.feature_names),
                                                kernels, getattr(constraint, "cache_params", None)))
        # TorchRec's dense estimate (storage_reservations.py): the module less its shardable
        # modules, parameters and buffers by size (meta ones too); the multiplier applies to it all.
        sharded = {id(t) for _, m in modules for t in list(m.parameters()) + list(m.buffers())}
        dense_bytes = sum(t.numel() * t.element_size()
                          for t in list(module.parameters()) + list(module.buffers())
                          if id(t) not in sharded)
        task = embshard.Task.from_tables(
            tables, self._embshard_topology(topology, dense_bytes, total_pooling),
            batch_size=self._batch_size * topology.world_size, allow_uvm=allow_uvm_any,
            derived_stats=self._derived_stats, task_id="torchrec-model",
            replica_sync_every=self._sync_every,
            **{key: [[self._task_table(name, key) for name in group] for group in groups]
               for key, groups in self._placement_groups.items()})
        self.last_task = task
        return task

    def sharding_plan(self, task: embshard.Task, plan: embshard.Plan):
        """The torchrec ShardingPlan of an embshard plan of `task` (the last `task` call's model)."""
        topology = self._torchrec_topology()
        document = json.loads(embshard._embshard.torchrec_plan_json(
            task._native, plan._native, "", topology.compute_device))
        by_task_name = {t.task_name: t for t in self.tables}
        regrouped: Dict[str, Dict[str, Any]] = {}
        for task_name, entry in document["plan"][""].items():
            table = by_task_name[task_name]
            if entry["compute_kernel"] not in table.kernels:
                raise Error(f"EmbshardPlanner: table '{table.name}' needs compute kernel "
                            f"{entry['compute_kernel']}, which its sharder or constraints do not "
                            f"allow ({', '.join(table.kernels)})")
            regrouped.setdefault(table.module_path, {})[table.name] = entry
        document["plan"] = regrouped
        self.dmp_collection_kwargs = dmp_collection_kwargs(document)
        return sharding_plan_from_dict(document, {t.name: t.cache_params for t in self.tables})

    # ---- helpers ----------------------------------------------------------------------------

    def _plan_task(self, task: embshard.Task) -> embshard.Plan:
        if self._groups != "none" and self._torchrec_topology().compute_device != "cuda":
            raise Error("EmbshardPlanner: sharding_group_size asks for a 2D plan, which TorchRec's "
                        "DMPCollection runs on CUDA only; the topology's compute_device is "
                        f"{self._torchrec_topology().compute_device}")
        sharder = self._sharder
        if sharder == "best":
            candidates = [_for_torchrec(s, self._groups) for s in embshard.default_sharders()]
            plan = embshard.plan(task, "best", self._cost, seed=self._seed, threads=self._threads,
                                 judge=self._judge, candidates=candidates)
        else:
            plan = embshard.plan(task, _for_torchrec(sharder, self._groups), self._cost,
                                 seed=self._seed, threads=self._threads)
        if not plan.ok:
            raise Error(f"EmbshardPlanner: no plan ({plan.status}): {plan.reason}")
        return plan

    def _torchrec_topology(self):
        if self._topology is not None:
            return self._topology
        import torch.distributed as dist
        from torchrec.distributed.planner.types import Topology

        if not dist.is_initialized():
            raise Error("EmbshardPlanner: give a topology (torch.distributed is not initialised)")
        import torch
        from torchrec.distributed.comm import get_local_size

        device = "cuda" if torch.cuda.is_available() else "cpu"
        return Topology(world_size=dist.get_world_size(), local_world_size=get_local_size(),
                        compute_device=device)

    def _allowed(self, sharder, device: str, constraint, where: str) -> Tuple[List[str], List[str]]:
        types = list(sharder.sharding_types(device))
        if constraint is not None and constraint.sharding_types:
            for t in constraint.sharding_types:
                if t not in sharder.sharding_types(device) and t not in SUPPORTED_TYPES:
                    raise Error(f"{where}: constraints.sharding_types names '{t}', not a sharding "
                                f"type the sharder offers on {device}")
            types = [t for t in types if t in constraint.sharding_types]
        usable = [t for t in types if t in (CPU_TYPES if device == "cpu" else SUPPORTED_TYPES)]
        if not types:
            raise Error(f"{where}: constraints.sharding_types {list(constraint.sharding_types)}: "
                        f"the sharder offers none of them on {device} "
                        f"({', '.join(sharder.sharding_types(device))})")
        if not usable:
            offered = CPU_TYPES if device == "cpu" else SUPPORTED_TYPES
            raise Error(f"{where}: sharding types {types} — embshard plans only "
                        f"{', '.join(offered)}{' on cpu' if device == 'cpu' else ''}")
        # Data-parallel runs only on "dense"; every other type on "fused" (and the UVM kernels).
        sharded = [t for t in usable if t != "data_parallel"]
        kernels = list(sharder.compute_kernels(sharded[0], device)) if sharded else []
        if "data_parallel" in usable:
            kernels += [k for k in sharder.compute_kernels("data_parallel", device) if k not in kernels]
        if constraint is not None and constraint.compute_kernels:
            for k in constraint.compute_kernels:
                if k not in kernels and k not in HBM_KERNELS + UVM_KERNELS:
                    raise Error(f"{where}: constraints.compute_kernels names '{k}', not a kernel "
                                f"the sharder offers on {device}")
            kernels = [k for k in kernels if k in constraint.compute_kernels]
        if "dense" not in kernels and "data_parallel" in usable:
            usable.remove("data_parallel")
        if "fused" not in kernels:
            usable = [t for t in usable if t == "data_parallel"]
        if not usable:
            raise Error(f"{where}: compute kernels {kernels} — embshard keeps a table's hot rows "
                        f"in HBM, so it needs 'fused' allowed (or 'dense' for data_parallel)")
        for field in ("batch_sizes", "num_poolings", "key_value_params", "device_group"):
            if constraint is not None and getattr(constraint, field, None):
                raise Error(f"{where}: constraints.{field} is not something embshard plans for")
        if constraint is not None and getattr(constraint, "use_virtual_table", False):
            raise Error(f"{where}: constraints.use_virtual_table is not something embshard plans for")
        return usable, kernels

    @staticmethod
    def _pooling(config, constraint, where: str) -> float:
        """The table's lookups per sample as TorchRec's enumerator counts them: the sum of
        `pooling_factors`, or POOLING_FACTOR (1.0) for the table when none are given."""
        if constraint is not None and constraint.pooling_factors:
            factors = [float(f) for f in constraint.pooling_factors]
            if any(not (f >= 0 and math.isfinite(f)) for f in factors):
                raise Error(f"{where}: constraints.pooling_factors {factors} must be finite and ≥ 0")
            return sum(factors)
        return TORCHREC_DEFAULT_POOLING

    def _task_table(self, name: str, key: str) -> str:
        """The task's name of a model table named in a placement group: its TorchRec name, or the
        task name ("path.name") where two modules have tables of one name."""
        matches = [t.task_name for t in self.tables if name in (t.task_name, t.name)]
        if len(matches) != 1:
            if matches:
                raise Error(f"EmbshardPlanner: {key} names table '{name}', which several modules have: "
                            f"name it as one of {', '.join(matches)}")
            raise _no_such_table(name, key, [t.task_name for t in self.tables])
        return matches[0]

    def _embshard_topology(self, topology, dense_bytes: int, total_pooling: float) -> Dict[str, Any]:
        world, local = topology.world_size, topology.local_world_size
        if topology.compute_device not in ("cuda", "cpu"):
            raise Error(f"EmbshardPlanner: compute_device '{topology.compute_device}' — embshard "
                        f"plans for cuda or cpu")
        if local < 1 or world % local != 0:
            raise Error(f"EmbshardPlanner: world_size {world} is not a whole number of hosts of "
                        f"local_world_size {local}, which embshard's topology needs")
        if len(topology.devices) != world:
            raise Error(f"EmbshardPlanner: the topology lists {len(topology.devices)} devices for "
                        f"world_size {world}")
        cuda = topology.compute_device == "cuda"
        kjt = embshard._embshard.torchrec_kjt_reservation_bytes(total_pooling * self._batch_size)
        devices = []
        for d in topology.devices:
            # The memory the tables use: HBM less the share on cuda, DDR (not reduced by it) on cpu.
            budget = embshard._embshard.torchrec_table_budget_bytes(
                int(d.storage.hbm if cuda else d.storage.ddr), self._reservation if cuda else 0.0,
                dense_bytes, kjt)
            if budget <= 0:
                raise Error(f"EmbshardPlanner: rank {d.rank} keeps no memory for embeddings: "
                            f"{d.storage.hbm if cuda else d.storage.ddr} bytes less the reservation "
                            f"share, {DENSE_MULTIPLIER}× the dense parameters ({dense_bytes} bytes) "
                            f"and the KJT buffers ({kjt})")
            devices.append({"hbm_bytes": budget, "uvm_bytes": int(d.storage.ddr) if cuda else 0,
                            "hbm_gbps": _gbps(topology.hbm_mem_bw if cuda else topology.ddr_mem_bw),
                            "uvm_gbps": _gbps(topology.hbm_to_ddr_mem_bw if cuda else topology.ddr_mem_bw)})
        # The device kind and the all-to-all latency are the nearest preset's (data/topology.h).
        if cuda:
            hbm_gbps = _gbps(topology.hbm_mem_bw)
            name = min(_gpu_presets(), key=lambda preset: abs(preset[0] - hbm_gbps))[1]
            base = embshard._embshard.topology(f"{name}:nodes={1 if world == local else 2}")
        else:
            base = embshard._embshard.topology("cpu")
        return {"device_kind": self._device_kind or base["device_kind"], "devices_per_host": local,
                "intra_host_gbps": _gbps(topology.intra_host_bw),
                "inter_host_gbps": _gbps(topology.inter_host_bw),
                "a2a_latency_us": base["a2a_latency_us"], "devices": devices}


def _for_torchrec(spec: str, groups: str = "none") -> str:
    """A sharder spec as this planner runs it, unless the spec says otherwise: the task's memory is
    already net of TorchRec's reservation; `joint` makes only what TorchRec's training path runs and
    the 2D layouts `sharding_group_size` asks for (`groups`: none, auto or G). The rule is C++'s
    (`torchrec_runnable_spec`, include/embshard/shard/sharder.h), which `plan --format torchrec` uses."""
    return embshard._embshard.torchrec_runnable_spec(spec, groups, True)


def plan_from_sharding_plan(task: embshard.Task, sharding_plan, tables: Sequence[PlannedTable]) -> embshard.Plan:
    """An embshard plan of a torchrec ShardingPlan (e.g. TorchRec's own planner's), so that one
    evaluator judges both. Shards map one to one; UVM kernels keep their cache share in HBM."""
    by_module = {(t.module_path, t.name): t for t in tables}
    table_rows = {t["name"]: (t["stats"]["num_rows"], t["dim"]) for t in json.loads(task.to_json())["tables"]}
    entries = []
    for module_path, module_plan in sharding_plan.plan.items():
        for name, ps in module_plan.items():
            table = by_module.get((module_path, name))
            if table is None:
                raise Error(f"plan_from_sharding_plan: '{module_path}' table '{name}' is not in the task")
            if ps.sharding_type not in SUPPORTED_TYPES:
                raise Error(f"plan_from_sharding_plan: table '{name}' is {ps.sharding_type}, which "
                            f"embshard cannot judge")
            shards = []
            if ps.sharding_type == "data_parallel":  # a whole copy on every rank, no shard spec
                shards = [{"device": rank, "rows": [0, table_rows[table.task_name][0]],
                           "cols": [0, table_rows[table.task_name][1]], "hbm_rows": table_rows[table.task_name][0]}
                          for rank in sorted(ps.ranks)]
            for s in (ps.sharding_spec.shards if ps.sharding_spec is not None else []):
                r0, c0 = s.shard_offsets
                nr, nc = s.shard_sizes
                rank = s.placement.rank()
                share = 1.0
                if ps.compute_kernel == "fused_uvm":
                    share = 0.0
                elif ps.compute_kernel == "fused_uvm_caching":
                    share = ps.cache_params.load_factor if ps.cache_params and ps.cache_params.load_factor else 0.2
                hbm = nr if share >= 1.0 else int(round(nr * share))
                if nr == 0:
                    continue  # TorchRec's empty row-wise tail shards hold nothing
                shards.append({"device": rank, "rows": [r0, r0 + nr], "cols": [c0, c0 + nc],
                               "hbm_rows": hbm})
            entries.append({"table": table.task_name, "sharding_type": ps.sharding_type,
                            "shards": shards})
    doc = {"schema_version": 1,
           "provenance": {"sharder": "torchrec-planner (real TorchRec)", "cost_model": "",
                          "task_id": task.id, "embshard_version": embshard.version(),
                          "seed": 0, "wall_ms": 0.0, "created_utc": ""},
           "tables": entries}
    plan = embshard.Plan.from_json(json.dumps(doc), where="plan_from_sharding_plan")
    embshard.check(task, plan)
    return plan


def stats_from_kjt(kjt, features: Sequence[str], num_rows: int, *, where: str = "stats_from_kjt") -> Dict[str, Any]:
    """Measured statistics of one table from a KeyedJaggedTensor batch: the table's bag of a
    sample is the union of its `features`' bags (TorchRec pools them into one table)."""
    import numpy as np

    lengths = None
    values = []
    for f in features:
        if f not in kjt.keys():
            raise Error(f"{where}: feature '{f}' is not in the KeyedJaggedTensor ({', '.join(kjt.keys())})")
        jt = kjt[f]
        values.append(jt.values().detach().cpu().numpy().astype(np.int64, copy=False))
        ln = jt.lengths().detach().cpu().numpy().astype(np.int64)
        lengths = ln if lengths is None else lengths + ln
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    # Statistics do not depend on the order of lookups inside a bag; only the per-sample counts do.
    indices = np.concatenate(values) if values else np.zeros(0, np.int64)
    return embshard.stats_from_csr(indices, offsets, num_rows, where=where)


def sharding_plan_from_dict(document: Mapping[str, Any], cache_params: Optional[Mapping[str, Any]] = None):
    """A torchrec ShardingPlan from the TorchRec plan JSON embshard writes
    (include/embshard/plan/torchrec_export.h). `cache_params` (table name → torchrec CacheParams
    from the user's constraints) keeps their algorithm and options; the load factor is the plan's."""
    from torchrec.distributed.types import (
        CacheAlgorithm,
        CacheParams,
        EmbeddingModuleShardingPlan,
        EnumerableShardingSpec,
        ParameterSharding,
        ShardingPlan,
        ShardMetadata,
    )

    def spec_of(table):
        if table["sharding_type"] == "data_parallel":
            return None
        return EnumerableShardingSpec([
            ShardMetadata(shard_offsets=list(s["shard_offsets"]), shard_sizes=list(s["shard_sizes"]),
                          placement=s["placement"])
            for s in table["shards"]])

    def cache_of(name, table):
        if "cache_params" not in table:
            return None
        params = table["cache_params"]
        given = (cache_params or {}).get(name)
        if given is not None:
            return dataclasses.replace(given, load_factor=float(params["load_factor"]))
        return CacheParams(algorithm=CacheAlgorithm[params["algorithm"]],
                           load_factor=float(params["load_factor"]))

    plan = {}
    for module_path, tables in document["plan"].items():
        module_plan = EmbeddingModuleShardingPlan()
        for name, table in tables.items():
            module_plan[name] = ParameterSharding(
                sharding_type=table["sharding_type"], compute_kernel=table["compute_kernel"],
                ranks=list(table["ranks"]), sharding_spec=spec_of(table),
                cache_params=cache_of(name, table))
        plan[module_path] = module_plan
    return ShardingPlan(plan=plan)


def dmp_collection_kwargs(document: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """The arguments torchrec's DMPCollection takes beside the plan, from the TorchRec plan JSON
    embshard writes for a 2D plan (include/embshard/plan/sharding_groups.h): world_size,
    sharding_group_size, node_group_size and use_inter_host_allreduce; None for a 1D plan, which
    DistributedModelParallel takes as it is."""
    if "sharding_group_size" not in document:
        return None
    return {"world_size": int(document["world_size"]),
            "sharding_group_size": int(document["sharding_group_size"]),
            "node_group_size": int(document["node_group_size"]),
            "use_inter_host_allreduce": bool(document["use_inter_host_allreduce"])}


def _shard_shapes(sharding) -> List[Tuple[Tuple[int, ...], Tuple[int, ...]]]:
    spec = sharding.sharding_spec
    if spec is None:
        return []
    return [(tuple(m.shard_offsets), tuple(m.shard_sizes)) for m in spec.shards]


def reshard_delta(old_plan, new_plan) -> Dict[str, Tuple[float, Any]]:
    """What `DistributedModelParallel.reshard` takes to go from the torchrec ShardingPlan
    `old_plan` to `new_plan` (from `EmbshardPlanner`, `load_sharding_plan` or `sharding_plan`): per
    sharded module, TorchRec's own delta (`output_sharding_plans_delta`: the MiB it moves and the
    ParameterShardings of the tables whose ranks change). TorchRec's reshard only moves shards
    between the ranks of one world; the move is refused, naming the first table, where it cannot
    express it: a module or table added or removed, or a table whose sharding type, compute kernel
    or shard geometry (offsets and sizes) changes."""
    from torchrec.distributed.sharding.dynamic_sharding import output_sharding_plans_delta

    old, new = old_plan.plan, new_plan.plan
    where = "embshard.torchrec.reshard_delta"
    if set(old) != set(new):
        raise Error(f"{where}: the plans shard other modules ({sorted(old)} against {sorted(new)}); "
                    "TorchRec's reshard moves shards of the modules it has")
    for module, tables in old.items():
        if set(tables) != set(new[module]):
            gone = sorted(set(tables) ^ set(new[module]))
            raise Error(f"{where}: table '{gone[0]}' of module '{module}' is in one plan only; TorchRec's "
                        "reshard moves the tables a module has")
        for name, before in tables.items():
            after = new[module][name]
            what = None
            if before.sharding_type != after.sharding_type:
                what = f"its sharding type ({before.sharding_type} to {after.sharding_type})"
            elif before.compute_kernel != after.compute_kernel:
                what = f"its compute kernel ({before.compute_kernel} to {after.compute_kernel})"
            elif _shard_shapes(before) != _shard_shapes(after):
                what = "its shards' offsets or sizes"
            if what is not None:
                raise Error(f"{where}: table '{name}' changes {what}; TorchRec's reshard only moves "
                            "shards between ranks")
    return output_sharding_plans_delta(old, new, return_data_volume=True)


def load_sharding_plan(path: str):
    """The ShardingPlan stored in a TorchRec plan file (`embshard plan --format torchrec --out FILE`)."""
    with open(path, encoding="utf-8") as f:
        return sharding_plan_from_dict(json.load(f))


def plan_with_torchrec(task: embshard.Task, *, storage_reservation: float = RESERVATION_SHARE,
                       hbm_mem_bw: Optional[float] = None, proposer: str = "default"):
    """Plans an embshard task with real TorchRec's EmbeddingShardingPlanner and returns the
    embshard Plan of its ShardingPlan (so the same judge rates it), or raises embshard.Error with
    TorchRec's reason. The task maps onto TorchRec as the `torchrec` sharder maps it
    (src/shard/torchrec/torchrec_planner.h): an EmbeddingBagCollection on the meta device (an
    EmbeddingCollection when every table is a sequence table; a mix is an Error), one
    feature per table with the task's pooling factor, world = devices, local world = devices per
    host, per-rank batch = global / world, per-rank HBM and DDR caps, TorchRec's bandwidth
    constants (or `hbm_mem_bw`, bytes/ms), the task's allowed sharding types, kernel "fused"
    (with the UVM kernels when the task allows UVM), TorchRec's heuristical reservation.
    `proposer`: "default" (TorchRec's default proposers) or "dynamic_programming" (its
    DynamicProgrammingProposer, what its users turn to when the defaults take too long)."""
    import torch
    from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
    from torchrec.distributed.planner import EmbeddingShardingPlanner
    from torchrec.distributed.planner.storage_reservations import HeuristicalStorageReservation
    from torchrec.distributed.planner.types import ParameterConstraints, PlannerError, Topology
    from torchrec.modules.embedding_configs import DataType, EmbeddingBagConfig
    from torchrec.modules.embedding_modules import EmbeddingBagCollection

    doc = json.loads(task.to_json())
    tables = doc["tables"]
    topo_doc = task.topology
    world = len(topo_doc["devices"])
    local = topo_doc["devices_per_host"]
    allowed = doc.get("constraints", {})
    types = ["data_parallel", "table_wise"]  # TorchRec's default types, in its order
    if allowed.get("allow_column_split", True):
        types.append("column_wise")
    if allowed.get("allow_row_split", True):
        types += ["row_wise", "table_row_wise"]
    kernels = ["dense", "fused"] + (list(UVM_KERNELS) if allowed.get("allow_uvm", False) else [])
    sequence = [t["name"] for t in tables if t.get("pooled", True) is False]
    if sequence and len(sequence) != len(tables):
        raise Error(f"plan_with_torchrec: the task mixes pooled and sequence tables ({', '.join(sequence[:5])}"
                    f"{', ...' if len(sequence) > 5 else ''} are sequence tables), which TorchRec keeps in two "
                    "modules; plan each kind as a task of its own")
    configs = [dict(name=t["name"], num_embeddings=t["stats"]["num_rows"], embedding_dim=t["dim"],
                    feature_names=[f"f_{t['name']}"],
                    data_type=DataType.FP16 if t.get("dtype") == "fp16" else DataType.FP32) for t in tables]
    if sequence and len({t["dim"] for t in tables}) > 1:
        raise Error("plan_with_torchrec: TorchRec's EmbeddingCollection needs one embedding dim for every "
                    f"table; these sequence tables have dims {sorted({t['dim'] for t in tables})}")
    if sequence:  # an EmbeddingCollection: TorchRec's EC sharder has no table_row_wise
        from torchrec.distributed.embedding import EmbeddingCollectionSharder
        from torchrec.modules.embedding_configs import EmbeddingConfig
        from torchrec.modules.embedding_modules import EmbeddingCollection
        types = [t for t in types if t != "table_row_wise"]
        module = EmbeddingCollection(device=torch.device("meta"), tables=[EmbeddingConfig(**c) for c in configs])
        sharder = EmbeddingCollectionSharder()
    else:
        module = EmbeddingBagCollection(device=torch.device("meta"), tables=[EmbeddingBagConfig(**c) for c in configs])
        sharder = EmbeddingBagCollectionSharder()
    constraints = {t["name"]: ParameterConstraints(
        sharding_types=[s for s in types if s in t.get("constraints", {}).get("sharding_types", types)],
        compute_kernels=kernels, pooling_factors=[t["stats"]["pooling_factor"]]) for t in tables}
    d0 = topo_doc["devices"][0]
    kwargs = dict(world_size=world, local_world_size=local, compute_device="cuda",
                  hbm_cap=d0["hbm_bytes"], ddr_cap=d0["uvm_bytes"])
    if hbm_mem_bw is not None:
        kwargs["hbm_mem_bw"] = hbm_mem_bw
    topology = Topology(**kwargs)
    if proposer not in ("default", "dynamic_programming"):
        raise Error(f"plan_with_torchrec: proposer '{proposer}' is not one of default, dynamic_programming")
    extra = {}
    if proposer == "dynamic_programming":
        from torchrec.distributed.planner.proposers import DynamicProgrammingProposer
        extra["proposer"] = DynamicProgrammingProposer()
    planner = EmbeddingShardingPlanner(
        topology=topology, batch_size=max(1, doc["batch_size"] // world), constraints=constraints,
        storage_reservation=HeuristicalStorageReservation(percentage=storage_reservation), **extra)
    try:
        sharding_plan = planner.plan(module, [sharder])
    except PlannerError as e:
        raise Error(f"TorchRec's planner: {str(e).splitlines()[0]}") from None
    mapped = [PlannedTable(t["name"], "", t["name"], [f"f_{t['name']}"], kernels) for t in tables]
    return plan_from_sharding_plan(task, sharding_plan, mapped)



# The TorchRec runtime judge (python/embshard/torchrec_runtime.py): plans run under real TorchRec.
from embshard.torchrec_runtime import PlanRun, RuntimeReport, measure, profile  # noqa: E402,F401
