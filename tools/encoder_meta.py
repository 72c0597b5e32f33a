"""Read or set the settings a pair-encoder weights file carries in its metadata.

Usage (needs the `embeddings` extra for safetensors):
    python tools/encoder_meta.py W.safetensors                      # print the metadata
    python tools/encoder_meta.py W.safetensors --set threshold=0.8 veto=0.1 [--out W2.safetensors]

The detector reads `threshold` (where a pair is flagged) and `veto` (below which a flag of the
rules or the pair model is dropped) from the shipped weights file unless memwatch.toml sets
them (overlay/detect/pair_encoder.py). Only those two numeric settings can be set here, each
between 0 and 1 (a veto of 0 removes it); the tensors are written back unchanged. Setting them
changes the file's digest, so the overlay's cached verdicts of the old file are not reused.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memwatch_overlay.overlay.detect import pair_encoder as pe  # noqa: E402

SETTABLE = ("threshold", "veto")


def parse_settings(items: list[str]) -> dict[str, float]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or key not in SETTABLE:
            raise ValueError(f"--set {item!r}: expected one of {', '.join(SETTABLE)} as key=number")
        try:
            number = float(value)
        except ValueError:
            raise ValueError(f"--set {item!r}: {value!r} is not a number") from None
        if not 0.0 <= number <= 1.0:
            raise ValueError(f"--set {item!r}: must be between 0 and 1")
        out[key] = number
    return out


def write(path: Path, out: Path, settings: dict[str, float]) -> dict:
    from safetensors.torch import load_file
    meta = pe.read_metadata(path)
    for key, value in settings.items():
        if key == "veto" and value == 0.0:
            meta.pop("veto", None)
        else:
            meta[key] = value
    pe.write_weights(load_file(str(path)), out, meta)
    return meta


def main(argv=None) -> int:
    from safetensors import SafetensorError
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("weights")
    ap.add_argument("--set", nargs="*", default=[], metavar="KEY=VALUE")
    ap.add_argument("--out", default=None, help="write here instead of over the weights file")
    a = ap.parse_args(argv)
    path = Path(a.weights)
    try:
        settings = parse_settings(a.set)
        meta = write(path, Path(a.out) if a.out else path, settings) if settings else pe.read_metadata(path)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"error: {path}: {e.strerror or e}", file=sys.stderr)
        return 2
    except SafetensorError as e:    # a file that is not one
        print(f"error: {path}: not a safetensors file ({e})", file=sys.stderr)
        return 2
    print(json.dumps(meta, indent=1, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
