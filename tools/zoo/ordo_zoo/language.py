# Language data for lm and mlm: the KJV text, its sentencepiece tokenizer, token streams, probe pairs.
import os
import re
import subprocess

import torch

from .files import sha256_bytes, sha256_file, write_atomic
from .settings import BOS, HELDOUT_BOOKS, MASK


def bible_verses():
    out = subprocess.run(["bible", "-f", "gen1:1-rev22:21"], check=True, capture_output=True, text=True).stdout
    verses = []  # (book, text)
    for line in out.splitlines():
        m = re.match(r"^([1-3]?[A-Za-z]+)(\d+):(\d+) (.*)$", line.strip())
        if not m:
            if line.strip():
                raise SystemExit("unexpected line from bible: %r" % line)
            continue
        verses.append((m.group(1), m.group(4).strip()))
    return verses


def spm_encode_lines(spm_model, lines):
    """spm_encode ids of each line (no specials)."""
    for l in lines:
        if "\n" in l:
            raise ValueError("line with a newline: %r" % l)
    out = subprocess.run(["spm_encode", "--model=" + spm_model, "--output_format=id"], input="\n".join(lines) + "\n",
                         check=True, capture_output=True, text=True).stdout.split("\n")
    return [[int(x) for x in l.split()] for l in out[:len(lines)]]


def stream(verse_ids):
    """Training/held-out token stream: every verse starts with <s>, as a scored text does."""
    ids = []
    for v in verse_ids:
        ids.append(BOS)
        ids.extend(v)
    return torch.tensor(ids, dtype=torch.long)


def word_order_pairs(spm_model, held, n_pairs=4):
    """(original, swapped) texts from held-out verses: the first and the last content word (alphabetic,
    4+ letters, not the verse's first word; names if there are two) swapped, so the swapped text's
    tokens are a permutation of the original's (sentencepiece never merges across a space)."""
    cands = [v for v in held if 8 <= len(v.split()) <= 14]
    pairs = []
    for v in cands[::max(1, len(cands) // (4 * n_pairs))]:
        w = v.split()
        content = [k for k in range(1, len(w)) if w[k].isalpha() and len(w[k]) >= 4]
        names = [k for k in content if w[k][0].isupper()]
        if len({w[k] for k in names}) >= 2:  # two names: who did what to whom
            content = names
        if len(content) < 2:
            continue
        i, j = content[0], content[-1]
        if w[i] == w[j]:
            continue
        s = list(w)
        s[i], s[j] = s[j], s[i]
        a, b = spm_encode_lines(spm_model, [v, " ".join(s)])
        if sorted(a) != sorted(b) or a == b:
            continue
        pairs.append((v, " ".join(s)))
        if len(pairs) == n_pairs:
            break
    return pairs


def prepare_language(work, out):
    """Tokenizer, token streams and probe texts for lm and mlm, in `work`; heldout.txt in `out`."""
    verses = bible_verses()
    books = sorted({b for b, _ in verses})
    for b in HELDOUT_BOOKS:
        if b not in books:
            raise SystemExit("held-out book %s not in %s" % (b, books))
    train = [t for b, t in verses if b not in HELDOUT_BOOKS]
    held = [t for b, t in verses if b in HELDOUT_BOOKS]
    with open(os.path.join(work, "train.txt"), "w") as f:
        f.write("\n".join(train) + "\n")
    write_atomic(os.path.join(out, "heldout.txt"), "\n".join(held) + "\n")
    # Normalisation: only tab, LF and CR become spaces (a whole file encoded at once, as `ordo ppl`
    # does, has newlines). NFKC's table would make tokenizer.model 250 KB instead of 16 KB; KJV is
    # plain ASCII, so nothing else needs normalising.
    with open(os.path.join(work, "rules.tsv"), "w") as f:
        f.write("9\t20\nA\t20\nD\t20\n")
    # Relative paths (run in `work`): spm_train records them in the model, which must not depend on
    # the temporary directory's name.
    subprocess.run([
        "spm_train", "--input=train.txt", "--model_prefix=tok", "--vocab_size=1024", "--model_type=bpe",
        "--character_coverage=1.0", "--input_sentence_size=0", "--shuffle_input_sentence=false",
        "--num_threads=1", "--unk_id=0", "--bos_id=1", "--eos_id=2", "--pad_id=-1",
        "--user_defined_symbols=<mask>", "--normalization_rule_tsv=rules.tsv", "--minloglevel=2"],
        check=True, cwd=work)
    spm_model = os.path.join(work, "tok.model")
    mask = spm_encode_lines(spm_model, ["<mask>"])[0]
    if mask[-1] != MASK:
        raise SystemExit("<mask> is not id %d in the sentencepiece model: %s" % (MASK, mask))
    train_ids = stream(spm_encode_lines(spm_model, train))
    held_ids = stream(spm_encode_lines(spm_model, held))
    pairs = word_order_pairs(spm_model, held)
    texts = [t for p in pairs for t in p]
    probe = [{"pair": i // 2, "order": ("original", "swapped")[i % 2], "text": t, "ids": [BOS] + ids}
             for i, (t, ids) in enumerate(zip(texts, spm_encode_lines(spm_model, texts)))]
    data = {"train_ids": train_ids, "held_ids": held_ids, "probe": probe,
            "tokenizer_sha": sha256_file(spm_model),
            "text_sha": sha256_bytes(("\n".join(train) + "\0" + "\n".join(held)).encode())}
    torch.save(data, os.path.join(work, "language.pt"))
    return data
