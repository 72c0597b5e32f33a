"""Block walks in worker processes, for a sync that changed many facts of many subjects.

A first audit of a store of many users walks thousands of small blocks, one after the
other, each independent of the rest: its cost is nearly all the detector's Python (reading
texts, comparing pairs) on one core. Here the blocks are handed, a batch of about
BATCH_FACTS facts at a time, to worker processes that each hold a detector built the way
the sync's was (``make_detector`` leaves a ``spawn_spec`` on it: rules mode, a pack path,
min_confidence, the text cap), and the edges each walk finds come back in block order, so
the overlay receives exactly what a walk in the sync's process would have given, in the
same order (tests/test_detect_parallel.py compares the two).

What a worker receives is each fact as a plain tuple of WALK_COLUMNS; what it returns is
each block's edges and restatements. Workers never open the overlay or a source. A block
the caller picks (``here``: blocks.py picks those whose walk a daemon keeps) is handed back
in its turn for the sync's process to walk itself.

When it runs (``workers_for``): the detector has a spawn_spec (no embedder, no judge, not
a detector a caller built by hand), more than one worker is allowed, and the sync changed
at least PARALLEL_MIN facts (fewer: starting the workers, about half a second of imports
and model loading each, costs more than it saves). Workers are started with the ``spawn``
method (a fresh interpreter: nothing of the sync's threads, locks or connections is
inherited). Spawn imports the program's main module again in each worker: the console
script guards its entry point, and so must a user's script that sets ``workers`` for
``MemWatch`` (the usual ``if __name__ == "__main__":``); that is why the Python API walks in
its own process unless ``[detector] workers`` says otherwise, and the console script uses
every core (DEFAULT_WORKERS, set by overlay/cli/main.py).

A worker that dies (killed, out of memory) does not hang the sync: the batches not
returned yet are walked in the sync's own process, and the sync goes on. A sync's process
that dies (kill -9) takes its workers with it: each checks every PARENT_CHECK_SECONDS that
its parent still runs, and exits when it does not.
"""
from __future__ import annotations

import os
from collections import deque
from typing import Any, Callable, Iterable, Iterator

PARALLEL_MIN = 20_000       # changed facts of one sync before blocks are walked in workers
BATCH_FACTS = 4096          # facts per batch handed to a worker (blocks are never split)
IN_FLIGHT = 3               # batches queued per worker: memory stays bounded
MAX_WORKERS = 8
PARENT_CHECK_SECONDS = 0.5  # how often a worker checks that the sync's process still runs
# None: the sync's own process walks every block unless `[detector] workers` says otherwise
# (the Python API); the console script sets it to the machine's cores (overlay/cli/main.py)
DEFAULT_WORKERS: int | None = None

# What a walk reads of a fact (blocks.fact_view, _Walk): sent to workers as plain tuples.
WALK_COLUMNS = ("id", "ref", "subject", "key", "text", "category", "created_at", "updated_at", "first_seen",
                "tbl", "content_hash")


def cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def console_workers() -> int:
    """The workers the console script allows (DEFAULT_WORKERS there): one per core, at most
    MAX_WORKERS."""
    return min(cores(), MAX_WORKERS)


def workers_for(detector: Any, changed: int, configured: int | None) -> int:
    """How many worker processes walk a sync's blocks (0 or 1: none, the sync's own process)."""
    if getattr(detector, "spawn_spec", None) is None or changed < PARALLEL_MIN:
        return 0
    wanted = configured if configured is not None else DEFAULT_WORKERS
    if not wanted or wanted < 2:
        return 0
    return min(wanted, MAX_WORKERS, cores())


def walk_rows(block: list) -> list[tuple]:
    """A block's rows as the plain tuples a worker receives: each row's first values when
    its columns begin with WALK_COLUMNS (blocks.SCAN_COLUMNS), else picked by name."""
    n = len(WALK_COLUMNS)
    first = block[0] if block else None
    if first is not None and hasattr(first, "keys") and tuple(list(first.keys())[:n]) == WALK_COLUMNS:
        return [r[:n] for r in block]
    return [tuple(r[c] for c in WALK_COLUMNS) for r in block]


