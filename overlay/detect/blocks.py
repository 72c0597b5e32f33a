"""Run the contradiction detector over the facts one sync changed, block by block.

Called by ``SyncEngine`` inside the sync's transaction, after the changed facts are
stored and their old contradictions cleared. A changed fact is compared only with the
live facts of its block (same subject and category, any source), in both directions: it
may outdate older facts, and an already known newer fact may outdate it. Work therefore
grows with what changed times the size of its block, never with the whole overlay.
"""
from __future__ import annotations

import sqlite3
from collections import defaultdict
from itertools import combinations

from memwatch_overlay.overlay.detect.detector import Detector, FactView
from memwatch_overlay.overlay.detect.slots import stem
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
SAVE_BATCH = 1000
# Texts per embedding-model call when the semantic layer is on (blocks are gathered up to
# this many facts; the embedder's in-memory cache must hold at least this many vectors).
EMBED_BATCH = 256


def detect_changed(store: OverlayStore, detector: Detector, source_id: int, sync_no: int,
                   now: float, stats=None) -> int:
    """Compare this sync's changed facts within their blocks; persist what is found."""
    before = detector.comparisons
    vectors = _vector_cache(store, detector)
    saver = _Saver(store, now)
    n_changed = store.count_changed(source_id, sync_no, live_only=True)
    blocks = _scanned_blocks if n_changed >= SCAN_MIN_CHANGED else _queried_blocks
    if vectors is not None:
        blocks = _embedded_in_batches(blocks, vectors, detector.embedder)
    for block, changed_ids in blocks(store, source_id, sync_no):
        if len(block) > 1:          # a fact alone in its block has nothing to contradict
            _detect_block(detector, block, changed_ids, saver)
    saver.flush()
    if stats is not None:
        stats.comparisons += detector.comparisons - before
    return saver.found


def _embedded_in_batches(blocks, vectors, embedder):
    """`blocks`, with every block's facts given a vector first: several blocks at a time,
    about `batch` texts per model call. One call per block (a handful of texts each) cost
    ~0.1 s of model overhead per block; batched, the model runs at its own speed."""
    def embedded(store: OverlayStore, source_id: int, sync_no: int):
        pending: list = []
        size, batch = 0, EMBED_BATCH
        for block, changed_ids in blocks(store, source_id, sync_no):
            pending.append((block, changed_ids))
            size += len(block)
            if size >= batch:
                yield from _with_vectors(pending, vectors, embedder)
                pending, size = [], 0
        yield from _with_vectors(pending, vectors, embedder)
    return embedded


def _with_vectors(pending: list, vectors, embedder):
    if pending:
        vectors.ensure(embedder, [(r["id"], r["text"] or "") for block, _ in pending for r in block])
    yield from pending


def _queried_blocks(store: OverlayStore, source_id: int, sync_no: int):
    """(block rows, changed ids) per block of the changed facts: one query per block."""
    changed = store.changed_live_blocks(source_id, sync_no)
    blocks: dict[tuple, set[int]] = defaultdict(set)
    for row in changed:
        blocks[(row["subject"], row["category"])].add(row["id"])
    for (subject, category), ids in blocks.items():
        yield store.block(subject, category), ids


def _scanned_blocks(store: OverlayStore, source_id: int, sync_no: int):
    """The same blocks from one pass over live facts in block order (facts_block index):
    memory stays one block, and a block with no changed fact is skipped."""
    key = None
    block: list = []
    changed: set[int] = set()
    for r in store.iter_blocks_scan(source_id, sync_no):
        k = (r["subject"], r["category"])
        if k != key:
            if changed:
                yield block, changed
            key, block, changed = k, [], set()
        block.append(r)
        if r["mw_changed"]:
            changed.add(r["id"])
    if changed:
        yield block, changed


def _detect_block(detector: Detector, block: list[sqlite3.Row], changed_ids: set[int], saver) -> None:
    ids = {r["ref"]: r["id"] for r in block}
    views = {r["id"]: fact_view(r) for r in block}
    index = BlockIndex(detector, views)
    pairs: set[tuple[int, int]] = set()
    # Recency: learned_at, ties broken by row id (a store without timestamps lists its
    # records oldest first) but only within one table: two tables with no timestamps
    # (an MCP graph's observations and relations) say nothing about which came first.
    order = {i: (v.learned_at, i) for i, v in views.items()}
    table = {r["id"]: r["tbl"] for r in block}

    def older(i: int, j: int) -> bool:
        """Fact i is known to be older than fact j."""
        if views[i].learned_at == views[j].learned_at and table[i] != table[j]:
            return False
        return order[i] < order[j]

    for mine in sorted(changed_ids):
        me = views[mine]
        olders = [views[i] for i in index.candidates(mine) if older(i, mine)]
        for c in detector.compare(me, olders, index.readings):
            pairs.add((ids[c.older], ids[c.newer]))
            saver.save(ids, c)
        for ref in detector.confirmed:          # restated: the older fact is re-learned
            saver.confirm(ids[ref], me.learned_at)
        # an unchanged newer fact may outdate this one (changed ones are handled in their turn)
        for i in index.could_outdate(mine):
            if i in changed_ids or not older(mine, i):
                continue
            for c in detector.compare(views[i], [me], index.readings):
                if (ids[c.older], ids[c.newer]) not in pairs:
                    pairs.add((ids[c.older], ids[c.newer]))
                    saver.save(ids, c)


