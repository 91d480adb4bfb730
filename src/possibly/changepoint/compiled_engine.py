"""The compiled engine: one generic numba loop of the recursion that runs any model's kernel.

The loop (:func:`run_kernels`) is :func:`possibly.changepoint.recursion.step` over flat run
buffers, with everything that depends on θ left to the per-run functions of a
:class:`~possibly.changepoint.models.CompiledKernel`. :func:`compiled_driver` compiles one copy
of it per kernel, with the kernel's functions linked into it (direct calls: a call through a
function pointer would cost several times the arithmetic), cached on disk under a name that
carries a fingerprint of the kernel's code. This module imports numba only inside the
functions that compile.
"""

from __future__ import annotations

import functools
import hashlib
import math
import types
from collections.abc import Callable, Hashable, Sequence
from typing import Any, NamedTuple

import numpy as np

from possibly.changepoint.models.segment_model import (
    CompiledKernel,
    KernelFunctions,
    SegmentModel,
)
from possibly.changepoint.recursion import ChangepointParams, RunBlock, RunState

__all__ = ["CompiledModels", "compiled_driver", "compiled_models", "not_compiled_because",
           "run_compiled", "run_kernels", "shared_kernels"]

#: the recursion's per-step outputs, in the order run_kernels returns them
OUTPUTS = ("start", "model", "mean", "log_consistency", "discount", "n_active",
           "log_change_possibility")


def shared_kernels(models: Sequence[SegmentModel]) -> tuple[CompiledKernel, ...] | None:
    """The models' compiled kernels when they can run in one compiled loop
    (:func:`not_compiled_because` has nothing against them), else None.

    Examples
    --------
    >>> from possibly.changepoint.models import NormalMean, model_family
    >>> len(shared_kernels(model_family())), shared_kernels([NormalMean(1.0), *model_family()])
    (3, None)
    """
    if not_compiled_because(models) is not None:
        return None
    return tuple(m.compiled_kernel() for m in models)  # type: ignore[misc]


def not_compiled_because(models: Sequence[SegmentModel]) -> str | None:
    """Why ``models`` cannot run in one compiled loop, or None when they can: every model has
    a compiled kernel, all with the same functions, for scalar observations
    (``event_ndim == 0``), with the kernel's ``indistinguishable`` when the model merges runs
    (overrides :meth:`SegmentModel.indistinguishable`): without it the engines would disagree.

    Examples
    --------
    >>> from possibly.changepoint.models import NormalMean, model_family
    >>> not_compiled_because(model_family()) is None
    True
    >>> not_compiled_because([NormalMean(1.0), *model_family()])
    'the models do not share one kernel (KernelFunctions)'
    """
    kernels = [m.compiled_kernel() for m in models]
    for model, kernel in zip(models, kernels, strict=True):
        if kernel is None:
            return f"{model!r} has no compiled kernel (compiled_kernel() is None)"
        if model.event_ndim != 0:
            return (f"{model!r} observes vectors (event_ndim={model.event_ndim}); compiled "
                    f"kernels take scalar observations only")
        merges = type(model).indistinguishable is not SegmentModel.indistinguishable
        if merges and kernel.functions.indistinguishable is None:
            return (f"{model!r} merges runs (it overrides indistinguishable) but its compiled "
                    f"kernel has no indistinguishable function (KernelFunctions."
                    f"indistinguishable is None)")
    if any(k.functions != kernels[0].functions for k in kernels):  # type: ignore[union-attr]
        return "the models do not share one kernel (KernelFunctions)"
    return None


def unbound(*args: Any) -> Any:
    """What the ``kernel_*`` names of the template :func:`run_kernels` are until
    :func:`compiled_driver` binds them to a kernel's functions."""
    raise RuntimeError("run_kernels is a template: run compiled_driver(functions) instead")


# the names run_kernels reads, bound per kernel by compiled_driver
kernel_prepare = kernel_new_run = kernel_forget = kernel_log_consistency = unbound
kernel_update = kernel_estimate = kernel_indistinguishable = discount_scalar = unbound
kernel_run_size = unbound
KERNEL_MERGES = False
KERNEL_SIZED = False  # the kernel has run_size (its runs are copied by their size)
KERNEL_WIDTH = 1
KERNEL_PARAMS = 1
settings_of = unbound
bank_post_step = unbound  # step_streams's per-stream hook, bound by compiled_streams
bank_prefetch = unbound  # step_streams's per-stream hint, bound by compiled_streams
stream_calibrate = unbound  # step_calibrated's calibration step, bound by compiled_stepper
stream_range = range  # numba.prange once compiled (threads when compiled parallel)
prefetch = unbound  # memory_prefetch() once compiled


def never_indistinguishable(params: Any, runs: Any, j: int, tol: float) -> bool:
    """The merge test of a kernel that does not merge."""
    return False


def no_run_size(params: Any) -> int:
    """The ``run_size`` of a kernel without one (never called: its runs are copied whole)."""
    return 0


def fingerprint(functions: KernelFunctions, *extra: Any) -> str:
    """A digest of the content of the kernel functions, so that a changed kernel gets its own
    cache entry (numba checks only the driver's file, this one).

    Hashed recursively, by value: each function's bytecode, names and constants (nested code
    objects by their content, never by a repr that carries an address), its closure cells and
    defaults, and the globals it names: functions and numba dispatchers (recursively), numbers,
    strings, tuples and arrays. Two kernels that differ in any of these get different digests,
    and the digest is the same in every process. ``extra``: more functions compiled into the
    driver from outside this module (hashed after the kernel's).
    """
    from possibly.compiled import discount_scalar

    digest = hashlib.sha256(repr(functions.width).encode())
    visited: set[int] = set()
    for fn in (*functions[1:], discount_scalar, *extra):
        content_hash(fn, digest, visited)
    return digest.hexdigest()[:16]


