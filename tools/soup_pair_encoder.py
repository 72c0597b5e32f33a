#!/usr/bin/env python3
"""One pair-encoder weights file from several fits: their "soup" (the mean of the fine-tuned models).

Usage (needs the `embeddings` extra):
    python tools/soup_pair_encoder.py FIT1.safetensors FIT2.safetensors [...] --out SOUP.safetensors

Each fit changes every adapted linear layer of the base model by B A (its low-rank adapters,
times its scale). The soup's change is the mean of the fits' changes, written exactly as one
adapter of the summed rank: the fits' A matrices stacked, their B matrices side by side, each
times its own scale over the number of fits. The pooler and the classifier, which each fit
stores whole, are averaged. The result loads and runs like one fit (one forward pass per
pair), where averaging the fits' probabilities costs one forward pass per fit. Whether the mean
of the weights scores like the mean of the answers is measured, not assumed:
`tools/encoder_layers.py --weights SOUP.safetensors` beside `--weights FIT1 FIT2 --average`.
The metadata is the first fit's, with the summed rank, scale 1 and the fits' own metadata listed.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def soup(states: list[dict], scales: list[float]) -> dict:
    """The tensors of one weights file whose adapters change the base weights by the mean of
    the fits' changes (``scales[i] * B_i A_i``), at scale 1, and whose other tensors are the mean."""
    import torch
    names = set(states[0])
    if any(set(s) != names for s in states[1:]):
        raise ValueError("the fits adapt different layers")
    n = len(states)
    out = {}
    for name in sorted(names):
        if name.endswith(".lora_A"):
            out[name] = torch.cat([s[name].float() for s in states], dim=0)
        elif name.endswith(".lora_B"):
            out[name] = torch.cat([s[name].float() * (k / n) for s, k in zip(states, scales)], dim=1)
        else:
            out[name] = sum(s[name].float() for s in states) / n
    # fp16 as the fits ship, but the classifier, which they keep in fp32
    return {k: (v if k.startswith("classifier.") else v.half()).contiguous() for k, v in out.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("fits", nargs="+")
    ap.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    from safetensors.torch import load_file, save_file

    from memwatch_overlay.overlay.detect.pair_encoder import _metadata
    states, metas = [], []
    for path in a.fits:
        try:
            metas.append(_metadata(Path(path).read_bytes()))
            states.append(load_file(path))
        except (OSError, ValueError) as e:
            print(f"error: {path}: {e}", file=sys.stderr)
            return 2
    try:
        state = soup(states, [float(m.get("scale", 1.0)) for m in metas])
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    meta = dict(metas[0], scale=1.0, rank=sum(int(m.get("rank", 0)) for m in metas),
                soup_of=[dict(m, file=Path(p).name) for m, p in zip(metas, a.fits)])
    save_file(state, a.out, metadata={"memwatch": json.dumps(meta)})
    print(f"{a.out}: the soup of {len(a.fits)} fits, rank {meta['rank']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
