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

--ddp or --fsdp trains on several processes, launched by torchrun (one per GPU): DDP, or FSDP's
full shard (fully_shard on every block and the model, PyTorch 2.4 or later), each rank on its own
batches; NCCL on GPUs, gloo with --device cpu (gloo has no BF16 collectives, so there the model
trains in F32 and the dump rounds it to BF16). Rank 0 prints; the summary adds the ranks' own
figures, and its dump counts are over all ranks. --gather-at S1,S2 writes, at those dumped steps,
the full state PyTorch gathers (FSDP: the full state dict, and each gradient's full tensor; DDP
and one process: rank 0's own) to --gather-dir as full-stepNNNNNNNN.safetensors, named and
rounded as the dump is, for comparing with what lcttop watch merged from the ranks' files
(cmd/lcttop/sharded_test.go, scripts/sharded_check.sh); the steps that gather are left out of
the step times.

    python3 scripts/pytorch_reference.py --model gpt162m --steps 30
    torchrun --nproc-per-node 2 scripts/pytorch_reference.py --fsdp --dump-dir runs/lct
"""

import argparse
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.distributed
import torch.nn as nn
import torch.nn.functional as F

MODELS = {  # trainer/model.go
    "tiny": dict(layers=4, dim=128, heads=4, context=64, batch=4, seq_len=64),
    "small": dict(layers=6, dim=256, heads=8, context=128, batch=4, seq_len=128),
    "medium": dict(layers=8, dim=512, heads=8, context=256, batch=4, seq_len=256),
    "gpt162m": dict(layers=13, dim=1024, heads=16, context=1024, batch=8, seq_len=1024),
}
VOCAB = 256


def attention(q, k, v):
    """Causal attention: SDPA where PyTorch has it (2.0 on), else the same in plain operations."""
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = q.shape[-2]
    a = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    a = a.masked_fill(torch.ones(T, T, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return a.softmax(-1) @ v


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
        y = attention(q, k, v)
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


def fully_shard_api():
    """FSDP2's fully_shard, or None where this PyTorch has none (before 2.4)."""
    if int(torch.__version__.split(".")[0]) < 2:
        # PyTorch 1.13's torch.distributed does not import under Python 3.11 without it; newer
        # ones need nothing, and its imports of 1.13's private names are not theirs.
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        import torch_compat  # noqa: F401
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        try:
            from torch.distributed._composable.fsdp import fully_shard
        except ImportError:
            return None
    return fully_shard


def gather_steps(a):
    """--gather-at's steps, each one the dump writes."""
    if not a.gather_at:
        return set()
    if not a.dump_dir:
        sys.exit("pytorch_reference: --gather-at needs --dump-dir (it writes what the dump is compared with)")
    steps = set()
    for item in a.gather_at.split(","):
        if not item.strip().isdigit():
            sys.exit("pytorch_reference: --gather-at %r: not a list of steps (20,40)" % a.gather_at)
        step = int(item)
        if step < 1 or step > a.warmup + a.steps or step % a.dump_every:
            sys.exit("pytorch_reference: --gather-at %d: not a step the dump writes (every %d of steps 1..%d)"
                     % (step, a.dump_every, a.warmup + a.steps))
        steps.add(step)
    return steps


def gathered_grads(model, parallel, rank):
    """Every gradient whole, BF16 on the host, as {name: tensor} on rank 0: under FSDP gathered
    by PyTorch (DTensor.full_tensor, on every rank), else this rank's own."""
    out = {}
    for name, p in model.named_parameters():
        if p.grad is None:
            continue
        g = p.grad.full_tensor() if parallel == "fsdp" else p.grad
        if rank == 0:
            out[name] = g.detach().to("cpu", torch.bfloat16, copy=True)
    return out


def write_gathered(path, step, model, opt, grads, parallel, rank, world):
    """Writes, on rank 0, the full state after optimizer step `step`, named as the dump names it:
    under FSDP PyTorch's full state dict (get_state_dict, full_state_dict), else rank 0's own."""
    from lcttop_dump import dumped_states, write_bf16
    if parallel == "fsdp":
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict
        params, optim = get_state_dict(model, opt, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        states = optim.get("state", {})
    else:
        params = {n: p for n, p in model.named_parameters()}
        states = {n: opt.state.get(p, {}) for n, p in model.named_parameters()}
    if rank != 0:
        return
    tensors = []
    for name, _ in model.named_parameters():
        tensors.append(("param." + name, params[name]))
        if name in grads:
            tensors.append(("grad." + name, grads[name]))
        for key, value in dumped_states(states.get(name, {})):
            tensors.append(("%s.%s" % (key, name), value))
    write_bf16(path, tensors, {"format": "lcttop-full/1", "step": str(step), "world": str(world),
                               "parallel": parallel or "none"})


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
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="cpu: no GPU (gloo between the ranks)")
    par = ap.add_mutually_exclusive_group()
    par.add_argument("--ddp", action="store_true", help="DistributedDataParallel over torchrun's processes")
    par.add_argument("--fsdp", action="store_true", help="FSDP full shard over torchrun's processes")
    ap.add_argument("--gather-at", default="", help="with --dump-dir: dumped steps (20,40) at which to write the full state")
    ap.add_argument("--gather-dir", default="", help="where --gather-at writes (default: the dump folder's name + -full)")
    a = ap.parse_args()
    if a.dump_every < 1:
        sys.exit("pytorch_reference: --dump-every must be at least 1")
    gather_at = gather_steps(a)
    parallel = "ddp" if a.ddp else "fsdp" if a.fsdp else ""
    cuda = a.device == "cuda"

    if cuda and not torch.cuda.is_available():
        sys.exit("pytorch_reference: no CUDA GPU")
    fully_shard = fully_shard_api() if parallel == "fsdp" else None
    if parallel == "fsdp" and fully_shard is None:
        sys.exit("pytorch_reference: --fsdp needs FSDP2's fully_shard (PyTorch 2.4 or later); this is PyTorch %s"
                 % torch.__version__)
    rank, world = 0, 1
    if parallel:
        if "RANK" not in os.environ or "WORLD_SIZE" not in os.environ:
            sys.exit("pytorch_reference: --%s runs one process per rank: torchrun --nproc-per-node N %s --%s ..."
                     % (parallel, sys.argv[0], parallel))
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
        local_world = int(os.environ.get("LOCAL_WORLD_SIZE", world))
        if cuda:
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", rank)))
        else:
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world))
        torch.distributed.init_process_group("nccl" if cuda else "gloo")
    cfg = dict(MODELS[a.model])
    B = a.batch or cfg["batch"]
    T = a.seq_len or cfg["seq_len"]
    if T > cfg["context"]:
        cfg["context"] = T
    torch.manual_seed(a.seed)
    dev = torch.device(a.device)
    # gloo has no BF16 collectives: between CPU ranks the model trains in F32, the dump rounds it.
    dtype = torch.float32 if parallel and not cuda else torch.bfloat16
    model = GPT(**cfg).to(dev, dtype=dtype)
    params = sum(p.numel() for p in model.parameters())
    net = model
    if parallel == "ddp":
        net = nn.parallel.DistributedDataParallel(model, device_ids=[torch.cuda.current_device()] if cuda else None)
    elif parallel == "fsdp":
        for b in model.blocks:
            fully_shard(b)
        fully_shard(model)  # the parameters are now this rank's shards (DTensors)
    decay = [p for n, p in model.named_parameters() if p.dim() == 2]
    rest = [p for n, p in model.named_parameters() if p.dim() != 2]
    fused = dict(fused=True) if cuda else {}
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=a.lr, betas=(0.9, 0.99), eps=1e-8, **fused)
    step_fn = net
    if a.compile:
        step_fn = torch.compile(net)
    dumper = None
    if a.dump_dir:
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from lcttop_dump import Dumper
        dumper = Dumper(a.dump_dir, model, opt, every=a.dump_every).attach()
    gather_dir = a.gather_dir or a.dump_dir.rstrip("/") + "-full"
    if gather_at and rank == 0:
        os.makedirs(gather_dir, exist_ok=True)

    with open(a.corpus, "rb") as f:
        text = torch.tensor(list(f.read()), dtype=torch.long)
    gen = torch.Generator().manual_seed(a.seed + rank)  # each rank its own batches

    def batch():
        pos = torch.randint(0, len(text) - T - 1, (B,), generator=gen)
        x = torch.stack([text[p:p + T] for p in pos])
        y = torch.stack([text[p + 1:p + T + 1] for p in pos])
        return x.to(dev, non_blocking=True), y.to(dev, non_blocking=True)

    times, losses, dump_times, other_times = [], [], [], []
    for step in range(1, a.warmup + a.steps + 1):
        if step == a.warmup + 1 and cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        for g in opt.param_groups:
            g["lr"] = a.lr * min(1.0, step / a.lr_warmup) if a.lr_warmup else a.lr
        x, y = batch()
        if cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
        else:
            t0 = time.perf_counter()
        loss = step_fn(x, y)
        loss.backward()
        if step in gather_at:
            grads = gathered_grads(model, parallel, rank)
        opt.step()
        if step in gather_at:
            write_gathered(os.path.join(gather_dir, "full-step%08d.safetensors" % step), step, model, opt, grads,
                           parallel, rank, world)
        opt.zero_grad(set_to_none=True)
        if cuda:
            end.record()
            torch.cuda.synchronize()
            ms = start.elapsed_time(end)
        else:
            ms = 1000 * (time.perf_counter() - t0)
        losses.append(loss.item())
        if step > a.warmup and step not in gather_at:
            times.append(ms)
            (dump_times if dumper and step % a.dump_every == 0 else other_times).append(ms)
        if a.verbose and rank == 0:
            print(json.dumps({"step": step, "loss": losses[-1], "step_ms": ms}), flush=True)

    def mean(xs):
        return statistics.mean(xs) if xs else None

    summary = {
        "pytorch": torch.__version__, "device": torch.cuda.get_device_name() if cuda else "cpu", "model": a.model,
        "params": params, "batch": B, "seq_len": T, "compile": a.compile, "timed_steps": len(times),
        "median_step_ms": statistics.median(times) if times else None, "mean_step_ms": mean(times),
        "min_step_ms": min(times, default=None), "max_step_ms": max(times, default=None),
        "peak_allocated_bytes": torch.cuda.max_memory_allocated() if cuda else None,
        "peak_reserved_bytes": torch.cuda.max_memory_reserved() if cuda else None,
        "first_loss": losses[0], "last_loss": losses[-1],
    }
    mine = {}
    if dumper:
        dumper.close()  # waits for the last file, outside the timed steps
        mine = {"dumps_written": dumper.written, "dumps_skipped": dumper.skipped, "dump_errors": dumper.errors,
                "dump_step_mean_ms": mean(dump_times), "other_step_mean_ms": mean(other_times)}
        summary.update({
            "dump_every": a.dump_every, "dumps_written": dumper.written, "dumps_skipped": dumper.skipped,
            "dump_errors": dumper.errors, "dump_step_mean_ms": mine["dump_step_mean_ms"],
            "other_step_mean_ms": mine["other_step_mean_ms"],
        })
    if parallel:
        mine.update({"rank": rank, "median_step_ms": summary["median_step_ms"], "mean_step_ms": summary["mean_step_ms"],
                     "peak_allocated_bytes": summary["peak_allocated_bytes"], "last_loss": losses[-1]})
        ranks = [None] * world
        torch.distributed.all_gather_object(ranks, mine)
        if dumper:  # the files of every rank
            summary["dumps_written"] = sum(r["dumps_written"] for r in ranks)
            summary["dumps_skipped"] = sum(r["dumps_skipped"] for r in ranks)
            summary["dump_errors"] = ["rank %d: %s" % (r["rank"], e) for r in ranks for e in r["dump_errors"]]
        summary.update({"parallel": parallel, "world": world, "dist_backend": torch.distributed.get_backend(),
                        "dtype": str(dtype).replace("torch.", ""), "ranks": ranks})
    if gather_at:
        summary["gathered"] = sorted(gather_at)
        summary["gather_dir"] = gather_dir
    if rank == 0:
        print(json.dumps(summary), flush=True)
    if parallel and not cuda:
        # Every file is written and synced. PyTorch 1.13's gloo can deadlock freeing its process
        # group: the main thread, holding the GIL, joins a worker thread that waits for the GIL to
        # free a tensor of the last collective. Leave without freeing anything.
        sys.stderr.flush()
        os._exit(0)
    if parallel:
        torch.distributed.destroy_process_group()


if __name__ == "__main__":
    main()
