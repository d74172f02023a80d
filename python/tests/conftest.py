# Shared setup of the Python suite: the built package on sys.path, the ordo CLI, the bundled model
# and the Hugging Face fixtures (golden tensors read with numpy alone).
import ast
import json
import os
import struct
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("ORDO_BUILD_DIR", ROOT / "build")).resolve()
if os.environ.get("ORDO_PYTHON_INSTALLED") != "1":  # else: test the installed package
    sys.path.insert(0, str(BUILD / "python"))

import ordo  # noqa: E402

CLI = BUILD / "bin" / "ordo"
STORIES = ROOT / "models" / "stories260K"
FIXTURES = ROOT / "tests" / "data" / "fixtures"


def read_safetensors(path):
    """name -> float32 array, from the format's spec (8-byte header length, JSON header, data)."""
    raw = Path(path).read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        assert meta["dtype"] == "F32"
        b, e = meta["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + b:8 + n + e], dtype="<f4").reshape(meta["shape"])
    return out


def golden(name):
    """(golden.json as a dict with each case's "greedy" parsed, golden tensors)."""
    d = json.loads((FIXTURES / name / "golden.json").read_text())
    for c in d.get("cases", []):
        for k in ("input_ids", "decoder_input_ids", "greedy"):
            if isinstance(c.get(k), str):
                c[k] = ast.literal_eval(c[k])
    return d, read_safetensors(FIXTURES / name / "golden.safetensors")


@pytest.fixture(scope="session")
def stories():
    return ordo.Model(str(STORIES))


@pytest.fixture(scope="session")
def cli():
    if not CLI.exists():
        pytest.fail(f"{CLI} is not built: cmake --build {BUILD} --target ordo_cli")
    return str(CLI)
