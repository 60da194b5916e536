"""embshard: shard the embedding tables of a DLRM across GPUs, from Python.

Thin bindings over the C++ library (docs/python.md); every check and error message is the
library's own. The arrows of the data flow, one call each::

    task = embshard.Task.from_tables([embshard.Table("user", rows=10_000_000, dim=128,
                                                     pooling_factor=1.0), ...],
                                     topology="a100:gpus_per_node=4", batch_size=65536)
    plan = embshard.plan(task)                      # the best registered sharder (sim judge)
    print(embshard.evaluate(task, plan))            # the per-device breakdown
    plan.save("plan.json"); embshard.Plan.load("plan.json")

Tables given by shape alone get statistics derived from the synthetic pool's fit
(include/embshard/data/derived_stats.h); statistics measured from real indices
(`stats_from_csr`, `stats_from_dlrm_file`, `embshard.torchrec.stats_from_kjt`) replace them.
Errors raise `embshard.Error` (a ValueError) with the library's one-line message. Planning,
evaluation and comparison release the GIL. TorchRec: `embshard.torchrec.EmbshardPlanner`.
"""

from __future__ import annotations

import dataclasses
import json
import math
import operator
import os
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from . import _embshard

__all__ = ["Error", "Table", "Task", "Plan", "Breakdown", "plan", "evaluate", "compare", "check",
           "size", "fit", "replan", "Capacity", "FitAdvice", "Replan", "list", "default_sharders", "stats_from_csr", "stats_from_dlrm_file", "version",
           "DERIVED_STATS_DEFAULTS"]

Error = _embshard.Error
"""Bad input, named: the library's one-line message (file or object, table, field)."""

DERIVED_STATS_DEFAULTS: Dict[str, float] = dict(_embshard.derived_model_defaults())
"""The access model that fills in statistics of tables known by shape only (derived_stats.h)."""

_list = list  # `list` below is the registry listing, as on the command line


def version() -> str:
    """The library's version and git hash."""
    return _embshard.version()


def _integer(value: Any, where: str) -> int:
    """An int from a Python or numpy integer; anything else (bools and floats too) is an Error."""
    if isinstance(value, bool):
        raise Error(f"{where} must be an integer, got {value!r}")
    try:
        return operator.index(value)
    except TypeError:
        raise Error(f"{where} must be an integer, got {value!r}") from None


def _table_groups(groups: Any, where: str) -> List[List[str]]:
    """Placement groups as lists of table names; a plain string (a group, not a list of them) is an Error."""
    if isinstance(groups, (str, bytes)) or any(isinstance(g, (str, bytes)) for g in groups):
        raise Error(f"{where} must be a list of lists of table names, got {groups!r}")
    return [[str(name) for name in group] for group in groups]


def _finite(value: Any, where: str) -> float:
    """A finite float from a Python or numpy number; NaN, infinities and non-numbers are an Error."""
    if isinstance(value, (bool, str, bytes)):
        raise Error(f"{where} must be a number, got {value!r}")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise Error(f"{where} must be a number, got {value!r}") from None
    if not math.isfinite(number):
        raise Error(f"{where} must be finite, got {number}")
    return number


def _of_type(value: Any, kind: type, where: str) -> Any:
    """`value` if it is a `kind` (a Task, a Plan, a spec string), else an Error naming what it is."""
    if not isinstance(value, kind):
        raise Error(f"{where} must be a {kind.__name__}, got {type(value).__name__} {value!r}"[:200])
    return value


