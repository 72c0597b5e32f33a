"""What the embeddings mode adds to the pair model's features: clauses and cue prototypes.

A casual message mixes topics ("Lisbon update: three weeks in, we found a flat and the hills
are killing me"), so one vector for the whole newer text blurs the part that speaks of the
older fact. The newer text is split into clauses (``clauses``), each encoded once; the clause
closest to the older fact is the one whose manner counts.

How a clause speaks of a state (ended, switched, began, resolved, restated, hedged, someone
else's news, a correction, a short stay, small talk) and what kind of state the older fact
holds (a plan or a wait, or a lasting state) are read by nearest examples:
``rules/cue_prototypes.json`` holds the MiniLM vectors of the self-written example sentences of
``tools/cue_corpus.py`` (written by ``tools/train_detector.py --embeddings``), and a text's score
for a class is the mean cosine of its ``k`` nearest examples of that class. The pair model
weighs these scores, their crossings with similarity and slot agreement, and nothing here
flags a pair on its own.

Example:
    >>> clauses("Lisbon update: three weeks in, we found a flat. The hills are brutal")
    ['Lisbon update', 'three weeks in, we found a flat', 'The hills are brutal']
    >>> clauses("Lives in Oslo")
    []
"""
from __future__ import annotations

import base64
import functools
import re

from memwatch_overlay.overlay.detect.learned import without_names

# Where a casual message changes clause: sentence ends, semicolons, colons and dashes, and a
# comma or a space before a conjunction that starts a new statement.
_SPLIT = re.compile(
    r"(?<=[.!?])\s+|\s*[;:]\s+|\s+[–—-]\s+|\s*\(|\)\s*"
    r"|,?\s+(?=(?:but|so|because|since|though|although|whereas|and now|and then|which)\s)", re.I)
MIN_CLAUSE_CHARS = 8
MAX_CLAUSES = 6
K_NEAREST = 3


def clauses(text: str) -> list[str]:
    """The clauses of ``text`` worth their own vector; [] when the text is one clause."""
    parts = [p.strip(" ,.!?;:") for p in _SPLIT.split(text or "")]
    parts = [p for p in parts if len(p) >= MIN_CLAUSE_CHARS]
    if len(parts) < 2:
        return []
    return parts[:MAX_CLAUSES]


def encode_matrix(vectors) -> str:
    """A float matrix as base64 float16 (what the prototype file stores)."""
    import numpy as np
    return base64.b64encode(np.asarray(vectors, dtype="float16").tobytes()).decode("ascii")


def decode_matrix(text: str, dim: int):
    import numpy as np
    m = np.frombuffer(base64.b64decode(text), dtype="float16").astype("float32")
    return m.reshape(-1, dim)


class CuePrototypes:
    """Example vectors per class, for the newer text's clauses and for the older text."""

    def __init__(self, data: dict):
        self._data = data           # decoded on first use: the rules mode never needs numpy
        self.k = int(data.get("k", K_NEAREST))
        self._cache: dict[tuple[str, str], dict[str, float]] = {}

    @functools.cached_property
    def newer(self) -> dict:
        return {c: decode_matrix(v, int(self._data["dim"])) for c, v in self._data["newer"].items()}

    @functools.cached_property
    def older(self) -> dict:
        return {c: decode_matrix(v, int(self._data["dim"])) for c, v in self._data["older"].items()}

    @functools.cached_property
    def shifts(self) -> dict:
        """Class -> unit direction (the mean "after - before" of the class's minimal pairs)."""
        return {c: decode_matrix(v, int(self._data["dim"]))[0] for c, v in self._data.get("shifts", {}).items()}

    def _scores(self, groups: dict, vector) -> dict[str, float]:
        out = {}
        for c, m in groups.items():
            s = m @ vector
            k = min(self.k, len(s))
            out[c] = float(s[s.argsort()[-k:]].mean())
        return out

    def scores(self, role: str, text: str, vector) -> dict[str, float]:
        """Class -> mean cosine of the nearest examples (``role`` "newer" or "older"), by text."""
        got = self._cache.get((role, text))
        if got is None:
            got = self._scores(self.newer if role == "newer" else self.older, vector)
            if len(self._cache) > 32768:
                self._cache.clear()
            self._cache[(role, text)] = got
        return got