def content_hash(value: Any, digest: Any, visited: set[int]) -> None:
    """Feed ``value``'s content to ``digest`` (see :func:`fingerprint`)."""
    value = getattr(value, "py_func", value)  # a numba dispatcher: its Python function
    if isinstance(value, types.FunctionType):
        if id(value) in visited:  # recursion, or a helper met twice
            digest.update(b"<seen>" + value.__qualname__.encode())
            return
        visited.add(id(value))
        digest.update(f"<function {value.__module__}.{value.__qualname__}>".encode())
        code_hash(value.__code__, digest, visited, value.__globals__)
        for cell in value.__closure__ or ():
            digest.update(b"<cell>")
            content_hash(cell.cell_contents, digest, visited)
        content_hash(value.__defaults__, digest, visited)
        content_hash(sorted((value.__kwdefaults__ or {}).items()), digest, visited)
    elif isinstance(value, (tuple, list)):
        digest.update(f"<{type(value).__name__} {len(value)}>".encode())
        for item in value:
            content_hash(item, digest, visited)
    elif isinstance(value, np.ndarray):
        digest.update(f"<array {value.dtype.str} {value.shape}>".encode())
        digest.update(np.ascontiguousarray(value).tobytes())
    elif value is None or isinstance(value, (bool, int, float, complex, str, bytes, np.generic)):
        digest.update(f"<{type(value).__name__} {value!r}>".encode())
    elif isinstance(value, types.ModuleType):
        digest.update(f"<module {value.__name__}>".encode())
    elif isinstance(value, type):
        digest.update(f"<class {value.__module__}.{value.__qualname__}>".encode())
    else:  # anything else: by its type (its repr may carry an address)
        digest.update(f"<object {type(value).__module__}.{type(value).__qualname__}>".encode())


def code_hash(code: types.CodeType, digest: Any, visited: set[int],
              globals_: dict[str, Any]) -> None:
    """Feed a code object's content to ``digest``: its bytecode, names, constants (nested code
    by content) and the values of the globals it names."""
    digest.update(code.co_code)
    digest.update(repr(code.co_names).encode())
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            digest.update(b"<code>")
            code_hash(const, digest, visited, globals_)
        else:
            content_hash(const, digest, visited)
    for name in code.co_names:
        if name in globals_:
            digest.update(f"<global {name}>".encode())
            content_hash(globals_[name], digest, visited)


#: settings of at most this many floats reach the kernel functions as a tuple (constants in
#: registers, where an array may alias the runs and is read again at every run); longer ones
#: as an array (building the tuple at every step costs more than the reads it saves)
TUPLE_SETTINGS = 4


def same_settings(params: Any, n: int) -> Any:
    """The settings row as it is (the kernel functions read the array)."""
    return params


#: numba's options for a function that only compiled code calls (no wrapper for calls from
#: Python: less to compile)
NESTED: dict[str, Any] = {"nogil": True, "no_cpython_wrapper": True, "no_cfunc_wrapper": True}


@functools.cache
def nested(fn: Any) -> Any:
    """``fn`` compiled with :data:`NESTED`, once per process: the drivers and steps that call
    it share one dispatcher (each would otherwise compile its own copy)."""
    import numba

    return numba.njit(**NESTED)(fn)


@functools.cache
def compiled_driver(functions: KernelFunctions, n_params: int) -> Any:
    """:func:`run_kernels` compiled with ``functions`` inlined, for settings of ``n_params``
    floats (one per kernel and length, cached in memory and on disk)."""
    return compiled_template(run_kernels, functions, n_params)


def compiled_template(template: Any, functions: KernelFunctions, n_params: int,
                      helpers: tuple[Any, ...] = (), hooks: dict[str, Any] | None = None,
                      parallel: bool = False, refcounts: bool = True) -> Any:
    """``template`` (:func:`run_kernels`, :func:`step_kernels` or :func:`step_streams`)
    compiled with ``functions`` and the helpers of :data:`TEMPLATES` inlined, cached on disk
    under a name that carries the kernel's fingerprint. ``helpers``: more templates of this
    module that ``template`` calls (inlined, as those of :data:`TEMPLATES`); ``hooks``: names
    that ``template`` calls bound to functions of any module (inlined, compiled with their own
    globals, and part of the fingerprint); ``parallel``: compiled with numba's
    ``parallel=True`` (a template's ``stream_range`` loop runs on numba's threads);
    ``refcounts=False``: compiled without numba's runtime (no reference counts: an atomic
    increment and decrement for each array passed or sliced, which cost more than the
    arithmetic of a small kernel), with the kernel's functions inlined; for a template and
    functions that allocate no array. With the runtime, the kernel's functions
    (:func:`nested`) and :func:`model_settings` are compiled without wrappers and called,
    linked into the driver."""
    import numba
    from numba.np.unsafe.ndarray import to_fixed_tuple  # array -> tuple of a constant length

    from possibly.compiled import discount_scalar

    def jit(fn: Any) -> Any:
        if not refcounts:  # inlined: compiled with the driver's flags
            return numba.njit(nogil=True, inline="always")(getattr(fn, "py_func", fn))
        # called from compiled code only: no wrapper for calls from Python (less to compile)
        return fn if hasattr(fn, "py_func") else nested(fn)

    merges = functions.indistinguishable is not None
    bound = {"kernel_prepare": jit(functions.prepare), "kernel_new_run": jit(functions.new_run),
             "kernel_forget": jit(functions.forget),
             "kernel_log_consistency": jit(functions.log_consistency),
             "kernel_update": jit(functions.update), "kernel_estimate": jit(functions.estimate),
             "kernel_indistinguishable": jit(functions.indistinguishable if merges
                                             else never_indistinguishable),
             "kernel_run_size": jit(functions.run_size or no_run_size),
             "KERNEL_SIZED": functions.run_size is not None,
             "KERNEL_MERGES": merges, "KERNEL_WIDTH": functions.width,
             "KERNEL_PARAMS": n_params,
             "settings_of": (to_fixed_tuple if n_params <= TUPLE_SETTINGS
                             else numba.njit(nogil=True, inline="always")(same_settings)),
             # a copy without wrappers (less to compile than the cached dispatcher)
             "discount_scalar": (nested(discount_scalar.py_func) if refcounts
                                 else discount_scalar),
             "stream_range": numba.prange, "prefetch": memory_prefetch()}
    hooks = hooks or {}
    scope = {**template.__globals__, **bound}
    for helper in (*TEMPLATES[1:], *helpers):  # compiled into the driver (its cache holds them)
        # model_settings called, not inlined, with the runtime: one row view compiled, not
        # one per call site
        flags = (NESTED if refcounts and helper is model_settings
                 else {"nogil": True, "inline": "always"})
        scope[helper.__name__] = numba.njit(**flags)(
            types.FunctionType(helper.__code__, scope, helper.__name__))
    for name, hook in hooks.items():
        scope[name] = numba.njit(nogil=True, inline="always")(getattr(hook, "py_func", hook))
    driver = types.FunctionType(template.__code__, scope, template.__name__)
    digest = fingerprint(functions, *hooks.values())
    driver.__qualname__ = f"{template.__name__}_{digest}_{n_params}" + (
        "_parallel" if parallel else "") + ("" if refcounts else "_plain")
    # no C callback wrapper (never used: less to compile)
    options: dict[str, Any] = {"cache": True, "nogil": True, "no_cfunc_wrapper": True}
    if parallel:
        options["parallel"] = True
    if not refcounts:
        options["_nrt"] = False  # numba's switch for its runtime (allocation, refcounts)
    return numba.njit(**options)(driver)