@dataclasses.dataclass
class Table:
    """One embedding table, as a TorchRec user knows it.

    ``pooling_factor`` (mean lookups per sample) with optional ``coverage`` (share of samples that
    look the table up) is enough: the other statistics are derived. ``stats`` (a dict in the task
    file's "stats" form, e.g. from `stats_from_csr`) gives measured statistics instead.
    ``optimizer`` is the state kept beside the weights ("none", "rowwise_adagrad", "adagrad",
    "adam"); ``sharding_types`` / ``allow_uvm`` / ``min_partition`` constrain this table alone.
    ``pooled=False`` makes it a sequence table (TorchRec's EmbeddingCollection): every lookup is
    an output row of its own, and its outputs are costed so.
    """

    name: str
    rows: int
    dim: int
    pooling_factor: Optional[float] = None
    coverage: Optional[float] = None
    dtype: str = "fp32"
    stats: Optional[Mapping[str, Any]] = None
    optimizer: str = "none"
    sharding_types: Optional[Sequence[str]] = None
    allow_uvm: bool = True
    min_partition: int = 0
    pooled: bool = True

    def _json(self) -> Dict[str, Any]:
        where = f"embshard.Table '{self.name}'"
        rows, dim = _integer(self.rows, f"{where}: rows"), _integer(self.dim, f"{where}: dim")
        if self.stats is not None:
            stats = dict(self.stats)
            if stats.get("num_rows") != rows:
                raise Error(f"embshard.Table '{self.name}': stats.num_rows = "
                            f"{stats.get('num_rows')} but the table has {self.rows} rows")
        else:
            if self.pooling_factor is None:
                raise Error(f"embshard.Table '{self.name}': give pooling_factor (mean lookups "
                            f"per sample) or measured stats")
            stats = {"num_rows": rows, "pooling_factor": _finite(self.pooling_factor, f"{where}: pooling_factor")}
            if self.coverage is not None:
                stats["coverage"] = _finite(self.coverage, f"{where}: coverage")
        out: Dict[str, Any] = {"name": self.name, "dim": dim, "dtype": self.dtype,
                               "stats": stats}
        if self.optimizer != "none":
            out["optimizer"] = self.optimizer
        import numpy as np
        if not isinstance(self.pooled, (bool, np.bool_)):
            raise Error(f"{where}: pooled must be True or False, got {self.pooled!r}")
        if not self.pooled:
            out["pooled"] = False
        constraints: Dict[str, Any] = {}
        if self.sharding_types is not None:
            constraints["sharding_types"] = _list(self.sharding_types)
        if not self.allow_uvm:
            constraints["allow_uvm"] = False
        if self.min_partition:
            constraints["min_partition"] = _integer(self.min_partition, f"{where}: min_partition")
        if constraints:
            out["constraints"] = constraints
        return out


class _File:
    """What task and plan objects share: their file's JSON and saving it without losing a file."""

    def __init__(self, native):
        self._native = native

    def to_json(self) -> str:
        return self._native.to_json()

    def save(self, path, *, overwrite: bool = False) -> None:
        """Writes the file; an existing file is kept (FileExistsError) unless `overwrite`, and then
        it is replaced atomically, only once the new one is complete."""
        import os
        import tempfile

        path = os.fspath(path)
        text = self.to_json()  # first: a failure leaves no file behind
        if not overwrite:
            with open(path, "x", encoding="utf-8") as f:
                f.write(text)
            return
        fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".tmp-",
                                   dir=os.path.dirname(os.path.abspath(path)))
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                f.write(text)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # as open() would have made it, not mkstemp's 0600
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise


