# Training one model: the learning-rate schedule, deterministic batches, the loop, held-out loss.
import math
import random
import time

import torch
import torch.nn.functional as F

from .files import log
from .model import ZooModel
from .settings import BOS, EOS, MASK
from .tasks import task_ids, task_item


def lr_at(c, step):
    if step < c["warmup"]:
        return c["lr"] * (step + 1) / c["warmup"]
    t = (step - c["warmup"]) / max(1, c["steps"] - c["warmup"])
    return c["lr"] * (c["min_lr_frac"] + (1 - c["min_lr_frac"]) * 0.5 * (1 + math.cos(math.pi * t)))


def mlm_mask(x, c, g):
    """BERT's rule: 15% of the non-special positions are chosen; of those 80% become <mask>, 10% a
    random token, 10% stay. Returns (input, target with -100 where no loss)."""
    chosen = (torch.rand(x.shape, generator=g) < c["mask_prob"]) & (x > MASK)
    r = torch.rand(x.shape, generator=g)
    rnd = torch.randint(MASK + 1, c["vocab"], x.shape, generator=g)
    inp = torch.where(chosen & (r < 0.8), torch.full_like(x, MASK), x)
    inp = torch.where(chosen & (r >= 0.8) & (r < 0.9), rnd, inp)
    return inp, torch.where(chosen, x, torch.full_like(x, -100))


def task_batch(c, rng):
    """A training batch of one random task (less padding than mixed tasks) at random lengths
    1..train_max_n: [B, T] ids and targets (-100 on prompt and padding; the loss is on the answer and
    its </s>)."""
    seqs = []
    task = rng.choices(c["tasks"], weights=c["task_weights"])[0]
    for _ in range(c["batch"]):
        p, t = task_item(task, rng.randint(1, c["train_max_n"]), rng)
        seqs.append(([BOS] + task_ids(p), task_ids(t) + [EOS]))
    T = max(len(p) + len(t) for p, t in seqs)
    x = torch.full((len(seqs), T), EOS, dtype=torch.long)
    y = torch.full((len(seqs), T), -100, dtype=torch.long)
    for i, (p, t) in enumerate(seqs):
        s = p + t
        x[i, :len(s)] = torch.tensor(s)
        y[i, len(p) - 1:len(s) - 1] = torch.tensor(t)  # position j predicts token j+1
    return x, y


def make_batches(kind, c, seed, lang):
    """A generator of (input, target) for each step, fixed by the seed (same for every scheme)."""
    if kind == "tasks":
        rng = random.Random(seed * 1000003 + 17)
        for _ in range(c["steps"]):
            yield task_batch(c, rng)
        return
    ids = lang["train_ids"]
    g = torch.Generator().manual_seed(seed * 1000003 + 1)
    gm = torch.Generator().manual_seed(seed * 1000003 + 2)
    T = c["ctx"]
    ar = torch.arange(T + 1)
    for _ in range(c["steps"]):
        off = torch.randint(0, len(ids) - T - 1, (c["batch"],), generator=g)
        xs = ids[off[:, None] + ar[None, :]]
        if kind == "lm":
            yield xs[:, :-1], xs[:, 1:]
        else:
            yield mlm_mask(xs[:, :-1], c, gm)


@torch.no_grad()
def heldout_loss(kind, model, c, ids, max_windows=64):
    """lm: next-token loss over windows of ctx; mlm: masked-token loss (fixed masking)."""
    T = c["ctx"]
    n = min(max_windows, (len(ids) - 1) // T)
    gm = torch.Generator().manual_seed(4321)
    tot, cnt = 0.0, 0
    for w in range(0, n, 16):
        xs = torch.stack([ids[i * T: i * T + T + 1] for i in range(w, min(n, w + 16))])
        if kind == "lm":
            x, y = xs[:, :-1], xs[:, 1:]
        else:
            x, y = mlm_mask(xs[:, :-1], c, gm)
        logits = model(x)
        tot += F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1), reduction="sum").item()
        cnt += int((y != -100).sum())
    return tot / cnt


def train_one(kind, scheme, seed, c, lang, tag):
    torch.manual_seed(seed)
    model = ZooModel(scheme, c, causal=(kind != "mlm"))
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    nodecay = [p for n, p in model.named_parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": c["weight_decay"]},
                             {"params": nodecay, "weight_decay": 0.0}], lr=c["lr"], betas=(0.9, 0.95))
    t0, cpu0 = time.time(), time.process_time()
    recent = []
    every = max(1, c["steps"] // 10)
    for step, (x, y) in enumerate(make_batches(kind, c, seed, lang)):
        for gp in opt.param_groups:
            gp["lr"] = lr_at(c, step)
        logits = model(x)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        recent = (recent + [loss.item()])[-50:]
        if step % every == 0 or step == c["steps"] - 1:
            log("%s step %d/%d loss %.4f  %.3fs/step wall, %.3fs/step cpu" % (
                tag, step + 1, c["steps"], sum(recent) / len(recent), (time.time() - t0) / (step + 1),
                (time.process_time() - cpu0) / (step + 1)))
    stats = dict(kind=kind, scheme=scheme, seed=seed, steps=c["steps"], train_seconds=round(time.time() - t0, 1),
                 train_cpu_seconds=round(time.process_time() - cpu0, 1),
                 train_loss_last50=round(sum(recent) / len(recent), 4))
    return model, stats


def round_to_f16(model):
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.half().float())