CLAUSE_CUES = ("change", "ending", "start", "hedge", "other_person", "still", "temporary", "past_habit",
               "addition", "negation")


def pair_features(learned, new_parts: list[tuple[str, object]], old_text: str, old_info, old_vec,
                  sim: float, base: dict[str, float], names: frozenset[str] = frozenset()) -> dict[str, float]:
    """Features of one pair from the newer text's parts ((text, vector): the whole text, then
    its clauses) and the older text's vector; ``learned`` reads texts (topics, cues, values),
    ``old_info`` is its reading of the older text and ``base`` holds the learned layer's
    features of the pair, for the crossings."""
    csims = [float(v @ old_vec) for _, v in new_parts]
    best = max(range(len(csims)), key=csims.__getitem__)
    csim = csims[best]
    btext, bvec = new_parts[best]
    f = {"s_csim": csim, "s_csim_gain": csim - sim, "s_clauses": float(min(len(new_parts) - 1, 4)) / 4}
    # the clause closest to the older fact: its cues, its slot agreement, its values
    bi = learned.info(btext)
    bmin = [min(a, b) for a, b in zip(bi.probs, old_info.probs)]
    b_single = sum(bmin[i] for i in learned.single)
    b_multi = sum(bmin[i] for i in learned.multi)
    f["s_b_single"] = b_single
    f["s_b_multi"] = b_multi
    for c in CLAUSE_CUES:
        if c in bi.cues:
            f["s_b_" + c] = 1.0
            f[f"s_b_{c}*single"] = b_single
    b_values, o_values = without_names(bi.values, names), without_names(old_info.values, names)
    same_val = bool(b_values & o_values)
    new_val = bool(b_values - o_values)
    # the older fact's value said again in the newer text, whatever its case ("Google Cloud is
    # the vendor" after "works at Google"): a restatement unless the text ends or changes it
    words = {w.lower().strip(".,!?'\"()") for w in new_parts[0][0].split()}
    kept = bool(o_values and any(v in words for v in o_values))
    moved = bool(bi.cues & {"change", "ending", "start"})
    f["s_old_val_kept"] = float(kept)
    f["s_old_val_kept*moved"] = float(kept and moved)
    f["s_old_val_kept*still"] = float(kept and not moved)
    f["s_b_val_same"] = float(same_val)
    f["s_b_val_new"] = float(new_val)
    f["s_b_val_new*single"] = b_single * new_val
    protos = learned.cue_protos
    if protos is None:
        return f
    single = max(base.get("t_single", 0.0), base.get("e_single", 0.0))
    near = protos.scores("newer", btext, bvec)
    anyp = [protos.scores("newer", t, v) for t, v in new_parts]
    old = protos.scores("older", old_text, old_vec)
    for c, x in near.items():
        f["s_n_" + c] = x
        f[f"s_n_{c}*csim"] = x * csim
        f[f"s_n_{c}*single"] = x * single
        f["s_nmax_" + c] = max(p[c] for p in anyp)
    for c, x in old.items():
        f["s_o_" + c] = x
    for c in ("same", "ended", "switched", "corrected"):
        if c in near:
            f[f"s_b_val_same*s_n_{c}"] = same_val * near[c]
            f[f"s_b_val_new*s_n_{c}"] = new_val * near[c]
    if protos.shifts:
        delta = bvec - old_vec
        for c, d in protos.shifts.items():
            # crossed with closeness: the shift of an unrelated text is noise
            x = float(delta @ d)
            f[f"s_d_{c}*csim"] = x * csim
            f[f"s_d_{c}*single"] = x * single
    if "event" in old:          # a one-off happening holds no state a newer text outdates
        event = old["event"] - old.get("lasting", 0.0)
        f["s_o_event_margin"] = event
        f["s_o_event_margin*csim"] = event * csim
    pending = old.get("pending", 0.0) - old.get("lasting", 0.0)
    f["s_o_pending_margin"] = pending
    for c in ("resolved", "ended", "began", "switched"):
        if c in near:
            f[f"s_o_pending*s_n_{c}*csim"] = pending * near[c] * csim
    return f