class Task(_File):
    """Tables, a batch and a topology: what a sharder plans (the task file of docs/architecture.md)."""

    @classmethod
    def from_tables(cls, tables: Iterable[Table], topology: Union[str, Mapping[str, Any]],
                    batch_size: int, *, allow_column_split: bool = True,
                    allow_row_split: bool = True, allow_uvm: bool = False,
                    derived_stats: Optional[Mapping[str, float]] = None,
                    task_id: str = "python", replica_sync_every: int = 1,
                    colocate: Sequence[Sequence[str]] = (), separate: Sequence[Sequence[str]] = ()) -> "Task":
        """A task from tables and a topology: a preset spec ("a100:nodes=2") or the task file's
        explicit topology object. ``derived_stats`` overrides DERIVED_STATS_DEFAULTS;
        ``replica_sync_every`` is how many steps pass between a 2D plan's replica syncs;
        ``colocate`` / ``separate``: groups of table names placed whole on one device / on no
        common device (docs/data.md, "Placement groups")."""
        if isinstance(topology, str):
            topo: Dict[str, Any] = {"preset": topology}
        else:
            topo = dict(topology)
            topo.pop("name", None)  # Task.topology's label of the form; the fields define it
        doc: Dict[str, Any] = {
            "schema_version": 1, "id": task_id,
            "batch_size": _integer(batch_size, "embshard.Task: batch_size"),
            "topology": topo,
            "constraints": {"allow_column_split": allow_column_split,
                            "allow_row_split": allow_row_split, "allow_uvm": allow_uvm},
            "tables": [t._json() for t in tables]}
        if replica_sync_every != 1:
            doc["replica_sync_every"] = _integer(replica_sync_every, "embshard.Task: replica_sync_every")
        for key, groups in (("colocate", colocate), ("separate", separate)):
            if groups:
                doc["constraints"][key] = _table_groups(groups, f"embshard.Task: {key}")
        if derived_stats is not None:
            doc["derived_stats"] = dict(derived_stats)
        return cls.from_json(json.dumps(doc), where="embshard.Task")

    @classmethod
    def from_json(cls, text: str, where: str = "task") -> "Task":
        return cls(_embshard.Task.from_json(text, where))

    @classmethod
    def load(cls, path: str) -> "Task":
        """Reads a task file (`embshard task gen` writes them)."""
        return cls(_embshard.Task.from_file(str(path)))

    @classmethod
    def generate(cls, protocol: str, seed: int = 0, index: int = 0, pool_seed: int = 0) -> "Task":
        """Task `index` of a paper's protocol ("neuroshard:devices=4,max_dim=64"; `list("protocol")`)."""
        return cls(_embshard.Task.generate(protocol, seed, index, pool_seed))

    @classmethod
    def default(cls) -> "Task":
        """The built-in default task of the main job."""
        return cls(_embshard.Task.default())

    @property
    def topology(self) -> Dict[str, Any]:
        """The topology in the task file's explicit form (presets expanded): devices with their
        memory and bandwidths, devices per host, link bandwidths and latency."""
        return dict(self._native.topology_detail())

    @property
    def tables(self) -> List[Dict[str, Any]]:
        """The tables with their full statistics, as the task file holds them."""
        return json.loads(self.to_json())["tables"]

    id = property(lambda self: self._native.id)
    batch_size = property(lambda self: self._native.batch_size)
    num_devices = property(lambda self: self._native.num_devices)
    num_tables = property(lambda self: self._native.num_tables)

    def __repr__(self) -> str:
        return repr(self._native)


class Plan(_File):
    """Where every shard of every table lives (the plan file), with the sharder's status."""

    @classmethod
    def from_json(cls, text: str, where: str = "plan") -> "Plan":
        return cls(_embshard.PlanResult.from_json(text, where))

    @classmethod
    def load(cls, path: str) -> "Plan":
        """The plan file at `path`; embshard.Error (as Task.load) when it cannot be read or parsed."""
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as error:
            reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
            raise Error(f"{os.fspath(path)}: cannot read the plan: {reason}") from None
        return cls.from_json(text, where=str(path))

    @property
    def ok(self) -> bool:
        return self._native.status == "ok"

    status = property(lambda self: self._native.status, doc="ok | infeasible | time_limit")
    reason = property(lambda self: self._native.reason, doc="why, when not ok")

    @property
    def provenance(self) -> Dict[str, Any]:
        return json.loads(self.to_json())["provenance"]

    @property
    def tables(self) -> List[Dict[str, Any]]:
        return json.loads(self.to_json())["tables"]

    @property
    def sharding_groups(self) -> Optional[Dict[str, Any]]:
        """A 2D plan's layout ({"size": G, "ranks": "strided" | "contiguous"}: TorchRec's
        DMPCollection, include/embshard/plan/sharding_groups.h); None for a 1D plan."""
        return json.loads(self.to_json()).get("sharding_groups")

    def __repr__(self) -> str:
        if not self.ok:
            return f"<embshard.Plan {self.status}: {self.reason}>"
        return f"<embshard.Plan by {self.provenance['sharder']}: {len(self.tables)} tables>"


