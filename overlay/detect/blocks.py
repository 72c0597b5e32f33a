"""Run the contradiction detector over the subjects one sync changed, one block at a time.

Called by ``SyncEngine`` inside the sync's transaction, after the changed facts are
stored and their old contradictions cleared.

A block is one subject's live facts within one subject space: by default the source
itself (a zero-config audit never compares two stores), or every source of the config
that names the same ``subject_space``. Categories play no part: "handed in my notice at
Deloitte" (general) meets "I work at Deloitte" (employment). Facts of different subjects
are never compared.

A block is walked oldest first. Each fact is compared only with the current *holders* of
the index terms it wants (``Detector.index_terms``: a slot, a store key, a word its
transition cue scopes over): the facts offering that term that no newer fact has
outdated on it yet. An outdated fact leaves the holders of the terms it was outdated
on, so an older fact is outdated by the nearest newer fact that replaces it, and the
block stores that supersession edge, not every pair ("Google" -> "Stripe" -> "Meta" gives
two edges, not three). A newer fact meets at most ``MAX_HOLDERS`` holders per term (the
newest): work and storage grow about linearly with a subject's facts.

A block with a changed fact is walked again as a whole, so an incremental sync finds
exactly what a full audit finds (a fact inserted between two others, an edited or deleted
fact that outdated something); the block's stored edges are then brought to the walk's
result (new ones inserted, ones the walk no longer gives deleted; edges the source itself
recorded, such as mem0's UPDATE, are left alone). The walk never looks ahead, so when a
block only gained facts newer than all it had, the walk the detector kept of it (a
daemon's largest recent blocks) goes on from where it stopped: one new memory of a user
with 10,000 is one step.
"""
from __future__ import annotations

import gc
import sqlite3
from collections import defaultdict
from contextlib import contextmanager, nullcontext
from itertools import groupby, islice
from operator import itemgetter
from typing import Callable, Iterable

from memwatch_overlay.overlay.detect import parallel
from memwatch_overlay.overlay.detect.detector import Contradiction, Detector, FactView
from memwatch_overlay.overlay.store.contradictions import update_text
from memwatch_overlay.overlay.store.database import OverlayStore


def learned_at(row: sqlite3.Row) -> float:
    """When the fact was (re-)learned: its latest timestamp, else when the overlay first saw it."""
    times = [t for t in (row["created_at"], row["updated_at"]) if t is not None]
    return max(times) if times else row["first_seen"]


def fact_view(row: sqlite3.Row) -> FactView:
    return FactView(ref=row["ref"], subject=row["subject"], key=row["key"], text=row["text"] or "",
                    category=row["category"], learned_at=learned_at(row))


# Above this many changed facts (a first audit, a bulk import) the blocks are read in one
# ordered pass over the overlay instead of one query per block.
SCAN_MIN_CHANGED = 2000
# What that pass reads of each fact: what a walk reads (parallel.WALK_COLUMNS, first: a
# worker is sent each row's first len(WALK_COLUMNS) values) and what tells the changed facts.
SCAN_COLUMNS = (*parallel.WALK_COLUMNS, "source_id", "changed_sync")
SAVE_BATCH = 1000
# Texts per embedding-model call when the semantic layer is on (blocks are gathered up to
# this many facts; the embedder's in-memory cache must hold at least this many vectors).
EMBED_BATCH = 256
# A newer fact is compared with at most this many holders of one index term (the newest).
# Holders of a single-valued slot are outdated as they go, so this bounds only terms many
# facts share without outdating each other (a word mentioned in thousands of memories).
MAX_HOLDERS = 128
# A learned topic (Detector.learned_terms: "the fact is about work") is shared by many facts
# that do not outdate each other; a newer fact meets the newest few holding it, where the
# current state of that topic is.
MAX_TOPIC_HOLDERS = 8
# A topic the newer fact only looks for (among its wider wants, Learned.wants_of) and does not
# offer itself is a weaker guess: it meets only the newest two holders. (One user's 2,400
# memories: 7.8 comparisons a fact without the wider wants, 8.2 with 4 holders, 8.0 with 2;
# tests/test_detect_blocks.py bounds it at 8.)
MAX_WIDE_TOPIC_HOLDERS = 2
# A name of an older fact in a newer one (Detector.linked: "Harold", "Shoreditch", "Outback")
# lets the learned layer weigh the pair whatever their topics; a newer fact meets the newest
# fact naming each of its words. (2 cost one user's 2,400 memories 8.5 comparisons a fact
# instead of 7.8, over the bound of 8 tests/test_detect_blocks.py sets, for the same edges.)
MAX_LINK_HOLDERS = 1
# With the semantic layer, a newer fact also meets this many of the block's newest facts
# not yet outdated, whatever words they share.
MAX_SEMANTIC = 32


