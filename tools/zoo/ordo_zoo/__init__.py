# The zoo trainer as a package: one module per job; the docstring below is its --help description.
"""Trains ordo's position-scheme zoo: small models identical in everything (data, batch order, seed,
size, steps) except the position scheme, in three kinds, three seeds each.

  schemes: none | learned | sinusoidal | relative | rope | alibi
  kinds:   lm     causal decoders on the King James Bible
           mlm    bidirectional masked-LM encoders, same data, size and architecture
           tasks  small decoders on synthetic tasks (copy, reverse, role), trained on lengths <= 20

Data: the King James Bible (Debian package bible-kjv-text, public domain), verse references
stripped; a few whole books are held out (heldout.txt). Tokenizer (lm, mlm): sentencepiece BPE
trained with spm_train; tasks: a WordLevel tokenizer.json over a small symbol vocabulary. Model:
pre-norm RMSNorm, SwiGLU, no biases, tied embeddings, written to mirror ordo's float32 math
(engine/src/transformer.cpp, engine/src/position/*.cpp).

Each model is exported as <out>/<kind>/<scheme>-s<seed>/{config.json, model.safetensors (F16),
tokenizer, golden.json, golden.safetensors}; the reference outputs are computed in float32 from the
exported (F16-rounded) weights. Training is deterministic (single thread, seeded, deterministic
algorithms) and resumable: a model whose outputs exist with the same config hash is skipped.

Needs: Debian's python3-torch (1.13), sentencepiece (spm_train, spm_encode), bible-kjv.
Run from the repository root:  python3 tools/zoo/train_zoo.py [--jobs 2] [--preset tiny --out DIR]
"""