class Breakdown:
    """The judge's verdict on a plan: per-device costs and memory, and the objectives."""

    def __init__(self, document: str, table: str):
        self.json = document
        self._doc = json.loads(document)
        self._table = table

    step_ms = property(lambda self: self._doc["objectives"]["step_ms"],
                       doc="the step time: the slowest device's, ms (docs/metrics.md)")
    max_sum_ms = property(lambda self: self._doc["objectives"]["max_sum_ms"])
    balance = property(lambda self: self._doc["objectives"]["balance"])
    devices = property(lambda self: self._doc["devices"],
                       doc="per device: input comm, fw/bw compute and comm, wait, sum (ms), memory, lookups; "
                           "for a 2D plan per rank of one sharding group (every group alike)")

    def __getitem__(self, key: str) -> Any:
        return self._doc[key]

    def __str__(self) -> str:
        return self._table

    def __repr__(self) -> str:
        return f"<embshard.Breakdown step {self.step_ms:.3f} ms on {len(self.devices)} devices>"


def default_sharders() -> List[str]:
    """The sharders `plan(sharder="best")` and `compare` consider by default."""
    return _list(_embshard.default_sharders())


def plan(task: Task, sharder: str = "best", cost: str = "default", *, seed: int = 0,
         threads: int = 1, judge: str = "sim", candidates: Optional[Sequence[str]] = None) -> Plan:
    """Plans `task` with a registered sharder spec (`list("sharder")`), or with "best": every
    sharder of `candidates` (default: `default_sharders()`), the plan the `judge` backend rates
    fastest. A sharder that finds no plan returns a Plan whose `status` says why (no exception)."""
    _of_type(task, Task, "plan: task")
    _of_type(sharder, str, "plan: sharder")
    _of_type(cost, str, "plan: cost")
    if sharder != "best":
        return Plan(_embshard.plan(task._native, sharder, cost, seed, threads))
    if candidates is not None and not _list(candidates):
        raise Error("embshard.plan: candidates is empty (leave it out for the default sharders)")
    # The fastest by the judge, the first of the candidates on a tie (C++'s fastest_row, as the CLI).
    return Plan(_embshard.plan_fastest(task._native, _list(candidates or []), cost, judge, seed, threads))


def evaluate(task: Task, plan: Plan, backend: str = "sim", *, batch_size: Optional[int] = None,
             seed: int = 0, threads: int = 1, input_comm: Optional[str] = None,
             exchanges: Optional[str] = None) -> Breakdown:
    """Judges `plan` on `task` with a judge: a backend (`list("backend")`: sim, cpu, reference, ...)
    or any judge spec (`list("cost")`: "sim:coefficients=F.json", "measured:impl=cpu,repeats=9").
    `batch_size` (a measured judge's batch; 0: the task's), `input_comm` as for `compare` and
    `exchanges`, where given, are set in the judge where it takes them. Each device's entry has
    `in_comm_ms` (the input all-to-all the step pays) and `in_hidden_ms` (the part an overlapping
    pipeline hides). `exchanges`: "fused" (one exchange set for the plan) or "per_type" (one per
    sharding type, as TorchRec runs them: each further type pays the all-to-all latency again)."""
    batch = -1 if batch_size is None else _integer(batch_size, "evaluate: batch_size")
    document, table = _embshard.evaluate(task._native, plan._native, backend, batch, seed,
                                         threads, input_comm or "", exchanges or "")
    return Breakdown(document, table)


@dataclasses.dataclass
class CompareRow:
    task_id: str
    sharder: str
    status: str
    reason: str
    step_ms: float
    max_sum_ms: float
    balance: float
    plan_ms: float
    lower_bound_ms: float
    plan: Plan