def detect_changed(store: OverlayStore, detector: Detector, source_id: int, sync_no: int,
                   now: float, stats=None, space: list[int] | None = None,
                   also: Iterable[int] = (), affected: set[int] | None = None, mark_status: bool = False,
                   live_changed: int | None = None, walkers: parallel.ParallelWalks | None = None,
                   progress: Callable[[int, int], None] | None = None) -> int:
    """Walk again every block holding a fact this sync changed; persist what is found.

    ``space``: ids of the sources whose subjects are this source's (default: the source
    alone). ``also``: further facts whose blocks must be walked (deleted this sync).
    ``affected`` collects the facts whose stored edges were dropped, whose status must be
    recomputed. ``mark_status``: the caller knows no contradiction is stored and no fact is
    contradicted (a first audit): each edge's older fact is marked contradicted as the edge
    is stored (both facts are live: a block is), which leaves every status exact, and the
    caller's pass over every fact (apply_contradiction_status) is not needed.
    ``live_changed``: the live facts this sync changed, when the caller has counted them.
    ``walkers``: worker processes the caller started (and closes), used when the blocks are
    walked in workers. ``progress(done, total)``: called as blocks are stored, with how
    many of the ``total`` live changed facts are in the blocks stored so far (``done`` ends
    at ``total``; a first audit of a million facts walks for a minute). Returns how many
    edges were stored anew.
    """
    if live_changed is None:
        live_changed = store.count_changed(source_id, sync_no, live_only=True)
    # the scan of many changed facts reads and marks them in subject order (OverlayStore.wider_page_cache)
    cache = store.wider_page_cache() if live_changed >= SCAN_MIN_CHANGED else nullcontext()
    with _collector_paused(), cache:
        return _detect_changed(store, detector, source_id, sync_no, now, stats, space, also, affected, mark_status,
                               live_changed, walkers, _WalkProgress(progress, live_changed))


@contextmanager
def _collector_paused():
    """Python's cyclic garbage collector paused while blocks are walked, as it was after.

    A walk allocates a great many short-lived tuples and lists (freed at once by reference
    counting) while its caches grow by many more, and each of the collector's full passes
    walks that whole growing heap: 12% of the CPU of a 10,000-memory audit (3.09 against 2.72
    CPU s), for the 29 objects in reference cycles it found there. Nothing a walk finds
    depends on it; another thread's garbage waits until the walk ends.

    After a large walk (more than PROMOTE_MIN objects left in the youngest generation), what
    it keeps is handed to the oldest generation in one step (``gc.freeze`` and
    ``gc.unfreeze`` move lists, they look at no object), as a pass over it would have:
    otherwise the first collection after the pause looks at every object the walk allocated
    (326,000 and 0.15 CPU s after a 10,000-memory walk) to find almost none unreachable. A
    daemon's small syncs leave the collector as they found it, and so does a process that
    froze objects itself (``gc.unfreeze`` would thaw them too)."""
    paused = gc.isenabled()
    if paused:
        gc.disable()
    try:
        yield
    finally:
        if paused:
            if gc.get_count()[0] > PROMOTE_MIN and not gc.get_freeze_count():
                gc.freeze()
                gc.unfreeze()
            gc.enable()


PROMOTE_MIN = 20_000


