# Makes tests/data/fixtures/embed/golden.json: pooled embeddings of padded batches from Hugging Face.
#
# For three fixtures (BERT, Llama, T5's encoder) a batch of inputs of different lengths runs through
# the Hugging Face base model in one forward, right-padded with an attention mask, as
# sentence-transformers and HF's feature extraction feed them. Each pooling is then computed the way
# sentence-transformers' models.Pooling / models.Normalize compute it:
#   mean:   sum(h * mask) / clamp(sum(mask), 1e-9)           (special tokens included)
#   cls:    h[:, 0]
#   last:   h[b, sum(mask_b) - 1]                              (right padding: the last real token)
#   pooler: HF's pooler_output (BertPooler: tanh(dense(h[:, 0])))
#   *_normalized: torch.nn.functional.normalize(v, p=2, dim=1)
# The "bert-text" case starts from texts: BertTokenizer on tests/data/fixtures/embed/vocab.txt (250
# WordPiece tokens, small enough for the fixture's 256-row embedding) pads the batch, as
# sentence-transformers' tokenize does, then BertModel and the same poolings.
# Run from the repository root:
#   source "$REFENV/env.sh" && /usr/bin/python3 tools/embed/make_embed_goldens.py
import json
import os

import torch
import torch.nn.functional as F
from transformers import BertModel, BertTokenizer, LlamaModel, T5EncoderModel

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
FIXTURES = os.path.join(ROOT, "tests", "data", "fixtures")


def pad_batch(seqs, pad_id):
    T = max(len(s) for s in seqs)
    ids = [s + [pad_id] * (T - len(s)) for s in seqs]
    mask = [[1] * len(s) + [0] * (T - len(s)) for s in seqs]
    return ids, mask


def pooled(h, mask):
    m = mask.unsqueeze(-1).to(h.dtype)
    mean = (h * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
    cls = h[:, 0]
    last = h[torch.arange(h.shape[0]), mask.sum(1) - 1]
    return {"mean": mean, "cls": cls, "last": last}


def rows(t):
    return [[float(x) for x in r] for r in t.to(torch.float32)]


def case(name, model, seqs, pad_id, with_types=False, extra=None, texts=None):
    ids, mask = pad_batch(seqs, pad_id)
    ids_t, mask_t = torch.tensor(ids), torch.tensor(mask)
    kwargs = {"input_ids": ids_t, "attention_mask": mask_t}
    types = None
    if with_types and texts is None:
        # The second half of each input is segment 1 (token types, as a sentence pair).
        types = [[0] * (len(s) // 2) + [1] * (len(s) - len(s) // 2) + [0] * (len(ids[0]) - len(s)) for s in seqs]
        kwargs["token_type_ids"] = torch.tensor(types)
    with torch.no_grad():
        out = model(**kwargs)
    h = out.last_hidden_state
    p = pooled(h, mask_t)
    if extra:
        p.update(extra(out))
    result = {"input_ids": ids, "attention_mask": mask}
    if texts is not None:
        result = {"texts": texts, **result}
    if types is not None:
        result["token_type_ids"] = types
    result["pooled"] = {}
    for k, v in p.items():
        result["pooled"][k] = rows(v)
        result["pooled"][k + "_normalized"] = rows(F.normalize(v, p=2, dim=1))
    return name, result


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(30)

    def draw(n, lo, hi):
        return [int(x) for x in torch.randint(lo, hi, (n,), generator=g)]

    cases = {}
    bert = BertModel.from_pretrained(os.path.join(FIXTURES, "bert")).eval()
    # [CLS]-like first id, random body, [SEP]-like last id (ids are arbitrary: random weights).
    seqs = [[2] + draw(n, 5, 256) + [3] for n in (4, 11, 1)]
    k, v = case("bert", bert, seqs, 0, with_types=True, extra=lambda o: {"pooler": o.pooler_output})
    cases[k] = v

    tok = BertTokenizer(os.path.join(FIXTURES, "embed", "vocab.txt"), do_lower_case=True)
    texts = [
        "The first sentence to embed.",
        "A much longer one: they said that we could find the way home, and then they went away!",
        "Hi",
        "Embedding vectors pool well; unknown words (zyx) become [UNK].",
    ]
    enc = tok(texts, padding=True)
    assert enc["input_ids"] == pad_batch([tok.encode(t) for t in texts], tok.pad_token_id)[0]
    seqs = [tok.encode(t) for t in texts]
    k, v = case("bert-text", bert, seqs, tok.pad_token_id, extra=lambda o: {"pooler": o.pooler_output}, texts=texts)
    cases[k] = v

    llama = LlamaModel.from_pretrained(os.path.join(FIXTURES, "llama")).eval()
    seqs = [[1] + draw(n, 3, 256) for n in (6, 13, 2, 0)]
    k, v = case("llama", llama, seqs, 0)
    cases[k] = v

    t5 = T5EncoderModel.from_pretrained(os.path.join(FIXTURES, "t5")).eval()
    seqs = [draw(n, 2, 256) + [1] for n in (9, 3, 16)]
    k, v = case("t5", t5, seqs, 0)
    cases[k] = v

    import transformers

    doc = {
        "description": "Pooled embeddings of right-padded batches, sentence-transformers pooling over HF "
        "last_hidden_state (see tools/embed/make_embed_goldens.py)",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "cases": cases,
    }
    out_dir = os.path.join(FIXTURES, "embed")
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "golden.json"), "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