def compare(tasks: Union[Task, Sequence[Task]], sharders: Optional[Sequence[str]] = None,
            cost: str = "default", backend: str = "sim", *, seed: int = 0,
            threads: int = 1, input_comm: Optional[str] = None) -> List[CompareRow]:
    """Plans every task with every sharder (default: `default_sharders()`) and judges each plan
    with the judge `backend` (as for `evaluate`); rows task-major, as `embshard compare` writes
    them. `input_comm`, where given: whether the judge's step pays the input all-to-all of indices
    (exposed, the default), hides it under compute where it fits (overlap, TorchRec's pipeline) or
    leaves it out (omit, the papers' benchmarks)."""
    if isinstance(tasks, Task):
        tasks = [tasks]
    rows = _embshard.compare([t._native for t in tasks], _list(sharders or []), cost, backend,
                             seed, threads, input_comm or "")
    return [CompareRow(r["task_id"], r["sharder"], r["status"], r["reason"], r["step_ms"],
                       r["max_sum_ms"], r["balance"], r["plan_ms"], r["lower_bound_ms"],
                       Plan(r["plan"])) for r in rows]


@dataclasses.dataclass
class Capacity:
    """`size`'s answer: `points` (one dict per device count planned: devices, hosts, status,
    reason, step_ms, lower_bound_ms, plan_ms, meets), `fewest` (0: none met the target) and
    `verdict`, the one line `embshard size` prints last."""
    fewest: int
    verdict: str
    target_ms: float
    points: List[Dict[str, Any]]


def size(task: Task, target_step_ms: Optional[float] = None, *, devices: Optional[Sequence[int]] = None,
         sharder: str = "joint", cost: str = "default", judge: str = "sim", seed: int = 0,
         threads: int = 1) -> Capacity:
    """Capacity planning (`embshard size`, docs/what_if.md): the task planned at each device count
    of its hardware in `devices` = (min, max) (default 1 to 16 × today's), the global batch and the
    memory per device kept; with `target_step_ms`, the fewest devices whose plan meets it."""
    _of_type(task, Task, "size: task")
    if devices is None:
        devices = (1, 16 * task._native.num_devices)
    if isinstance(devices, (str, bytes)) or not hasattr(devices, "__len__") or len(devices) != 2:
        raise Error(f"size: devices must be (min, max), got {devices!r}")
    lo, hi = devices
    target = 0.0 if target_step_ms is None else _finite(target_step_ms, "size: target_step_ms")
    if target_step_ms is not None and target <= 0:
        raise Error(f"size: target_step_ms must be above 0 ms, got {target_step_ms!r}")
    doc = json.loads(_embshard.size(task._native, _integer(lo, "size: devices[0]"), _integer(hi, "size: devices[1]"),
                                    target, sharder, cost, judge, seed, threads))
    return Capacity(doc["fewest"], doc["verdict"], doc["target_ms"], doc["points"])


@dataclasses.dataclass
class FitAdvice:
    """`fit`'s answer: whether the task `fits` as it is; else its `conflicts` (one line each), the
    `changes` that make it fit, ranked (dicts: kind, description, added_share, step_ms,
    next_smaller, and `task`, the changed Task), and the kinds that did not help (`not_helping`)."""
    fits: bool
    conflicts: List[str]
    changes: List[Dict[str, Any]]
    not_helping: List[str]


def fit(task: Task, *, sharder: str = "joint", cost: str = "default", judge: str = "sim", seed: int = 0,
        threads: int = 1) -> FitAdvice:
    """Why `task` does not fit and the smallest changes that make it fit, each verified by planning
    the changed task with `sharder` (`embshard fit`, docs/what_if.md)."""
    doc = json.loads(_embshard.fit(task._native, sharder, cost, judge, seed, threads))
    changes = []
    for change in doc["changes"]:
        change["task"] = Task.from_json(change["task"], where=f"fit: the {change['kind']} change")
        changes.append(change)
    return FitAdvice(doc["fits"], doc["conflicts"], changes, doc["not_helping"])


@dataclasses.dataclass
class Replan:
    """`replan`'s answer: the chosen `plan`, its point (`chosen`: moved_bytes, moved_share of the
    task's table bytes, step_ms), the curve's ends (`kept`: the old plan kept where it can be;
    `target`: the from-scratch plan relabelled), every point of the `curve`, the bytes each device
    sends and receives, the bytes of tables `created`, and the one-line `verdict`."""
    plan: Plan
    chosen: Dict[str, Any]
    kept: Dict[str, Any]
    target: Dict[str, Any]
    curve: List[Dict[str, Any]]
    sent_bytes: List[float]
    received_bytes: List[float]
    created_bytes: float
    verdict: str