def _detect_changed(store: OverlayStore, detector: Detector, source_id: int, sync_no: int,
                    now: float, stats, space: list[int] | None, also: Iterable[int],
                    affected: set[int] | None, mark_status: bool, live_changed: int,
                    walkers: parallel.ParallelWalks | None, walk_progress: "_WalkProgress") -> int:
    before = detector.comparisons
    space = sorted(set(space or []) | {source_id})
    vectors = _vector_cache(store, detector)
    judge = getattr(detector, "judge", None)
    if judge is not None and hasattr(judge, "cache"):
        judge.cache = store                 # verdicts outlive the run (overlay/store/verdicts.py)
    encoder = getattr(detector, "pair_encoder", None)
    if encoder is not None:
        encoder.cache = store               # the pair encoder's answers too, by its model stamp
    saver = _Saver(store, now, affected, mark_status)
    if live_changed >= SCAN_MIN_CHANGED:
        # the scan tells a block with a changed live fact itself: only the subjects of the
        # changed facts that are not live, and of `also`, are asked for
        subjects = store.changed_subjects(source_id, sync_no, list(also), dead_only=True)
        gathered = _scanned_blocks(store, space, subjects, source_id, sync_no)
    else:
        subjects = store.changed_subjects(source_id, sync_no, list(also))
        if not subjects:
            return 0
        gathered = _queried_blocks(store, space, subjects, source_id, sync_no)
    stored = store.has_contradictions()
    kept = _kept_walks(detector)

    def walk_here(block: list, changed_ids: set[int]) -> None:
        walk_progress.add(changed_ids)
        if len(block) < 2:          # a fact alone in its block has nothing to contradict
            saver.replace_block(block, {}, stored)
            return
        key = (tuple(space), block[0]["subject"])
        walk = kept.pop(key, None)
        if walk is not None and not also and walk.resumes(block, changed_ids):
            before_edges = set(walk.edges)
            walk.confirms = []
            walk.extend(block, changed_ids)     # only the new facts are walked
            saver.add_edges(stored_edges({e: c for e, c in walk.edges.items() if e not in before_edges}))
        else:
            walk = _Walk(detector)
            walk.extend(block, changed_ids)
            saver.replace_block(block, stored_edges(walk.edges), stored)
        for older, at in walk.confirms:
            saver.confirm(older, at)
        if len(block) >= KEEP_WALK_MIN:
            kept[key] = walk
            while len(kept) > KEEP_WALKS:
                kept.pop(next(iter(kept)))

    workers = parallel.workers_for(detector, live_changed, getattr(detector, "workers", None))
    if workers > 1:
        # a block a daemon would keep the walk of is walked here (its next new memory is then
        # one step); the many small ones in the workers, in the order gathered
        pool = walkers if walkers is not None else parallel.ParallelWalks(detector, workers)
        pool_before = pool.comparisons
        try:
            for block, changed_ids, edges, confirms in pool.walks(gathered, here=lambda b: len(b) >= KEEP_WALK_MIN):
                if edges is None:
                    walk_here(block, changed_ids)
                    continue
                walk_progress.add(changed_ids)
                saver.replace_block(block, edges, stored)
                for older, at in confirms:
                    saver.confirm(older, at)
        except BaseException:
            if walkers is None:
                pool.close()
            raise
        if walkers is None:
            pool.close(wait=False)      # every walk is back: the workers exit while the sync goes on
        saver.flush()
        walk_progress.finish()
        if stats is not None:
            stats.comparisons += detector.comparisons - before + pool.comparisons - pool_before
        return saver.found
    if live_changed >= SCAN_MIN_CHANGED:
        gathered = _topics_in_batches(gathered, detector)
    if vectors is not None:
        gathered = _embedded_in_batches(gathered, vectors, detector)
    for block, changed_ids in gathered:
        walk_here(block, changed_ids)
    saver.flush()
    walk_progress.finish()
    if stats is not None:
        stats.comparisons += detector.comparisons - before
    return saver.found


