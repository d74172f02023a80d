#!/usr/bin/env python3
# Writes a random-weight Llama model directory (config.json + model.safetensors) for memory tests.
"""Usage: synthetic_dir.py OUT_DIR [--shape 1b|110m|DIM,LAYERS,HEADS,KV_HEADS,FFN,VOCAB] [--dtype f32|bf16|f16]

The shapes are those of `ordo bench --synthetic` (1b: TinyLlama-1.1B's). The weights are seeded
uniform noise (no model quality): the directory exists to measure how much memory loading it takes
(tools/perf/peak_rss.sh). Tensors are written one at a time, so this needs little memory itself.
Only numpy is needed.
"""
import argparse
import json
import os
import struct

import numpy as np

SHAPES = {
    "110m": (768, 12, 12, 12, 2048, 32000, True),
    "1b": (2048, 22, 32, 4, 5632, 32000, False),
}


def parse_shape(text):
    if text.lower() in SHAPES:
        return SHAPES[text.lower()]
    v = [int(x) for x in text.split(",")]
    if len(v) != 6:
        raise SystemExit("--shape: expected 110m, 1b or DIM,LAYERS,HEADS,KV_HEADS,FFN,VOCAB")
    return (*v, False)


def tensors(dim, layers, heads, kv_heads, ffn, vocab, tied):
    """(name, shape, init scale) in the order Hugging Face's Llama lists them."""
    hd = dim // heads
    yield "model.embed_tokens.weight", (vocab, dim), 1.0
    for l in range(layers):
        p = f"model.layers.{l}."
        yield p + "input_layernorm.weight", (dim,), None
        yield p + "self_attn.q_proj.weight", (heads * hd, dim), dim ** -0.5
        yield p + "self_attn.k_proj.weight", (kv_heads * hd, dim), dim ** -0.5
        yield p + "self_attn.v_proj.weight", (kv_heads * hd, dim), dim ** -0.5
        yield p + "self_attn.o_proj.weight", (dim, heads * hd), (heads * hd) ** -0.5
        yield p + "post_attention_layernorm.weight", (dim,), None
        yield p + "mlp.gate_proj.weight", (ffn, dim), dim ** -0.5
        yield p + "mlp.up_proj.weight", (ffn, dim), dim ** -0.5
        yield p + "mlp.down_proj.weight", (dim, ffn), ffn ** -0.5
    yield "model.norm.weight", (dim,), None
    if not tied:
        yield "lm_head.weight", (vocab, dim), dim ** -0.5


def encode(x, dtype):
    if dtype == "f32":
        return x.astype("<f4").tobytes()
    if dtype == "f16":
        return x.astype("<f2").tobytes()
    u = x.astype("<f4").view("<u4")  # bf16: round to nearest even
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2").tobytes()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--shape", default="1b")
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16", "f16"])
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    dim, layers, heads, kv_heads, ffn, vocab, tied = parse_shape(a.shape)
    os.makedirs(a.out, exist_ok=True)
    config = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": dim,
        "intermediate_size": ffn,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "num_key_value_heads": kv_heads,
        "vocab_size": vocab,
        "max_position_embeddings": 2048,
        "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "tie_word_embeddings": tied,
        "bos_token_id": 1,
        "eos_token_id": 2,
        "torch_dtype": {"f32": "float32", "bf16": "bfloat16", "f16": "float16"}[a.dtype],
    }
    with open(os.path.join(a.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    st_dtype = {"f32": "F32", "bf16": "BF16", "f16": "F16"}[a.dtype]
    size = {"f32": 4, "bf16": 2, "f16": 2}[a.dtype]
    spec = list(tensors(dim, layers, heads, kv_heads, ffn, vocab, tied))
    header, at = {}, 0
    for name, shape, _ in spec:
        n = int(np.prod(shape)) * size
        header[name] = {"dtype": st_dtype, "shape": list(shape), "data_offsets": [at, at + n]}
        at += n
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    rng = np.random.default_rng(a.seed)
    path = os.path.join(a.out, "model.safetensors")
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for name, shape, scale in spec:
            if scale is None:
                x = np.ones(shape, dtype=np.float32)
            else:
                x = rng.uniform(-scale, scale, size=shape).astype(np.float32)
            f.write(encode(x, a.dtype))
    os.replace(path + ".tmp", path)
    print(f"{path}: {len(spec)} tensors, {at / 1e6:.1f} MB of {st_dtype}")


if __name__ == "__main__":
    main()