def replan(task: Task, old_plan: Plan, *, max_move: Optional[float] = None, sharder: str = "joint:groups=none",
           cost: str = "default", judge: str = "sim", seed: int = 0, threads: int = 1,
           reshard: bool = False, layout: str = "best") -> Replan:
    """Re-plans a changed `task` (new statistics, tables, world size) from the plan running today
    (`embshard replan`, docs/what_if.md): the fastest plan found moving at most `max_move` — a
    share of the task's table bytes when ≤ 1, else whole bytes; None: no limit. A 2D old plan is
    re-planned in its own layout, every replica's moves counted, and in 1D (docs/what_if.md):
    `layout` "best" takes the faster, "kept" keeps the 2D layout (a job staying on
    DMPCollection), "1d" re-plans in 1D only. With `reshard`,
    only plans TorchRec's `DistributedModelParallel.reshard` can run (the same ranks and tables,
    each table keeping its sharding type and shards; `embshard.torchrec.reshard_delta` builds its
    argument)."""
    _of_type(task, Task, "replan: task")
    _of_type(old_plan, Plan, "replan: old_plan")
    limit = math.inf if max_move is None else _finite(max_move, "replan: max_move")
    if limit < 0:
        raise Error(f"replan: max_move must be >= 0, got {max_move!r}")
    if limit > 1 and math.isfinite(limit) and limit != math.floor(limit):
        raise Error(f"replan: max_move {max_move!r} is neither a share (up to 1) nor whole bytes")
    if limit <= 1:
        limit *= task._native.total_bytes
    native, document = _embshard.replan(task._native, old_plan._native, limit, sharder, cost, judge, seed, threads,
                                        bool(reshard), str(layout))
    doc = json.loads(document)
    return Replan(Plan(native), doc["chosen"], doc["kept"], doc["target"], doc["curve"], doc["sent_bytes"],
                  doc["received_bytes"], doc["created_bytes"], doc["verdict"])


def check(task: Task, plan: Plan) -> None:
    """Raises Error naming the first problem if `plan` is not a valid plan for `task`."""
    problem = _embshard.check(task._native, plan._native)
    if problem:
        raise Error(problem)


def list(family: str = "sharder") -> List[Dict[str, Any]]:  # noqa: A001 (the CLI's verb)
    """The registered plug-ins of a family — sharder, cost, topology, protocol or backend — with
    their parameters, as `embshard list` prints them."""
    return _list(_embshard.list(family))


def stats_from_csr(indices, offsets, num_rows: int, *, where: str = "stats_from_csr") -> Dict[str, Any]:
    """Measured statistics of one table from a batch of lookups in CSR form (FBGEMM's layout):
    `offsets` (batch + 1 entries) and `indices` (int32 or int64 arrays or sequences)."""
    import numpy as np

    idx = np.ascontiguousarray(indices)
    off = np.ascontiguousarray(offsets)
    for name, array in (("indices", idx), ("offsets", off)):
        if array.size and not np.issubdtype(array.dtype, np.integer):
            raise Error(f"{where}: {name} must be integers, got an array of {array.dtype}")
    if idx.dtype not in (np.int32, np.int64):
        idx = idx.astype(np.int64)
    if off.dtype not in (np.int32, np.int64) or (off.dtype == np.int32 and idx.dtype == np.int64):
        off = off.astype(np.int64)
    return json.loads(_embshard.csr_stats(idx, off, int(num_rows), where))["tables"][0]


def stats_from_dlrm_file(path: str, *, threads: int = 1) -> List[Dict[str, Any]]:
    """Measured statistics of every table of a DLRM dataset file (.pt, as `embshard stats`)."""
    return json.loads(_embshard.dlrm_file_stats(str(path), threads))["tables"]
