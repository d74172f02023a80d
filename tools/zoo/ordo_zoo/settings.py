# The zoo's settings: schemes, kinds, seeds, special ids and the presets' hyperparameters.


SCHEMES = ["none", "learned", "sinusoidal", "relative", "rope", "alibi"]
KINDS = ["lm", "mlm", "tasks"]
SEEDS = [1, 2, 3]
HELDOUT_BOOKS = ["Ruth", "Est", "Jonah", "Phi", "Jas", "1Jn", "2Jn", "3Jn", "Jude"]
UNK, BOS, EOS, MASK = 0, 1, 2, 3
# Bumped whenever the outputs for an unchanged configuration change (it is part of the config hash,
# so resuming retrains everything after a bump).
FORMAT = 2

COMMON = dict(rms_eps=1e-5, rope_theta=10000.0, num_buckets=32, max_distance=128, alibi_max_bias=8.0,
              weight_decay=0.05, min_lr_frac=0.1)
LANG_FULL = dict(init_std=0.02, d_model=96, n_layers=3, n_heads=4, ffn=256, vocab=1024, ctx=128, batch=16, steps=800,
                 lr=3e-3, warmup=100, golden_tokens=12)
PRESETS = {
    "full": {
        "lm": dict(LANG_FULL),
        "mlm": dict(LANG_FULL, mask_prob=0.15),
        # init std d^-1/2: with GPT-2's 0.02 at d = 64 the attention stays uniform for thousands of steps.
        "tasks": dict(init_std=0.125, d_model=64, n_layers=3, n_heads=4, ffn=64, batch=32, steps=2800, lr=3e-3,
                      warmup=100,
                      tasks=["copy", "reverse", "role"], task_weights=[1, 1, 2], train_max_n=20,
                      test_lengths=[20, 40, 80], suite_items=100, item_bits=10),
    },
    # For test fixtures: the same code paths, minutes of CPU in total, a few hundred KB of files.
    "tiny": {
        "lm": dict(LANG_FULL, d_model=32, n_layers=2, n_heads=2, ffn=64, ctx=64, batch=4, steps=30, warmup=5,
                   golden_tokens=16),
        "mlm": dict(LANG_FULL, d_model=32, n_layers=2, n_heads=2, ffn=64, ctx=64, batch=4, steps=30, warmup=5,
                    golden_tokens=16, mask_prob=0.15),
        "tasks": dict(init_std=0.18, d_model=32, n_layers=2, n_heads=2, ffn=64, batch=16, steps=400, lr=3e-3, warmup=20,
                      tasks=["copy", "reverse", "role"], task_weights=[1, 1, 2], train_max_n=20,
                      test_lengths=[20, 40, 80], suite_items=20, item_bits=10),
    },
}