class _WalkProgress:
    """How far a detect_changed has come, for its caller's ``progress(done, total)``: the live
    changed facts in the blocks walked so far, of ``total``, told at most about STEPS times
    (a million facts are some 50,000 blocks). A block's changed ids may include facts that
    are not live (deleted this sync), so ``done`` is held at ``total``."""

    STEPS = 1000
    __slots__ = ("report", "total", "done", "told", "step")

    def __init__(self, report: Callable[[int, int], None] | None, total: int):
        self.report, self.total, self.done, self.told = report, total, 0, 0
        self.step = max(1, total // self.STEPS)

    def add(self, changed_ids: set[int]) -> None:
        if self.report is not None and changed_ids:
            self.done = min(self.total, self.done + len(changed_ids))
            if self.done - self.told >= self.step:
                self.told = self.done
                self.report(self.done, self.total)

    def finish(self) -> None:
        """Every block is stored: the count is the total (a last call, whatever came before)."""
        if self.report is not None and self.total:
            self.report(self.total, self.total)


# A daemon keeps the walks of its largest recently changed blocks (those of at least
# KEEP_WALK_MIN facts, at most KEEP_WALKS of them): one new memory of a user with 10,000 is
# then one step, not a walk of the 10,000.
KEEP_WALKS = 8
KEEP_WALK_MIN = 200


def _kept_walks(detector: Detector) -> dict:
    """The walks kept with this detector (a daemon's one detector lives as long as it does)."""
    kept = getattr(detector, "_kept_walks", None)
    if kept is None:
        kept = {}
        try:
            detector._kept_walks = kept          # type: ignore[attr-defined]
        except AttributeError:
            pass
    return kept


def _in_batches(blocks, size: int, ready):
    """`blocks` ((block rows, changed ids) pairs) passed on a batch at a time: gathered until
    the blocks of two or more facts (a fact alone is compared with nothing) hold `size` facts;
    `ready(those blocks)` runs before the batch is passed on (when it holds any)."""
    pending: list = []
    compared: list = []
    n = 0
    for block, changed_ids in blocks:
        pending.append((block, changed_ids))
        if len(block) >= 2:
            compared.append(block)
            n += len(block)
        if n >= size:
            ready(compared)
            yield from pending
            pending, compared, n = [], [], 0
    if compared:
        ready(compared)
    yield from pending


def _embedded_in_batches(blocks, vectors, detector: Detector):
    """`blocks`, with the facts a walk compares given their vectors first: several blocks at
    a time, about EMBED_BATCH facts per model call. One call per block (a handful of texts
    each) cost ~0.1 s of model overhead per block; batched, the model runs at its own speed.

    Only candidate facts are embedded: with the semantic layer every fact of a block of two or
    more meets another one (it is among the MAX_SEMANTIC newest alive facts when the next one
    is walked), and a fact alone in its block is compared with nothing, so it is never
    encoded. A fact's clauses and cue clauses are encoded with it and cached in the overlay
    with its vector (VectorCache), so a walk over cached facts encodes nothing."""
    def embed(compared: list) -> None:
        vectors.ensure(detector.embedder, [(r["id"], detector.embedding_texts(fact_view(r)))
                                           for block in compared for r in block])
    return _in_batches(blocks, EMBED_BATCH, embed)


# Small blocks (a store of many users) are gathered until they hold this many facts, and
# their topics are estimated in one batch (Detector.prefetch_topics: numpy, the `fast` extra).
TOPIC_BATCH_FACTS = 4096


def _topics_in_batches(blocks, detector: Detector):
    """`blocks`, their topics estimated first, several blocks at a time: a block big enough
    (a user with thousands of memories) has its topics batched by its own walk
    (BlockIndex.add), but a store of many users with a few dozen memories each would
    otherwise estimate every text alone, in pure Python (most of a 100k-row audit's
    detection). A block of TOPIC_BATCH_FACTS facts or more is left to its own walk: estimated
    here too, a block past the topic cache (65,536 texts) would have what was estimated here
    dropped there and estimated again.
    The walks find the same topics either way: prefetching only fills the learned layer's
    cache with the decisions the per-text path would take."""
    if getattr(detector, "prefetch_topics", None) is None:
        return blocks
    return _in_batches(blocks, TOPIC_BATCH_FACTS, lambda compared: prefetch_small_blocks(detector, compared))


def prefetch_small_blocks(detector: Detector, blocks: list) -> None:
    """Estimate the topics of these blocks' facts in one batch, but for the blocks of
    TOPIC_BATCH_FACTS facts or more (their own walk batches them: _topics_in_batches) and
    keyed blocks (Detector.keyed_block: their walk never asks for them)."""
    keyed_block = getattr(detector, "keyed_block", None)
    views = []
    for block in blocks:
        # (a keyed block's are never asked for: told by its keys alone, no fact's view made)
        if len(block) < TOPIC_BATCH_FACTS and (keyed_block is None or keyed_block(r["key"] for r in block) is None):
            views += [fact_view(r) for r in block]
    detector.prefetch_topics(views)


def _changed_of(rows, source_id: int, sync_no: int) -> set[int]:
    return {r["id"] for r in rows if r["source_id"] == source_id and r["changed_sync"] == sync_no}


def _queried_blocks(store: OverlayStore, space: list[int], subjects: set, source_id: int, sync_no: int):
    """(block rows, changed ids) per changed subject: one query per block."""
    for subject in sorted(subjects, key=lambda s: (s is not None, s or "")):
        rows = store.subject_block(subject, space)
        yield rows, _changed_of(rows, source_id, sync_no)


def _scanned_blocks(store: OverlayStore, space: list[int], also: set, source_id: int, sync_no: int):
    """The same blocks from one pass over the space's live facts in subject order: memory
    stays one block, and a block with no changed fact is skipped unless its subject is one
    of ``also`` (those of changed facts that are not live, and of facts walked again)."""
    for subject, rows in groupby(store.iter_subject_scan(space, SCAN_COLUMNS), key=itemgetter("subject")):
        block = list(rows)
        changed = _changed_of(block, source_id, sync_no)
        if changed or subject in also:
            yield block, changed


def stored_edges(edges: dict[tuple[int, int], Contradiction]) -> dict[tuple[int, int], tuple]:
    """A walk's edges with what the overlay stores of each beside its two facts' ids: (kind,
    confidence, evidence, update_json). Workers hand edges back in this form: tuples of plain
    values pickle at a fraction of a dataclass's cost."""
    return {e: (c.kind, c.confidence, c.evidence, update_text(c.update)) for e, c in edges.items()}


def walk_block(detector: Detector, block: list, changed_ids: set[int]):
    """The supersession edges of one block, {(older id, newer id): Contradiction}, and the
    (older id, when) pairs a changed fact restated; see the module docstring."""
    walk = _Walk(detector)
    walk.extend(block, changed_ids)
    return walk.edges, walk.confirms


class _Walk:
    """One block's walk, oldest first, and the state it leaves (the holders of each index
    term): a daemon keeps it, so a block that only gained facts newer than all it had is
    walked on from there (the walk never looks ahead: earlier steps stay what they were)."""

    def __init__(self, detector: Detector):
        self.detector = detector
        self.views: dict[int, FactView] = {}
        self.ids: dict[str, int] = {}
        self.table: dict[int, str] = {}
        self.hashes: dict[int, str | None] = {}      # what each walked fact said (content_hash)
        self.index = BlockIndex(detector, {})
        self.holders: dict[tuple, dict[int, None]] = defaultdict(dict)
        self.alive: dict[int, None] = {}             # not outdated yet, oldest first (semantic layer)
        self.hidden: dict[int, list[int]] = {}       # a fact -> the older facts it restated, standing for them
        self.last: tuple | None = None               # (learned_at, id) of the last fact walked
        self.unknown: bool | None = None             # the block's subject cannot be read
        self.edges: dict[tuple[int, int], Contradiction] = {}
        self.confirms: list[tuple[int, float]] = []

    def resumes(self, block: list, changed_ids: set[int]) -> bool:
        """True when ``block`` is what this walk saw plus facts newer than all of it (and,
        for a keyed block, facts that keep it keyed: BlockIndex.add)."""
        if self.last is None:
            return False
        seen = 0
        new = []
        for r in block:
            i = r["id"]
            if i in self.views:
                if i in changed_ids or self.hashes[i] != _content(r):
                    return False
                seen += 1
            elif i not in changed_ids or (learned_at(r), i) <= self.last:
                return False
            else:
                new.append(r)
        if seen != len(self.views):
            return False
        keyed = self.index.keyed
        return keyed is None or self.detector.keyed_block((r["key"] for r in new), keyed) is not None

    def extend(self, rows: list, changed_ids: set[int]) -> None:
        """Walk these facts (all newer than any walked before) on from the current state."""
        new = [r for r in rows if r["id"] not in self.views]
        for r in new:
            v = fact_view(r)
            self.views[r["id"]], self.ids[v.ref] = v, r["id"]
            self.table[r["id"]] = r["tbl"]
            self.hashes[r["id"]] = _content(r)
        self.index.add({r["id"]: self.views[r["id"]] for r in new})
        if self.unknown is None and new:
            # A store whose subject cannot be read (no user column) mixes people: there, two
            # facts are compared only when they name the same person, or neither names anyone.
            self.unknown = self.views[new[0]["id"]].subject is None
        # Recency: learned_at, ties broken by row id (a store without timestamps lists its
        # records oldest first) but only within one table: two tables with no timestamps
        # (an MCP graph's observations and relations) say nothing about which came first.
        for f in sorted((r["id"] for r in new), key=lambda i: (self.views[i].learned_at, i)):
            self._step(f, f in changed_ids)
            self.last = (self.views[f].learned_at, f)

    # ------------------------------------------------------------ one step
    def _older(self, i: int, j: int) -> bool:
        vi, vj = self.views[i], self.views[j]
        if vi.learned_at == vj.learned_at and self.table[i] != self.table[j]:
            return False
        return (vi.learned_at, i) < (vj.learned_at, j)

    def _same_person(self, i: int, j: int) -> bool:
        if not self.unknown:
            return True
        r = self.index.readings
        return r[self.views[i].ref].entity == r[self.views[j].ref].entity

    def _drop(self, i: int, terms: frozenset, keep_alive: bool = False) -> None:
        if not keep_alive:          # an outdated fact is outdated on its topics and names too (learned layer)
            terms = terms | {t for t in self.index.terms[i] if t[0] == "topic" or t[0] == "link"}
        for t in terms & self.index.terms[i]:
            h = self.holders.get(t)
            if h is not None:
                h.pop(i, None)
        if not keep_alive:
            self.alive.pop(i, None)

    def _hold(self, f: int) -> None:
        for t in self.index.terms[f]:
            self.holders[t][f] = None
        self.alive[f] = None

    def _step(self, f: int, changed: bool) -> None:
        detector, index, views, ids = self.detector, self.index, self.views, self.ids
        wants = index.wants[f]
        offers = index.terms[f]
        cands: set[int] = set()
        for t in wants:
            h = self.holders.get(t)
            if h:
                cands.update(islice(reversed(h), _holder_cap(t, offers)))
        if index.everything:
            cands.update(islice(reversed(self.alive), MAX_SEMANTIC))
        olders = sorted((i for i in cands if self._older(i, f) and self._same_person(i, f)),
                        key=lambda i: (views[i].learned_at, i), reverse=True)
        if olders:
            me = views[f]
            outdated = []
            for c in detector.compare(me, [views[i] for i in olders], index.readings):
                o = ids[c.older]
                self.edges[(o, f)] = c
                outdated.append(o)
            restated = [ids[ref] for ref in detector.confirmed]
            if changed:
                self.confirms.extend((i, me.learned_at) for i in restated)
            for o in outdated:
                self._drop(o, wants)
                members = self.hidden.pop(o, None)
                if members:         # the facts o stood for meet f too: outdated, or held again
                    gone = set()
                    for c in detector.compare(me, [views[i] for i in members if self._older(i, f)
                                                   and self._same_person(i, f)], index.readings):
                        self.edges[(ids[c.older], f)] = c
                        gone.add(ids[c.older])
                    for i in members:
                        if i in gone:
                            self._drop(i, wants)
                        else:
                            for t in index.terms[i]:
                                self.holders[t][i] = None
            for h in restated:      # f stands for what it restates: later facts meet f alone
                self._drop(h, wants & index.terms[f], keep_alive=True)
                self.hidden.setdefault(f, []).append(h)
                self.hidden[f].extend(self.hidden.pop(h, ()))
        self._hold(f)


def _holder_cap(term: tuple, offers: frozenset) -> int:
    """How many of a wanted term's newest holders a newer fact meets."""
    kind = term[0]
    if kind == "topic":
        return MAX_TOPIC_HOLDERS if term in offers else MAX_WIDE_TOPIC_HOLDERS
    return MAX_LINK_HOLDERS if kind == "link" else MAX_HOLDERS


def _content(row) -> str | None:
    try:
        return row["content_hash"]
    except (IndexError, KeyError):
        return None


class BlockIndex:
    """Which facts of a block a fact can possibly contradict, without comparing them all.

    Built on ``Detector.index_terms``: a newer fact is a candidate against the older facts
    offering a term it wants. With an embedder every fact of the block is a candidate for
    ``candidates``/``could_outdate`` (the semantic layer looks at all of them).
    """

    def __init__(self, detector: Detector, views: dict[int, FactView]):
        self.detector = detector
        self.everything = getattr(detector, "embedder", None) is not None
        self.all_ids: list[int] = []
        self.terms: dict[int, frozenset[tuple]] = {}     # what a fact offers as an older fact
        self.wants: dict[int, frozenset[tuple]] = {}     # what a fact looks for as a newer fact
        self.readings: dict = {}
        self._by_term: dict[tuple, set[int]] | None = None
        self._by_want: dict[tuple, set[int]] | None = None
        # the slot of each store key while the block is keyed (Detector.keyed_block): the
        # learned layer's terms are left out and its topics never estimated; None otherwise
        self.keyed: dict | None = None
        self._views: dict[int, FactView] = {}
        self.add(views)

    def add(self, views: dict[int, FactView]) -> None:
        """Index more facts of the block. The facts of a keyed block (``keyed``) are indexed
        without the learned layer's terms: a walk that adds facts which end that (a fact with
        no key, a second key of one slot) starts again (``_Walk.resumes``)."""
        detector = self.detector
        split = getattr(detector, "offers_and_wants", None)
        keyed_block = getattr(detector, "keyed_block", None)
        earlier: dict[int, FactView] = {}
        if keyed_block is not None and (not self.all_ids or self.keyed is not None):
            was = self.keyed
            self.keyed = keyed_block((v.key for v in views.values()), was)
            if self.keyed is None and was is not None and self.all_ids:
                earlier = self._views        # no longer keyed: the facts before get those terms too
                self.all_ids, self._views = [], {}
        learned = self.keyed is None
        views = {**earlier, **views}
        prefetch = getattr(detector, "prefetch_topics", None)
        if prefetch is not None and learned:
            prefetch(views.values())                     # the block's topics in one batch
        for i, v in views.items():
            self.all_ids.append(i)
            self._views[i] = v
            self.readings[v.ref] = detector.read(v)       # read once per block
            if split is not None:
                self.terms[i], self.wants[i] = split(v) if learned else split(v, learned=False)
            else:                                        # a detector with index_terms only
                offers, wants = set(), set()
                for role, *term in detector.index_terms(v):
                    (offers if role == "offer" else wants).add(tuple(term))
                self.terms[i], self.wants[i] = frozenset(offers), frozenset(wants)
        self._by_term = self._by_want = None

    @property
    def by_term(self) -> dict[tuple, set[int]]:
        if self._by_term is None:
            self._by_term = defaultdict(set)
            for i, ts in self.terms.items():
                for t in ts:
                    self._by_term[t].add(i)
        return self._by_term

    @property
    def by_want(self) -> dict[tuple, set[int]]:
        if self._by_want is None:
            self._by_want = defaultdict(set)
            for i, ts in self.wants.items():
                for t in ts:
                    self._by_want[t].add(i)
        return self._by_want

    def candidates(self, fact_id: int) -> list[int]:
        """Facts ``fact_id`` may outdate (as the newer fact)."""
        if self.everything:
            return [i for i in self.all_ids if i != fact_id]
        out: set[int] = set()
        for t in self.wants[fact_id]:
            out |= self.by_term.get(t, set())
        out.discard(fact_id)
        return sorted(out)

    def could_outdate(self, fact_id: int) -> list[int]:
        """Facts that may outdate ``fact_id`` (as the newer fact)."""
        if self.everything:
            return [i for i in self.all_ids if i != fact_id]
        out: set[int] = set()
        for t in self.terms[fact_id]:
            out |= self.by_want.get(t, set())
        out.discard(fact_id)
        return sorted(out)


class _Saver:
    """Brings each walked block's stored edges to the walk's result, in batches. A
    contradiction the source itself records (mem0 UPDATE, memlife superseded_by: stored
    without an update) is kept as it is."""

    def __init__(self, store: OverlayStore, now: float, affected: set[int] | None = None,
                 mark_status: bool = False):
        self.store, self.now, self.mark_status = store, now, mark_status
        self.pending: list[tuple] = []
        self.confirmed: list[tuple[int, float]] = []
        self.affected = affected if affected is not None else set()
        self.found = 0

    def replace_block(self, block: list, edges: dict[tuple[int, int], tuple], stored: bool) -> None:
        """The block's stored edges become `edges` (stored_edges())."""
        if stored:
            have = self.store.detected_edges_of([r["id"] for r in block])
            stale = [e for e in have if e not in edges]
            if stale:
                self.store.delete_edges(stale)
                self.affected.update(o for o, _ in stale)
            edges = {e: c for e, c in edges.items() if e not in have}
        for (o, n), c in edges.items():
            self.pending.append((o, n, *c))
        if len(self.pending) >= SAVE_BATCH:
            self.flush()

    def add_edges(self, edges: dict[tuple[int, int], tuple]) -> None:
        """Edges of facts new to a block whose older facts are unchanged: only inserted."""
        for (o, n), c in edges.items():
            self.pending.append((o, n, *c))
        if len(self.pending) >= SAVE_BATCH:
            self.flush()

    def confirm(self, fact_id: int, at: float) -> None:
        self.confirmed.append((fact_id, at))

    def flush(self) -> None:
        if self.pending:
            self.found += self.store.add_new_contradictions(self.pending, self.now)
            if self.mark_status:
                self.store.mark_contradicted(sorted({row[0] for row in self.pending}))
            self.pending.clear()
        if self.confirmed:
            self.store.mark_relearned(self.confirmed)
            self.confirmed.clear()


def _vector_cache(store: OverlayStore, detector: Detector):
    """The overlay's vector cache when the detector has an embedder; stale vectors re-embedded."""
    if getattr(detector, "embedder", None) is None or not hasattr(detector.embedder, "model_name"):
        return None
    from memwatch_overlay.overlay.detect.embeddings import VectorCache
    cache = VectorCache(store)
    if hasattr(detector.embedder, "embed"):
        cache.reembed_stale(detector.embedder, texts_of=lambda text, subject: detector.embedding_texts(
            FactView("", subject, None, text or "", "", 0.0)))
    return cache


def make_detector(config) -> Detector | None:
    """The detector a config asks for: rules by default, plus embeddings and a judge if set.

    ``[detector] enabled = false`` turns detection off; ``pack`` is a slot pack path
    relative to the config file; ``[embeddings] enabled = true`` (or a ``model``) adds the
    semantic layer; ``[judge] url = ...`` adds the LLM critic.
    """
    det = dict(getattr(config, "detector", {}) or {})
    if det.get("enabled") is False:
        return None
    with _collector_paused():       # compiling the pack, parsing the models' JSON: containers only
        return _make_detector(config, det)


def _make_detector(config, det: dict) -> Detector:
    base = config.base_dir if config is not None else None
    pack = det.get("pack")
    if pack and base is not None:
        from pathlib import Path
        p = Path(pack).expanduser()
        pack = str(p if p.is_absolute() else base / p)
    emb_cfg = dict(getattr(config, "embeddings", {}) or {})
    embedder = encoder = None
    if emb_cfg.get("enabled", bool(emb_cfg.get("model"))):
        from memwatch_overlay.overlay.detect.embeddings import Embedder
        embedder = Embedder(emb_cfg.get("model"), device=emb_cfg.get("device", "cpu"))
        if emb_cfg.get("pair_encoder", True):
            # the fine-tuned MiniLM cross-encoder (pair_encoder.py; on with embeddings since stop
            # 38, `pair_encoder = false` turns it off; what it measured: docs/contradictions.md)
            from memwatch_overlay.overlay.detect.pair_encoder import PairEncoder
            encoder = PairEncoder(device=emb_cfg.get("device", "cpu"),
                                  threshold=emb_cfg.get("pair_encoder_threshold"),
                                  veto=emb_cfg.get("pair_encoder_veto"))
    judge_cfg = dict(getattr(config, "judge", {}) or {})
    judge = None
    if judge_cfg.get("url") and judge_cfg.get("enabled", True):
        from memwatch_overlay.overlay.detect.judge import DEFAULT_MODEL, DEFAULT_TIMEOUT, Judge
        from memwatch_overlay.overlay.detect.judge import DEFAULT_BATCH, DEFAULT_RETRIES
        judge = Judge(judge_cfg["url"], model=judge_cfg.get("model", DEFAULT_MODEL),
                      api_key_env=judge_cfg.get("api_key_env"),
                      timeout=float(judge_cfg.get("timeout", DEFAULT_TIMEOUT)),
                      retries=int(judge_cfg.get("retries", DEFAULT_RETRIES)),
                      batch_size=int(judge_cfg.get("batch_size", DEFAULT_BATCH)))
    kw = {}
    if "threshold" in emb_cfg:
        kw["semantic_threshold"] = float(emb_cfg["threshold"])
    detector = Detector(pack, embedder=embedder, judge=judge, pair_encoder=encoder,
                        min_confidence=float(det.get("min_confidence", 0.0)), **kw)
    if config is not None:
        detector.max_text_chars = config.max_text_chars
    if embedder is None and judge is None:
        # what a worker process needs to build the same detector (overlay/detect/parallel.py)
        detector.spawn_spec = {"pack": pack, "min_confidence": detector.min_confidence,
                               "max_text_chars": detector.max_text_chars}
    # the encoder reads every pair the rules leave open, or only those the learned gate relates
    detector.encoder_gate = bool(emb_cfg.get("pair_encoder_gate", False))
    detector.workers = det.get("workers")
    return detector


def detector_from_spec(spec: dict) -> Detector:
    """The rules-mode detector a ``spawn_spec`` describes (in a worker process)."""
    detector = Detector(spec["pack"], min_confidence=spec["min_confidence"])
    detector.max_text_chars = spec["max_text_chars"]
    return detector