@functools.cache
def memory_prefetch() -> Any:
    """``prefetch(array, k)``: a hint to the processor to load the cache line of the ``k``-th
    element of ``array``'s data (counted from its first, whatever its shape), for writing
    (LLVM's ``llvm.prefetch``). It changes no value and never faults (an address outside the
    array is only a wasted hint)."""
    from llvmlite import ir
    from numba.core import cgutils
    from numba.core import types as nbtypes
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx: Any, array: Any, k: Any) -> Any:
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            data = context.make_array(signature.args[0])(context, builder, args[0]).data
            byte = ir.IntType(8).as_pointer()
            hint = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [byte] + [ir.IntType(32)] * 3),
                # unsuffixed: LLVM names the overload by the pointer type (typed or opaque)
                "llvm.prefetch")
            # for writing (1), kept in every cache level (3), data (1)
            builder.call(hint, [builder.bitcast(builder.gep(data, [args[1]]), byte),
                                *(ir.IntType(32)(v) for v in (1, 3, 1))])
            return context.get_dummy_value()

        return nbtypes.void(array, nbtypes.intp), codegen

    return prefetch


class CompiledModels(NamedTuple):
    """What the compiled engine needs of a list of models, prepared once per fit
    (:func:`compiled_models`)."""

    kernels: tuple[CompiledKernel, ...]
    #: run_kernels compiled for their functions
    driver: Any
    #: the models' packed settings, one row per model (NaN-padded)
    settings: np.ndarray
    work_size: int
    #: ``d`` of the discount (ChangepointParams.dim), asked once
    dim: float


def compiled_models(models: Sequence[SegmentModel]) -> CompiledModels | None:
    """The compiled engine of ``models`` (:func:`shared_kernels`), or None when they have none.

    Compiling takes a few seconds the first time on a machine (then the disk cache loads it).
    """
    kernels = shared_kernels(models)
    if kernels is None:
        return None
    settings = packed_settings(kernels, max(kern.params.size for kern in kernels))
    return CompiledModels(kernels, compiled_driver(kernels[0].functions, settings.shape[1]),
                          settings, max(kern.work_size for kern in kernels),
                          max(float(m.dim) for m in models))


def packed_settings(kernels: Sequence[CompiledKernel], width: int) -> np.ndarray:
    """The kernels' settings, one row of ``width`` floats per model (NaN-padded)."""
    settings = np.full((len(kernels), width), np.nan)
    for k, kern in enumerate(kernels):
        settings[k, :kern.params.size] = kern.params
    return settings


