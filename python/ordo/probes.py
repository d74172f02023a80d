"""Probes of how a model uses position, as `ordo compare` runs them (ordo/probes.hpp).

Each takes an ordo.Model and returns plain dicts and lists. permutation, length and
attention_by_distance retune the model while they run: they raise ordo.Error if another call is
using the same model at that moment.
"""
from ._ordo import _probes as _p

split_sentences = _p.split_sentences
length_methods = _p.length_methods


def default_pairs(text, *, max_pairs=200, seed=None):
    """The (original, swapped) pairs `ordo compare` builds from a text (deterministic for a seed)."""
    if seed is None:
        return _p.default_pairs(text, max_pairs=max_pairs)
    return _p.default_pairs(text, max_pairs=max_pairs, seed=seed)


def word_order(model, pairs=None, *, text=None, max_pairs=200):
    """Scores original vs word-swapped sentences. pairs: [(original, swapped)] or dicts with those
    keys; or text=... to build them as `ordo compare` does. Returns {method, wins, ties, accuracy,
    mean_margin, pairs: [{original, swapped, score_original, score_swapped, margin, tie, same_tokens}]}."""
    if pairs is None:
        if text is None:
            raise ValueError("word_order: give pairs or text")
        pairs = default_pairs(text, max_pairs=max_pairs)
    return _p.word_order(model, pairs)


def permutation(model, ids, *, seed=None):
    """max |h(perm x) - perm h(x)| with the stack run bidirectionally: {max_abs_error, max_abs_hidden, rel_error}."""
    return _p.permutation(model, ids) if seed is None else _p.permutation(model, ids, seed=seed)


def length(model, ids, *, method="none", multiples=(1, 2, 4), base=None, trained=None):
    """Perplexity over ids at ctx = base * multiple, the scheme scaled by `method` (see
    length_methods(scheme)) at factor max(1, ctx / trained). A list of {multiple, ctx, factor, ppl, error, ...}."""
    return _p.length(model, list(ids), method=method, multiples=list(multiples), base=base, trained=trained)


def attention_by_distance(model, windows, *, max_distance=None):
    """Attention weight by query-key distance bucket over the given id windows:
    {buckets, lo, hi, rows, mean_weight, mass}."""
    return _p.attention_by_distance(model, [list(w) for w in windows], max_distance=max_distance)
