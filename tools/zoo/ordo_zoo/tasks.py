# Task data: copy, reverse and role items, their word-level vocabulary, the test suite.
import json
import os
import random

from .files import sha256_bytes, write_atomic
from .settings import BOS


# 100 syllables (ba be … zu); an item's symbols are distinct (n <= 80), so each output symbol has
# one place in the input to be found by content: tiny models learn that within the budget, while
# with repeats they stay near chance on exact match.
SYMBOLS = [c + v for c in "bdfghjklmnprstvwxyz" + "c" for v in "aeiou"]
DIGITS = list("0123456789")
NOUNS = ["dog", "man", "cat", "fox", "cow", "bird", "horse", "sheep", "lion", "wolf", "ox", "goat"]
VERBS = ["bites", "sees", "chases", "eats", "loves", "kicks"]
TASK_WORDS = ["copy", "reverse", "role", "add", "=", ",", "?", "+", "who", "whom"]
TASK_VOCAB = (["<unk>", "<s>", "</s>"] + TASK_WORDS + DIGITS + SYMBOLS + NOUNS + VERBS)
TASK_ID = {w: i for i, w in enumerate(TASK_VOCAB)}


def task_item(task, n, rng):
    """(prompt words, target words) of one item of `task` at length n."""
    if task in ("copy", "reverse"):
        s = rng.sample(SYMBOLS, n)
        return [task] + s + ["="], (s if task == "copy" else s[::-1])
    if task == "role":
        # n clauses "X v Y"; the query is one of them with a participant replaced by who/whom
        # ("who bites man" -> the subject, "dog bites whom" -> the object). Only word order tells
        # subject and object apart: the same nouns occur as both.
        def clause():
            s = rng.choice(NOUNS)
            return (s, rng.choice([x for x in NOUNS if x != s]), rng.randrange(len(VERBS)))
        cl = [clause() for _ in range(n)]
        q = rng.randrange(n)
        who = rng.random() < 0.5
        key = (lambda c: (c[1], c[2])) if who else (lambda c: (c[0], c[2]))  # (object, verb) / (subject, verb)
        for j in range(n):
            while j != q and key(cl[j]) == key(cl[q]):
                cl[j] = clause()
        words = ["role"]
        for j, (s, o, v) in enumerate(cl):
            words += ([","] if j else []) + [s, VERBS[v], o]
        s, o, v = cl[q]
        if who:
            return words + ["?", "who", VERBS[v], o], [s]
        return words + ["?", s, VERBS[v], "whom"], [o]
    if task == "add":
        a = [rng.choice(DIGITS[1:] if n > 1 else DIGITS)] + [rng.choice(DIGITS) for _ in range(n - 1)]
        m = rng.randint(1, n)
        b = [rng.choice(DIGITS[1:] if m > 1 else DIGITS)] + [rng.choice(DIGITS) for _ in range(m - 1)]
        return ["add"] + a + ["+"] + b + ["="], list(str(int("".join(a)) + int("".join(b))))
    raise ValueError(task)


def max_task_len(tasks, n):
    """Longest bos + prompt + target + eos of any item at length n."""
    longest = {"copy": 2 * n + 4, "reverse": 2 * n + 4, "role": 4 * n + 7, "add": 3 * n + 6}
    return max(longest[t] for t in tasks)


def task_ids(words):
    return [TASK_ID[w] for w in words]


def make_suite(c):
    rng = random.Random(20230517)  # fixed: every seed and scheme sees the same test items
    items = []
    for task in c["tasks"]:
        for n in c["test_lengths"]:
            for _ in range(c["suite_items"]):
                p, t = task_item(task, n, rng)
                items.append({"task": task, "length": n, "prompt": " ".join(p), "target": " ".join(t)})
    return items


def task_tokenizer_json():
    """HF tokenizer.json: WordLevel over TASK_VOCAB, whitespace split, <s> prepended."""
    special = lambda i: {"id": i, "content": TASK_VOCAB[i], "single_word": False, "lstrip": False, "rstrip": False,
                         "normalized": False, "special": True}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [special(i) for i in range(3)],
        "normalizer": None,
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [BOS], "tokens": ["<s>"]}},
        },
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {w: i for i, w in enumerate(TASK_VOCAB)}, "unk_token": "<unk>"},
    }


def prepare_tasks(out, c):
    suite = make_suite(c)
    text = "".join(json.dumps(it) + "\n" for it in suite)
    os.makedirs(os.path.join(out, "tasks"), exist_ok=True)
    write_atomic(os.path.join(out, "tasks", "suite.jsonl"), text)
    return {"suite": suite, "suite_sha": sha256_bytes(text.encode()),
            "vocab_sha": sha256_bytes(json.dumps(TASK_VOCAB).encode())}