def packed_state(state: RunState, kernels: tuple[CompiledKernel, ...]
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``state`` as per-model buffers ``(count, start, log_w, runs)`` for :func:`run_kernels`."""
    count = np.fromiter((blk.start.size for blk in state.blocks), np.int64, len(kernels))
    rows = [kern.pack(blk.runs) for kern, blk in zip(kernels, state.blocks, strict=True)]
    width = kernels[0].functions.width
    if not all(r.ndim == 2 and r.shape[1] == width for r in rows):
        raise ValueError(f"the compiled kernel's pack must return rows of width {width} "
                         f"(KernelFunctions.width), got shapes {[r.shape for r in rows]}")
    if len(rows) == 1:  # views (run_kernels copies them)
        blk = state.blocks[0]
        return count, blk.start[None], blk.log_w[None], rows[0][None]
    cap = max(int(count.max()), 1)
    start = np.empty((len(rows), cap), np.int64)  # rows past count[k] are never read
    log_w = np.empty((len(rows), cap))
    runs = np.empty((len(rows), cap, width))
    for k, blk in enumerate(state.blocks):
        start[k, :count[k]], log_w[k, :count[k]], runs[k, :count[k]] = \
            blk.start, blk.log_w, rows[k]
    return count, start, log_w, runs


def run_compiled(state: RunState, y: np.ndarray, params: ChangepointParams,
                 interrupted: list[bool], compiled: CompiledModels, chunk: int,
                 peak: np.ndarray | None = None) -> tuple[RunState, dict[str, np.ndarray]]:
    """The compiled recursion over ``y`` from ``state``, in chunks (Ctrl-C between them).

    ``peak[s]`` is raised in place to the largest normalised log weight any kept hypothesis
    with start ``s`` has after each step (the hindsight change possibility; starts at or past
    ``peak.size`` are not tracked; None tracks nothing).
    """
    # a writeable float64 array always (a read-only one would compile a second version)
    peak = np.empty(0) if peak is None else peak
    count, start, log_w, runs = packed_state(state, compiled.kernels)
    tau = math.nan if params.tau is None else params.tau
    log_tol = math.log(params.tol) if params.tol > 0.0 else -math.inf
    t = state.t
    y = np.ascontiguousarray(y, dtype=np.float64)
    parts = []
    for first in range(0, y.size, chunk):
        if interrupted[0]:
            raise KeyboardInterrupt
        part = y[first:first + chunk]
        res = compiled.driver(part, t, count, start, log_w, runs, compiled.settings,
                              math.log(params.hazard), params.forgetting, params.robust, tau,
                              compiled.dim, log_tol, params.tol > 0.0, params.merge_tol,
                              peak, *driver_buffers(count, part.size, runs.shape[2],
                                                    compiled.work_size))
        count = res[0]
        # the buffers come flat, model k's runs at k * cap (reshaped here: in numba, reshape
        # compiles an implementation)
        cap = res[1].size // count.size
        start, log_w = res[1].reshape(count.size, cap), res[2].reshape(count.size, cap)
        runs = res[3].reshape(count.size, cap, res[3].shape[1])
        parts.append(res[4:])
        t += part.size
    if interrupted[0]:
        raise KeyboardInterrupt
    blocks = tuple(RunBlock(start[k, :count[k]].copy(), log_w[k, :count[k]].copy(),
                            kern.unpack(runs[k, :count[k]]))
                   for k, kern in enumerate(compiled.kernels))
    empty = (np.zeros(0, np.int64),) * 2 + (np.zeros(0),) * 3 + (np.zeros(0, np.int64),
                                                                 np.zeros(0))
    columns = (parts[0] if len(parts) == 1 else
               [np.concatenate(col) for col in zip(*parts, strict=True)] if parts else empty)
    return RunState(t, blocks), dict(zip(OUTPUTS, columns, strict=True))


def driver_buffers(count: np.ndarray, n: int, width: int, work_size: int
                   ) -> tuple[np.ndarray, ...]:
    """The buffers :func:`run_kernels` fills for ``n`` observations from ``count[k]`` runs
    per model (allocated here: numpy's allocation compiled in the driver costs time at its
    first call). Room for ``cap = n + max(count)`` runs per model."""
    n_models = count.size
    cap = n + int(count.max())
    # in run_kernels' order: start, cnt, older, out_start, out_model, out_n
    ints = [np.empty(size, np.int64) for size in (n_models * cap, n_models, n_models, n, n, n)]
    # log_w, prepared, out_mean, out_lc, out_g, out_cp
    floats = [np.empty(size) for size in (n_models * cap, n_models, n, n, n, n)]
    # runs and work, zeroed: the unused tail of each row and the kernel's scratch start at 0.0
    return (*ints, *floats, np.zeros((n_models * cap, width)), np.zeros(max(work_size, 1)))


def run_kernels(y, t0, count_in, start_in, log_w_in, runs_in, params, log_h, rho, robust,
                tau_or_nan, dim, log_tol, prune, merge_tol, peak, start, cnt, older, out_start,
                out_model, out_n, log_w, prepared, out_mean, out_lc, out_g, out_cp, runs,
                work):  # pragma: no cover - compiled (covered through the detector)
    """Process ``y`` from the given runs (per-model buffers); returns the runs (count per
    model, then the buffers flat, model ``k``'s run ``j`` at ``k * cap + j``) and outputs.

    A template, as the helpers below: :func:`compiled_driver` binds the ``kernel_*`` names to
    one kernel's functions and compiles it. ``params[k]`` are model ``k``'s packed settings,
    ``runs_in[k, j]`` its run ``j`` (ordered by start); here model ``k``'s run ``j`` is at
    ``k * cap + j`` of one buffer per quantity. Per step: start a run per model, forget the
    older runs, take the consistency's maximum, discount, update, normalise, prune, merge, and
    record the MAP (the first maximum, model 0 first, then by start), and raise ``peak`` (see
    :func:`run_compiled`). The arguments after ``peak`` are :func:`driver_buffers`.
    """
    n_models = count_in.size
    n = y.size
    cap = start.size // n_models
    total = 0
    for k in range(n_models):
        c = cnt[k] = count_in[k]
        for j in range(c):
            start[k * cap + j] = start_in[k, j]
            log_w[k * cap + j] = log_w_in[k, j]
            for col in range(KERNEL_WIDTH):
                runs[k * cap + j, col] = runs_in[k, j, col]
        total += c
    cur_max = largest_weight(log_w, cnt, cap)
    for i in range(n):
        t = t0 + i
        new_runs(params, start, log_w, runs, cnt, older, cap, t,
                 log_h + cur_max if total > 0 else 0.0)
        if math.isnan(y[i]):
            out_lc[i] = out_g[i] = math.nan
            forget_older(params, runs, older, cap, rho, work)
            shift = 0.0  # subtracting 0.0 is exact: a missing value leaves log_w as it is
        else:
            out_lc[i], out_g[i], shift = observe(params, runs, log_w, cnt, older, cap, y[i],
                                                  rho, dim, tau_or_nan, robust, work, prepared)
        total = compact(params, start, log_w, runs, cnt, cap, shift, prune, log_tol)
        if KERNEL_MERGES and merge_tol > 0.0:
            total = merge_adjacent(params, start, log_w, runs, cnt, cap, merge_tol)
        bk, bj, cur_max, out_cp[i] = map_run(start, log_w, cnt, cap, t, peak)
        out_start[i], out_model[i], out_n[i] = start[bk * cap + bj], bk, total
        out_mean[i] = kernel_estimate(model_settings(params, bk), runs, bk * cap + bj)
    return (cnt, start, log_w, runs, out_start, out_model, out_mean, out_lc, out_g, out_n,
            out_cp)


def model_settings(params, k):  # pragma: no cover - compiled
    """Model ``k``'s settings as the kernel's functions take them (row ``k`` of ``params``)."""
    return settings_of(params[k], KERNEL_PARAMS)


def largest_weight(log_w, cnt, cap):  # pragma: no cover - compiled
    """The largest log weight of the runs (-inf without runs)."""
    top = -math.inf
    for k in range(cnt.size):
        for j in range(k * cap, k * cap + cnt[k]):
            if log_w[j] > top:
                top = log_w[j]
    return top


def new_runs(params, start, log_w, runs, cnt, older, cap, t,
             log_new):  # pragma: no cover - compiled
    """The prediction of step ``t``: one new run per model, of log weight ``log_new``, after
    the ``older[k]`` runs of model ``k`` (forgetting those is fused into the next pass)."""
    for k in range(cnt.size):
        c = cnt[k]
        start[k * cap + c] = t
        log_w[k * cap + c] = log_new
        kernel_new_run(model_settings(params, k), runs, k * cap + c)
        older[k] = c
        cnt[k] = c + 1


def forget_older(params, runs, older, cap, rho, work):  # pragma: no cover - compiled
    """The prediction of a missing observation: forget every run but the new ones."""
    for k in range(older.size):
        pk = model_settings(params, k)
        for j in range(k * cap, k * cap + older[k]):
            kernel_forget(pk, runs, j, rho, work)


def observe(params, runs, log_w, cnt, older, cap, y, rho, dim, tau_or_nan, robust, work,
            prepared):  # pragma: no cover - compiled
    """Forget the older runs, take ``log c``, discount and update: ``(log c, γ, max log w)``
    (``prepared``: scratch for each model's prepared observation)."""
    n_models = cnt.size
    log_c = -math.inf
    for k in range(n_models):
        pk = model_settings(params, k)
        x = kernel_prepare(pk, y)
        prepared[k] = x
        first = k * cap
        last_older = older[k]
        for j in range(cnt[k]):
            if j < last_older:
                kernel_forget(pk, runs, first + j, rho, work)
            lw = log_w[first + j]
            # log c <= 0: a run of log weight at most the largest so far cannot raise it (the
            # same maximum, without the run's consistency)
            if lw > log_c:
                v = lw + kernel_log_consistency(pk, runs, first + j, x)
                if v > log_c:
                    log_c = v
    g = discount_scalar(log_c, dim, tau_or_nan, robust)
    mx = -math.inf
    for k in range(n_models):
        pk = model_settings(params, k)
        x = prepared[k]
        first = k * cap
        for j in range(cnt[k]):
            v = log_w[first + j] + kernel_update(pk, runs, first + j, x, g, work)
            log_w[first + j] = v
            if v > mx:
                mx = v
    return log_c, g, mx


def move_run(start, log_w, runs, src, dst, size):  # pragma: no cover - compiled
    """Run ``src`` copied to ``dst`` (its log weight is the caller's): the first ``size``
    floats of its row (the kernel's ``run_size``), the whole row without one."""
    start[dst] = start[src]
    if dst != src:
        if KERNEL_SIZED:
            for c in range(size):
                runs[dst, c] = runs[src, c]
        else:
            for c in range(KERNEL_WIDTH):  # a constant: unrolled
                runs[dst, c] = runs[src, c]


def run_size_of(params, k):  # pragma: no cover - compiled
    """The floats of model ``k``'s runs that :func:`move_run` copies (0: the whole row)."""
    if KERNEL_SIZED:
        return kernel_run_size(model_settings(params, k))
    return 0


def compact(params, start, log_w, runs, cnt, cap, shift, prune,
            log_tol):  # pragma: no cover - compiled
    """Normalise (``log w −= shift``) and prune below ``log_tol``, order kept; the count."""
    total = 0
    for k in range(cnt.size):
        size = run_size_of(params, k)
        w = 0
        for j in range(cnt[k]):
            v = log_w[k * cap + j] - shift
            if (not prune) or v >= log_tol:
                move_run(start, log_w, runs, k * cap + j, k * cap + w, size)
                log_w[k * cap + w] = v
                w += 1
        cnt[k] = w
        total += w
    return total


def merge_adjacent(params, start, log_w, runs, cnt, cap,
                   merge_tol):  # pragma: no cover - compiled
    """Merge adjacent indistinguishable runs (the larger weight kept; the older on ties).

    In one pass, in place, allocating nothing: run ``j`` is kept unless the pair ``(j − 1,
    j)`` or ``(j, j + 1)`` drops it, and is moved once both are tested; a move writes at or
    before ``j``, so every test reads the runs as they were before the merge."""
    total = 0
    for k in range(cnt.size):
        m = cnt[k]
        if m > 1:
            pk = model_settings(params, k)
            size = run_size_of(params, k)
            first = k * cap
            keep = True  # run j, as the pair (j - 1, j) left it
            w = 0
            for j in range(m):
                keep_next = True
                if j < m - 1 and kernel_indistinguishable(pk, runs, first + j, merge_tol):
                    if log_w[first + j + 1] > log_w[first + j]:
                        keep = False
                    else:
                        keep_next = False
                if keep:
                    move_run(start, log_w, runs, first + j, first + w, size)
                    log_w[first + w] = log_w[first + j]
                    w += 1
                keep = keep_next
            cnt[k] = w
        total += cnt[k]
    return total


def map_run(start, log_w, cnt, cap, t, peak):  # pragma: no cover - compiled
    """The MAP run ``(model, index, log w)`` (the first maximum) and the log weight of the
    runs started at ``t`` (the change possibility); ``peak`` raised in the same pass
    (``peak[s] = max(peak[s], log w)`` for the starts ``s`` below ``peak.size``, NaN kept
    as ``np.maximum`` keeps it)."""
    bk = -1
    bj = 0
    bv = -math.inf
    cp = -math.inf
    tracked = peak.size
    for k in range(cnt.size):
        for j in range(cnt[k]):
            v = log_w[k * cap + j]
            if v > bv:
                bk = k
                bj = j
                bv = v
            if tracked:
                s = start[k * cap + j]
                if s < tracked and (v > peak[s] or v != v):
                    peak[s] = v
        c = cnt[k]
        if c > 0 and start[k * cap + c - 1] == t and log_w[k * cap + c - 1] > cp:
            cp = log_w[k * cap + c - 1]
    if bk < 0:  # every weight NaN (an overflow): the first run, as the numpy engine
        return 0, 0, log_w[0], cp
    return bk, bj, bv, cp


#: the templates compiled together per kernel (run_kernels calls the others)
TEMPLATES = (run_kernels, model_settings, largest_weight, new_runs, forget_older, observe, move_run,
             run_size_of, compact, merge_adjacent, map_run)


# ----------------------------------------------------------------------------------------------
# one observation at a time (the detector's update): the same step as run_kernels's loop, on
# buffers that persist between calls, with few arguments (each adds to the call's cost)

#: the row step_kernels writes per observation: the observation, then :data:`OUTPUTS`
STEP_COLUMNS = ("y", "start", "model", "mean", "log_consistency", "discount", "n_active",
                "log_change_possibility")
#: ``ints`` of step_kernels: the next time, the capacity per model, the number of runs, then
#: the count of each model's runs and scratch of the same length
INT_HEAD = 3
#: ``scal`` of step_kernels: log h, ρ, robust, τ (NaN: none), d, log tol, prune, merge_tol,
#: then scratch (each model's prepared observation, the kernel's work array)
SCALAR_HEAD = 8


def step_kernels(y, row, ints, start, log_w, runs, params, scal, rows,
                 peak):  # pragma: no cover - compiled (covered through the detector)
    """One observation ``y`` from the runs in ``start``, ``log_w``, ``runs`` (model ``k``'s
    run ``j`` at ``k * cap + j``), updated in place, as one step of :func:`run_kernels`'s
    loop (the same helpers in the same order: the same numbers bit for bit); writes the row of
    :data:`STEP_COLUMNS` at ``rows[row]`` and returns the largest count of runs of a model
    (the caller keeps it below the capacity). ``ints`` and ``scal``: :data:`INT_HEAD`,
    :data:`SCALAR_HEAD`. ``peak``: as in :func:`run_compiled`, indexed by start, with room
    for this step's start (empty: not tracked); the new start's entry is set here."""
    n_models = params.shape[0]
    t = ints[0]
    cap = ints[1]
    total = ints[2]
    cnt = ints[INT_HEAD:INT_HEAD + n_models]
    older = ints[INT_HEAD + n_models:INT_HEAD + 2 * n_models]
    log_h, rho, robust, tau_or_nan = scal[0], scal[1], scal[2] != 0.0, scal[3]
    dim, log_tol, prune, merge_tol = scal[4], scal[5], scal[6] != 0.0, scal[7]
    prepared = scal[SCALAR_HEAD:SCALAR_HEAD + n_models]
    work = scal[SCALAR_HEAD + n_models:]
    new_runs(params, start, log_w, runs, cnt, older, cap, t,
             log_h + largest_weight(log_w, cnt, cap) if total > 0 else 0.0)
    if peak.size:
        peak[t] = -math.inf
    if math.isnan(y):
        lc = g = math.nan
        forget_older(params, runs, older, cap, rho, work)
        shift = 0.0
    else:
        lc, g, shift = observe(params, runs, log_w, cnt, older, cap, y, rho, dim, tau_or_nan,
                               robust, work, prepared)
    total = compact(params, start, log_w, runs, cnt, cap, shift, prune, log_tol)
    if KERNEL_MERGES and merge_tol > 0.0:
        total = merge_adjacent(params, start, log_w, runs, cnt, cap, merge_tol)
    bk, bj, cur_max, cp = map_run(start, log_w, cnt, cap, t, peak)
    out = rows[row]
    out[0] = y
    out[1] = start[bk * cap + bj]
    out[2] = bk
    out[3] = kernel_estimate(model_settings(params, bk), runs, bk * cap + bj)
    out[4] = lc
    out[5] = g
    out[6] = total
    out[7] = cp
    ints[0] = t + 1
    ints[2] = total
    top = 0
    for k in range(n_models):
        top = max(top, cnt[k])
    return top


def scalars(params: ChangepointParams, compiled: CompiledModels) -> np.ndarray:
    """``scal`` of :func:`step_kernels` for ``params`` (:data:`SCALAR_HEAD`, then scratch)."""
    scal = np.zeros(SCALAR_HEAD + len(compiled.kernels) + max(compiled.work_size, 1))
    scal[:SCALAR_HEAD] = (
        math.log(params.hazard), params.forgetting, params.robust,
        math.nan if params.tau is None else params.tau, compiled.dim,
        math.log(params.tol) if params.tol > 0.0 else -math.inf, params.tol > 0.0,
        params.merge_tol)
    return scal


#: an empty buffer: no hindsight tracked, no calibration state
NO_BUFFER = np.empty(0)

#: the row a :class:`CompiledStream` writes per observation: :data:`STEP_COLUMNS`, then the
#: record's calibrated anomaly (0 without a calibration)
STREAM_COLUMNS = (*STEP_COLUMNS, "anomaly")
ANOMALY_AT, LOG_C_AT = STREAM_COLUMNS.index("anomaly"), STEP_COLUMNS.index("log_consistency")


def no_calibration(state, y, surprise):  # pragma: no cover - compiled
    """The calibration step of a :class:`CompiledStream` given none: anomaly 0."""
    return 0.0


def step_calibrated(y, row, ints, start, log_w, runs, params, scal, rows, peak,
                    calibration):  # pragma: no cover - compiled (covered through the detector)
    """:func:`step_kernels`, then the record's anomaly ``stream_calibrate(calibration, y,
    −log c)`` (bound by :func:`compiled_stepper`: the observation and its surprise), written
    after the row's :data:`STEP_COLUMNS` (one compiled call per observation). Returns
    :func:`step_kernels`'s largest count and the row as a tuple, its start, model and count
    of runs as integers (Python then reads plain numbers, with no array view)."""
    top = step_kernels(y, row, ints, start, log_w, runs, params, scal, rows, peak)
    out = rows[row]
    out[ANOMALY_AT] = stream_calibrate(calibration, y, -out[LOG_C_AT])
    # STREAM_COLUMNS: y, start, model, mean, log_consistency, discount, n_active,
    # log_change_possibility, anomaly
    return top, (out[0], int(out[1]), int(out[2]), out[3], out[4], out[5], int(out[6]),
                 out[7], out[8])


#: keys of :func:`without_refcounts` whose compile without reference counts failed
_NEEDS_REFCOUNTS: set[Hashable] = set()


def without_refcounts(make: Callable[[bool], Any], compile_it: Callable[[Any], Any],
                      key: Hashable = None) -> Any:
    """The dispatcher ``make(refcounts)`` after ``compile_it(dispatcher)`` (which compiles or
    loads it), made without numba's reference counts (a step that allocates nothing, merging
    included: the same numbers at a fraction of the cost), or with them where that fails (a
    kernel or calibration that allocates, or a numba without the option that turns its runtime
    off: KeyError, an unknown option). ``key`` (None: no memory) names what is compiled: a
    failure is remembered per process, so the next stream of an allocating kernel goes
    straight to the version with reference counts (numba does not remember failed compiles).

    Examples
    --------
    >>> without_refcounts(lambda refcounts: refcounts, lambda d: None)  # compiles without
    False
    >>> def compile_it(refcounts):
    ...     if not refcounts:
    ...         raise TypeError("allocates")
    >>> without_refcounts(lambda refcounts: refcounts, compile_it)  # falls back
    True
    """
    from numba.core.errors import NumbaError

    if key is None or key not in _NEEDS_REFCOUNTS:
        try:
            dispatcher = make(False)
            compile_it(dispatcher)
            return dispatcher
        except (NumbaError, KeyError, TypeError):
            if key is not None:
                _NEEDS_REFCOUNTS.add(key)
    dispatcher = make(True)
    compile_it(dispatcher)
    return dispatcher


@functools.cache
def compiled_stepper(functions: KernelFunctions, n_params: int, refcounts: bool = True,
                     calibrate: Any = no_calibration) -> Any:
    """:func:`step_calibrated` compiled for one kernel (as :func:`compiled_driver`), with
    ``calibrate`` ``(state, y, surprise) -> anomaly`` inlined; ``refcounts``: as
    :func:`compiled_template` (False: for a kernel and a calibration that allocate no array;
    the step itself allocates none)."""
    return compiled_template(step_calibrated, functions, n_params, helpers=(step_kernels,),
                             hooks={"stream_calibrate": calibrate}, refcounts=refcounts)


class CompiledStream:
    """The compiled recursion one observation at a time, on the state of a fit.

    The runs live in buffers with spare room (doubled when full), updated in place by
    :func:`step_kernels`; each step writes its row (:data:`STREAM_COLUMNS`) into a block of
    ``rows`` rows, which the caller drains when it is full or read (:meth:`drain`). Every
    step then costs the same, however long the stream. ``calibrate``: a calibration step
    ``(state, y, surprise) -> anomaly`` of plain Python that numba compiles into the step (the
    caller passes its state to :meth:`step`); None: anomaly 0.

    Examples
    --------
    >>> from possibly.changepoint import NormalMean
    >>> from possibly.changepoint.recursion import ChangepointParams, init
    >>> params = ChangepointParams.make(sigma=1.0, hazard=0.01)
    >>> stream = CompiledStream(compiled_models(params.models), init(params), params)
    >>> [stream.step(y)[1] for y in (0.0, 0.2, -0.1, 6.0, 6.1, 5.9)]  # the MAP start
    [0, 0, 0, 0, 3, 3]
    >>> len(stream.drain()), stream.state().t
    (6, 6)
    """

    def __init__(self, compiled: CompiledModels, state: RunState, params: ChangepointParams,
                 rows: int = 1024, calibrate: Any = None) -> None:
        kernels = compiled.kernels
        n_models = len(kernels)
        self.kernels = kernels
        self.settings = compiled.settings
        self.functions, self.n_params = kernels[0].functions, compiled.settings.shape[1]
        self.calibrate = no_calibration if calibrate is None else calibrate
        #: the compiled step (set at the first step) and its signature's entry point
        self.stepper: Any = None
        self._call: Any = None
        count, start, log_w, runs = packed_state(state, kernels)
        self.ints = np.zeros(INT_HEAD + 2 * n_models, np.int64)
        self.t = state.t  #: observations processed
        self.ints[0], self.ints[2] = state.t, int(count.sum())
        self.ints[INT_HEAD:INT_HEAD + n_models] = count
        self._allocate(max(16, 2 * int(count.max()) + 2))
        for k in range(n_models):
            first = k * self.cap
            self.start[first:first + count[k]] = start[k, :count[k]]
            self.log_w[first:first + count[k]] = log_w[k, :count[k]]
            self.runs[first:first + count[k]] = runs[k, :count[k]]
        self.scal = scalars(params, compiled)
        self.rows = np.zeros((rows, len(STREAM_COLUMNS)))
        self.n = 0  # rows written since the last drain
        self._peak = NO_BUFFER

    @property
    def peak(self) -> np.ndarray:
        """Per start, the hindsight log change possibility, raised in place by each step
        (the caller's buffer, with room for the next ``len(rows)`` starts; empty: none): a
        writeable, contiguous float64 vector, as the compiled step was compiled for."""
        return self._peak

    @peak.setter
    def peak(self, buffer: np.ndarray) -> None:
        if not (isinstance(buffer, np.ndarray) and buffer.dtype == np.float64
                and buffer.ndim == 1 and buffer.flags.c_contiguous and buffer.flags.writeable):
            raise ValueError("peak must be a writeable, contiguous float64 vector")
        self._peak = buffer

    def _allocate(self, cap: int) -> None:
        n_models = len(self.kernels)
        self.cap = cap
        self.ints[1] = cap
        self.start = np.zeros(n_models * cap, np.int64)
        self.log_w = np.zeros(n_models * cap)
        self.runs = np.zeros((n_models * cap, self.kernels[0].functions.width))

    def counts(self) -> np.ndarray:
        return self.ints[INT_HEAD:INT_HEAD + len(self.kernels)]

    def step(self, y: float, calibration: np.ndarray = NO_BUFFER) -> tuple[Any, ...]:
        """Process ``y`` (a Python float, NaN = missing); returns its row
        (:data:`STREAM_COLUMNS`, also written in :attr:`rows`; the start, the model and the
        count of runs as integers). ``calibration``: the state of the calibration step (a
        writeable, contiguous float64 vector), advanced by ``y`` and the record's surprise
        ``−log c``. Drain the rows first when :attr:`full`."""
        row = self.n
        if self._call is None:
            self._first_step(y, row, calibration)
        top, values = self._call(y, row, self.ints, self.start, self.log_w, self.runs,
                                 self.settings, self.scal, self.rows, self._peak, calibration)
        self.n = row + 1
        self.t += 1
        if top >= self.cap:  # the next step adds a run per model: room for it
            self._grow()
        return values

    def _first_step(self, y: float, row: int, calibration: np.ndarray) -> None:
        """Compile (or load) the step for these argument types (:func:`without_refcounts`),
        at this call, before the step runs. The step is then called through the compiled
        version's entry point, without numba's dispatch by argument types (the types never
        change: the buffers are made here and :attr:`peak` checks the caller's)."""
        import numba

        args = (y, row, self.ints, self.start, self.log_w, self.runs, self.settings, self.scal,
                self.rows, self._peak, calibration)
        signature = tuple(numba.typeof(a) for a in args)
        stepper = without_refcounts(
            lambda refcounts: compiled_stepper(self.functions, self.n_params, refcounts,
                                               self.calibrate),
            lambda dispatcher: dispatcher.compile(signature),
            ("stream", self.functions, self.n_params, self.calibrate, signature))
        self.stepper = stepper
        try:
            self._call = stepper.overloads[signature].entry_point
        except (KeyError, AttributeError):  # numba's internals changed: its dispatcher
            self._call = stepper

    @property
    def full(self) -> bool:
        return self.n == len(self.rows)

    def drain(self) -> np.ndarray:
        """The rows written since the last drain (a view, valid until the next step)."""
        out = self.rows[:self.n]
        self.n = 0
        return out

    def _grow(self) -> None:
        old_cap, start, log_w, runs = self.cap, self.start, self.log_w, self.runs
        self._allocate(2 * old_cap)
        for k, c in enumerate(self.counts()):
            self.start[k * self.cap:k * self.cap + c] = start[k * old_cap:k * old_cap + c]
            self.log_w[k * self.cap:k * self.cap + c] = log_w[k * old_cap:k * old_cap + c]
            self.runs[k * self.cap:k * self.cap + c] = runs[k * old_cap:k * old_cap + c]

    def state(self) -> RunState:
        """The current run hypotheses (a copy)."""
        cap = self.cap
        blocks = tuple(RunBlock(self.start[k * cap:k * cap + c].copy(),
                                self.log_w[k * cap:k * cap + c].copy(),
                                kern.unpack(self.runs[k * cap:k * cap + c]))
                       for k, (kern, c) in enumerate(zip(self.kernels, self.counts(),
                                                          strict=True)))
        return RunState(self.t, blocks)


# ----------------------------------------------------------------------------------------------
# many streams, one observation each (DetectorBank.update_many): step_kernels per stream, on
# each stream's own buffers, in one compiled call

#: the row step_streams writes per stream: :data:`STEP_COLUMNS`, then the detector's online
#: flags (change detected, outlier detected) and whether the MAP ``(start, model)`` moved (an
#: event of the stream's :class:`~possibly.changepoint.recursion.MapTrace`), as 0/1
BANK_COLUMNS = (*STEP_COLUMNS, "change_detected", "outlier_detected", "map_event")


def no_post_step(post, row, out):  # pragma: no cover - compiled
    """The per-stream step after the recursion in :func:`step_streams`: none.

    A hook receives ``post`` (the bank's per-stream state, one row per stream), the stream's
    ``row`` and its output ``out`` (:data:`BANK_COLUMNS`: the observation, its log
    consistency, discount, change possibility, flags, ...), and may update ``post[row]``.
    """
    return


#: float64 values per cache line (the stride of the hints)
LINE = 8


def no_post_prefetch(post, near, far):  # pragma: no cover - compiled
    """The per-stream hint of :func:`step_streams`, before each stream's post step: none.

    A hook receives ``post`` (as :func:`no_post_step`) and two rows: ``near``, the stream
    stepped next, whose header the previous call hinted, and ``far``, the one after (-1:
    none); it may :func:`prefetch` the parts of ``post[near]`` the next step reads and the
    header of ``post[far]``, and must change nothing.
    """
    return


def prefetch_streams(which, i, offsets, ints, scal, params, last, start, log_w,
                     runs):  # pragma: no cover - compiled
    """Before the step of stream ``which[i]``: :func:`prefetch` the rows of stream
    ``which[i + 2]`` (its ints, scalars, settings, MAP and offset) and, with them now at hand
    (hinted by the previous call), the runs of stream ``which[i + 1]`` (its counts plus the
    run its next step adds, per model). Changes nothing."""
    n = which.size
    if i + 2 < n:
        far = which[i + 2]
        prefetch(ints, far * ints.shape[1])
        prefetch(scal, far * scal.shape[1])
        size = params.shape[1] * params.shape[2]
        for e in range(0, size, LINE):
            prefetch(params, far * size + e)
        prefetch(last, far * 2)
        prefetch(offsets, far)
    else:
        far = -1
    if i + 1 < n:
        near = which[i + 1]
        first = offsets[near]
        cap = ints[near, 1]
        width = runs.shape[1]
        for k in range(params.shape[1]):
            prefetch(start, first + k * cap)
            prefetch(log_w, first + k * cap)
            for e in range(0, (ints[near, INT_HEAD + k] + 1) * width, LINE):
                prefetch(runs, (first + k * cap) * width + e)


def step_streams(ys, which, offsets, ints, start, log_w, runs, params, scal, last,
                 outlier_level, out, tops, post,
                 peak):  # pragma: no cover - compiled (covered through DetectorBank)
    """One observation ``ys[i]`` for each stream ``which[i]``: :func:`step_kernels` on the
    stream's own buffers (its runs at ``offsets[r]`` of the pools ``start``, ``log_w``,
    ``runs``, its capacity per model ``ints[r, 1]``, its settings ``params[r]`` and scalars
    ``scal[r]``), so each stream gets the numbers of a detector's :meth:`update`, bit for bit.
    The streams are independent (distinct ``which``): compiled parallel, they are shared out
    among threads with the same numbers.
    Writes row ``i`` of ``out`` (:data:`BANK_COLUMNS`) and ``tops[i]`` (the caller grows a
    stream whose ``tops`` reached its capacity); ``last[r]`` is the stream's MAP start and
    model after its previous observation (the start 0 and the model -1 before any)."""
    n_models = params.shape[1]
    for i in stream_range(ys.size):
        r = which[i]
        # hints to the processor, no value changed: the cache misses of the next streams'
        # scattered rows overlap this stream's arithmetic
        prefetch_streams(which, i, offsets, ints, scal, params, last, start, log_w, runs)
        first = offsets[r]
        end = first + ints[r, 1] * n_models
        tops[i] = step_kernels(ys[i], i, ints[r], start[first:end], log_w[first:end],
                               runs[first:end], params[r], scal[r], out, peak)
        begin = int(out[i, 1])
        model = int(out[i, 2])
        changed = begin > last[r, 0]
        out[i, 8] = 1.0 if changed else 0.0
        out[i, 9] = 1.0 if out[i, 5] < outlier_level and not changed else 0.0
        out[i, 10] = 1.0 if begin != last[r, 0] or model != last[r, 1] else 0.0
        last[r, 0] = begin
        last[r, 1] = model
        if i + 1 < ys.size:  # the next stream's hook state, hinted here: away from the
            # hints above (the processor holds a few misses at once)
            bank_prefetch(post, which[i + 1], which[i + 2] if i + 2 < ys.size else -1)
        # the per-stream step after the recursion (a calibrated signal, ...): bound by
        # compiled_streams, a no-op by default
        bank_post_step(post, r, out[i])


@functools.cache
def compiled_streams(functions: KernelFunctions, n_params: int, parallel: bool = False,
                     post_step: Any = no_post_step, refcounts: bool = True,
                     post_prefetch: Any = no_post_prefetch) -> Any:
    """:func:`step_streams` compiled for one kernel (as :func:`compiled_driver`), with
    ``post_step`` (see :func:`no_post_step`) called after each stream's step and
    ``post_prefetch`` (see :func:`no_post_prefetch`) for the next streams before it;
    ``parallel``: the streams shared out among numba's threads; ``refcounts``: as
    :func:`compiled_template` (False: for a kernel that does not merge, whose step allocates
    no array)."""
    return compiled_template(step_streams, functions, n_params,
                             helpers=(step_kernels, prefetch_streams),
                             hooks={"bank_post_step": post_step,
                                    "bank_prefetch": post_prefetch}, parallel=parallel,
                             refcounts=refcounts)
