#!/usr/bin/env python3
"""The lcttop GPT in PyTorch, to time what users would otherwise run.

The same model as trainer/model.go and the CUDA backend (trainer/cudabackend):
byte-level vocabulary of 256, learned token and position embeddings, pre-LayerNorm
blocks (eps 1e-5) with causal multi-head self-attention (scale 1/sqrt(D)) and a
GELU (tanh approximation) MLP of width 4C, biases on every Linear but the untied
LM head, final LayerNorm; GPT-2 initialisation (std 0.02, residual projections
0.02/sqrt(2L), zero biases, unit gains). Parameters, gradients and AdamW states
are BF16 like lcttop's (pure BF16 training), AdamW with lr 3e-3 (linear warmup),
betas (0.9, 0.99), eps 1e-8, weight decay 0.1 on matrices only; batches of random
windows of the built-in corpus (trainer/corpus/corpus.txt).

Attention runs through F.scaled_dot_product_attention(is_causal=True) (flash
attention on an H100/H200), the optimizer is the fused AdamW: the fast eager
PyTorch a user would write. --compile adds torch.compile.

Step time: CUDA events around whole steps after --warmup steps, median of
--steps; peak memory: torch.cuda.max_memory_allocated over the timed steps.
Prints one JSON line per step with --verbose and a JSON summary last.

--dump-dir D --dump-every N adds scripts/lcttop_dump.py to the loop: every N optimizer steps
the weights, gradients and AdamW states go to D as BF16 safetensors for lcttop watch D. The
summary then also gives the mean time of the steps that dumped and of the others
(scripts/dump_cost.sh compares runs with and without it).

    python3 scripts/pytorch_reference.py --model gpt162m --steps 30
"""

import argparse
import json
import math
import os
import statistics
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

MODELS = {  # trainer/model.go
    "tiny": dict(layers=4, dim=128, heads=4, context=64, batch=4, seq_len=64),
    "small": dict(layers=6, dim=256, heads=8, context=128, batch=4, seq_len=128),
    "medium": dict(layers=8, dim=512, heads=8, context=256, batch=4, seq_len=256),
    "gpt162m": dict(layers=13, dim=1024, heads=16, context=1024, batch=8, seq_len=1024),
}
VOCAB = 256


class Block(nn.Module):
    def __init__(self, dim, heads, layers):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim, eps=1e-5)
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim, eps=1e-5)
        self.fc = nn.Linear(dim, 4 * dim)
        self.fcproj = nn.Linear(4 * dim, dim)
        std, proj_std = 0.02, 0.02 / math.sqrt(2 * layers)
        for lin, s in ((self.qkv, std), (self.proj, proj_std), (self.fc, std), (self.fcproj, proj_std)):
            nn.init.normal_(lin.weight, std=s)
            nn.init.zeros_(lin.bias)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.heads, C // self.heads).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, layers, dim, heads, context, **_):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, dim)
        self.wpe = nn.Embedding(context, dim)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.02)
        self.blocks = nn.ModuleList(Block(dim, heads, layers) for _ in range(layers))
        self.lnf = nn.LayerNorm(dim, eps=1e-5)
        self.head = nn.Linear(dim, VOCAB, bias=False)
        nn.init.normal_(self.head.weight, std=0.02)

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(T, device=tokens.device))
        for b in self.blocks:
            x = b(x)
        logits = self.head(self.lnf(x))
        return F.cross_entropy(logits.view(-1, VOCAB).float(), targets.view(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gpt162m", choices=sorted(MODELS))
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--seq-len", type=int, default=0)
    ap.add_argument("--steps", type=int, default=30, help="timed steps")
    ap.add_argument("--warmup", type=int, default=5, help="untimed steps first")
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--lr-warmup", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--corpus", default=os.path.join(os.path.dirname(__file__), "..", "trainer", "corpus", "corpus.txt"))
    ap.add_argument("--dump-dir", default="", help="write checkpoints for lcttop watch here (scripts/lcttop_dump.py)")
    ap.add_argument("--dump-every", type=int, default=20, help="with --dump-dir: every so many optimizer steps")
    a = ap.parse_args()
    if a.dump_every < 1:
        sys.exit("pytorch_reference: --dump-every must be at least 1")

    if not torch.cuda.is_available():
        sys.exit("pytorch_reference: no CUDA GPU")
    cfg = dict(MODELS[a.model])
    B = a.batch or cfg["batch"]
    T = a.seq_len or cfg["seq_len"]
    if T > cfg["context"]:
        cfg["context"] = T
    torch.manual_seed(a.seed)
    dev = torch.device("cuda")
    model = GPT(**cfg).to(dev, dtype=torch.bfloat16)
    params = sum(p.numel() for p in model.parameters())
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    rest = [p for n, p in model.named_parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.99), eps=1e-8, fused=True)
    step_fn = model
    if a.compile:
        step_fn = torch.compile(model)
    dumper = None
    if a.dump_dir:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from lcttop_dump import Dumper
        dumper = Dumper(a.dump_dir, model, opt, every=a.dump_every).attach()

    with open(a.corpus, "rb") as f:
        text = torch.tensor(list(f.read()), dtype=torch.long)
    gen = torch.Generator().manual_seed(a.seed)

    def batch():
        pos = torch.randint(0, len(text) - T - 1, (B,), generator=gen)
        x = torch.stack([text[p:p + T] for p in pos])
        y = torch.stack([text[p + 1:p + T + 1] for p in pos])
        return x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)

    times, losses, dump_times, other_times = [], [], [], []
    for step in range(1, a.warmup + a.steps + 1):
        if step == a.warmup + 1:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        for g in opt.param_groups:
            g["lr"] = a.lr * min(1.0, step / a.lr_warmup) if a.lr_warmup else a.lr
        x, y = batch()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        loss = step_fn(x, y)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        end.record()
        torch.cuda.synchronize()
        ms = start.elapsed_time(end)
        losses.append(loss.item())
        if step > a.warmup:
            times.append(ms)
            (dump_times if dumper and step % a.dump_every == 0 else other_times).append(ms)
        if a.verbose:
            print(json.dumps({"step": step, "loss": losses[-1], "step_ms": ms}), flush=True)

    summary = {
        "pytorch": torch.__version__, "device": torch.cuda.get_device_name(), "model": a.model, "params": params,
        "batch": B, "seq_len": T, "compile": a.compile, "timed_steps": len(times),
        "median_step_ms": statistics.median(times), "mean_step_ms": statistics.mean(times),
        "min_step_ms": min(times), "max_step_ms": max(times),
        "peak_allocated_bytes": torch.cuda.max_memory_allocated(), "peak_reserved_bytes": torch.cuda.max_memory_reserved(),
        "first_loss": losses[0], "last_loss": losses[-1],
    }
    if dumper:
        dumper.close()  # waits for the last file, outside the timed steps
        summary.update({
            "dump_every": a.dump_every, "dumps_written": dumper.written, "dumps_skipped": dumper.skipped,
            "dump_errors": dumper.errors, "dump_step_mean_ms": statistics.mean(dump_times) if dump_times else None,
            "other_step_mean_ms": statistics.mean(other_times) if other_times else None,
        })
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