class ParallelWalks:
    """Walks of (block rows, changed ids) pairs in worker processes, in the order given."""

    def __init__(self, detector: Any, workers: int):
        # (imported here: a sync that walks in its own process never loads them, ~10 ms)
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor
        self.detector, self.workers = detector, workers
        self.comparisons = 0            # the workers' comparisons (the sync's detector counts its own)
        self.fallbacks = 0              # batches walked here after a worker died
        self._pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"),
                                         initializer=_start_worker, initargs=(detector.spawn_spec,))

    def start(self) -> None:
        """Start every worker now, without waiting for it to be ready (ProcessPoolExecutor
        starts one only when a task comes and none is idle)."""
        for _ in range(self.workers):
            self._pool.submit(os.getpid)

    def close(self, wait: bool = True) -> None:
        """Stop the workers; ``wait=False`` once every walk is back: they exit (freeing what
        their caches hold, about half a second at 1M facts) while the sync goes on."""
        self._pool.shutdown(wait=wait, cancel_futures=True)

    def __enter__(self) -> "ParallelWalks":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def walks(self, gathered: Iterable[tuple[list, set[int]]],
              here: Callable[[list], bool] | None = None) -> Iterator[tuple[list, set[int], Any, Any]]:
        """(block, changed ids, edges, confirms) per block of ``gathered``, in its order; the
        edges and confirms are blocks.walk_block's (none for a block of one fact), each edge's
        value as the overlay stores it (blocks.stored_edges). A block
        ``here`` picks is handed back with None for both, for the caller to walk itself."""
        from concurrent.futures.process import BrokenProcessPool
        pending: deque = deque()          # (batch, future or None once the pool is broken)
        broken = False
        for batch in _batches(gathered, here):
            future = None
            if batch[0] is not _HERE and not broken:
                try:
                    future = self._pool.submit(_walk_batch, [(walk_rows(b), c) for b, c in batch if len(b) >= 2])
                except BrokenProcessPool:
                    broken = True
            pending.append((batch, future))
            while len(pending) > IN_FLIGHT * self.workers:
                item = pending.popleft()
                yield from self._results(*item)
        while pending:
            yield from self._results(*pending.popleft())

    def _results(self, batch: list, future) -> Iterator[tuple[list, set[int], Any, Any]]:
        from concurrent.futures.process import BrokenProcessPool
        if batch[0] is _HERE:
            yield batch[1][0], batch[1][1], None, None
            return
        results = None
        if future is not None:
            try:
                results, comparisons = future.result()
                self.comparisons += comparisons
            except BrokenProcessPool:
                results = None
        if results is None:                     # no worker: walked here
            self.fallbacks += 1
            results = _walked(self.detector, [(b, c) for b, c in batch if len(b) >= 2])
        walked = iter(results)
        for block, changed in batch:
            if len(block) < 2:
                yield block, changed, {}, []
            else:
                edges, confirms = next(walked)
                yield block, changed, edges, confirms


_HERE = object()       # marks a "batch" that is one block the caller walks itself


def _batches(gathered: Iterable[tuple[list, set[int]]], here: Callable[[list], bool] | None = None) -> Iterator[list]:
    """The blocks in batches of about BATCH_FACTS facts (a block is never split); a block
    ``here`` picks alone, as [_HERE, (block, changed ids)], after the batch before it."""
    batch: list = []
    n = 0
    for block, changed in gathered:
        if here is not None and here(block):
            if batch:
                yield batch
                batch, n = [], 0
            yield [_HERE, (block, changed)]
            continue
        batch.append((block, changed))
        n += len(block)
        if n >= BATCH_FACTS:
            yield batch
            batch, n = [], 0
    if batch:
        yield batch


# ------------------------------------------------------------------ in a worker
_detector: Any = None


def _start_worker(spec: dict) -> None:
    global _detector
    import gc
    from memwatch_overlay.overlay.detect.blocks import detector_from_spec
    _exit_with(os.getppid())
    # as blocks._collector_paused does around a walk in the sync's process: a worker only
    # walks, and its few reference cycles are not worth the collector's passes over its caches
    gc.disable()
    _detector = detector_from_spec(spec)


def _exit_with(parent: int, every: float = PARENT_CHECK_SECONDS) -> None:
    """End this worker when the sync's process is gone (a daemon killed with kill -9): a
    worker waiting for its next batch would otherwise wait forever, holding its memory."""
    import threading
    import time

    def watch() -> None:
        while True:
            time.sleep(every)
            if os.getppid() != parent:
                os._exit(0)
    threading.Thread(target=watch, name="memwatch-parent-watch", daemon=True).start()


def _walk_batch(blocks: list[tuple[list[tuple], set[int]]]) -> tuple[list, int]:
    """Each block's (edges, confirms), walked by this worker's detector; and its comparisons."""
    detector = _detector
    before = detector.comparisons
    rows = [[dict(zip(WALK_COLUMNS, r)) for r in block] for block, _ in blocks]
    out = _walked(detector, [(block, changed) for block, (_, changed) in zip(rows, blocks)])
    return out, detector.comparisons - before


def _walked(detector: Any, blocks: list[tuple[list, set[int]]]) -> list[tuple[dict, list]]:
    """Each block's (edges, confirms) as blocks.walk_block finds them, the edges' values as
    the overlay stores them (blocks.stored_edges); the batch's topics estimated at once,
    as in one process."""
    from memwatch_overlay.overlay.detect.blocks import prefetch_small_blocks, stored_edges, walk_block
    prefetch_small_blocks(detector, [block for block, _ in blocks])
    out = []
    for block, changed in blocks:
        edges, confirms = walk_block(detector, block, changed)
        out.append((stored_edges(edges), confirms))
    return out