class BlockIndex:
    """Which facts of a block a fact can possibly contradict, without comparing them all.

    The rules only ever relate two facts that share a slot (city, employer ...), a store
    key, or a word the newer fact's transition cue scopes over (matched on its first five
    letters, as the cue rule does). With an embedder every fact of the block is a
    candidate: the semantic layer looks at all of them.
    """

    def __init__(self, detector: Detector, views: dict[int, FactView]):
        self.detector = detector
        self.everything = getattr(detector, "embedder", None) is not None
        self.all_ids = list(views)
        self.by_term: dict[tuple, set[int]] = defaultdict(set)
        self.by_want: dict[tuple, set[int]] = defaultdict(set)
        self.terms: dict[int, set[tuple]] = {}         # what a fact offers as an older fact
        self.wants: dict[int, set[tuple]] = {}         # what a fact looks for as a newer fact
        self.readings = {v.ref: detector.read(v) for v in views.values()}   # read once per block
        for i, v in views.items():
            r = self.readings[v.ref]
            offers = {t for s in r.slots for t in _slot_terms(s, offer=True)}
            offers |= {("word", _w(a)) for a in r.anchors}
            key = detector._own_key(v)
            if key:
                offers.add(("key", key.strip().lower()))
            wants = {t for s in r.slots for t in _slot_terms(s, offer=False)}
            if key:
                wants.add(("key", key.strip().lower()))
            for c in r.cues:
                wants |= {("word", _w(w)) for w in c.scope}
            topics = detector.learned_terms(v)      # the learned layer relates facts by topic
            offers |= topics
            wants |= topics
            self.terms[i], self.wants[i] = offers, wants
            for t in offers:
                self.by_term[t].add(i)
            for t in wants:
                self.by_want[t].add(i)

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


def _w(word: str) -> str:
    return word[:5]


def _slot_terms(s, offer: bool) -> set[tuple]:
    """Index terms of a slot.

    Most slots meet the whole slot. Slots keyed by an object (likes, counts) meet only
    facts whose object's words contain, or are contained in, theirs ("thai food" / "food",
    as the rule compares them): an older fact offers every subset of its words ("sup") and
    the whole set ("full"); a newer fact looks for its whole set among the "sup" terms and
    for each of its subsets among the "full" terms.
    """
    if s.mode not in ("polar", "count") or not s.key:
        return {("slot", s.name)}
    words = sorted({stem(w) for w in s.key.split()})[:6]
    subsets = {frozenset(c) for n in range(1, len(words) + 1) for c in combinations(words, n)}
    whole = frozenset(words)
    if offer:
        return {("sup", s.name, x) for x in subsets} | {("full", s.name, whole)}
    return {("sup", s.name, whole)} | {("full", s.name, x) for x in subsets}


class _Saver:
    """Persists findings in batches. A contradiction the source itself records (mem0
    UPDATE, memlife superseded_by), saved earlier in this sync, is kept as it is."""

    def __init__(self, store: OverlayStore, now: float):
        self.store, self.now = store, now
        self.pending: list[tuple] = []
        self.confirmed: list[tuple[int, float]] = []
        self.found = 0

    def save(self, ids: dict[str, int], c) -> None:
        self.pending.append((ids[c.older], ids[c.newer], c.kind, c.confidence, c.evidence, c.update))
        if len(self.pending) >= SAVE_BATCH:
            self.flush()

    def confirm(self, fact_id: int, at: float) -> None:
        self.confirmed.append((fact_id, at))

    def flush(self) -> None:
        if self.pending:
            self.found += self.store.add_new_contradictions(self.pending, self.now)
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
        cache.reembed_stale(detector.embedder)
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
    base = config.base_dir if config is not None else None
    pack = det.get("pack")
    if pack and base is not None:
        from pathlib import Path
        p = Path(pack).expanduser()
        pack = str(p if p.is_absolute() else base / p)
    emb_cfg = dict(getattr(config, "embeddings", {}) or {})
    embedder = None
    if emb_cfg.get("enabled", bool(emb_cfg.get("model"))):
        from memwatch_overlay.overlay.detect.embeddings import Embedder
        embedder = Embedder(emb_cfg.get("model"), device=emb_cfg.get("device", "cpu"))
    judge_cfg = dict(getattr(config, "judge", {}) or {})
    judge = None
    if judge_cfg.get("url") and judge_cfg.get("enabled", True):
        from memwatch_overlay.overlay.detect.judge import DEFAULT_MODEL, DEFAULT_TIMEOUT, Judge
        judge = Judge(judge_cfg["url"], model=judge_cfg.get("model", DEFAULT_MODEL),
                      api_key_env=judge_cfg.get("api_key_env"),
                      timeout=float(judge_cfg.get("timeout", DEFAULT_TIMEOUT)))
    kw = {}
    if "threshold" in emb_cfg:
        kw["semantic_threshold"] = float(emb_cfg["threshold"])
    return Detector(pack, embedder=embedder, judge=judge,
                    min_confidence=float(det.get("min_confidence", 0.0)), **kw)
