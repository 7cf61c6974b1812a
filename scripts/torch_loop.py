"""A real PyTorch training loop for lcttop's tests (cmd/lcttop/pytorch_test.go):

    /usr/bin/python3 scripts/torch_loop.py OUT            # one process
    /usr/bin/python3 scripts/torch_loop.py OUT --ddp      # DistributedDataParallel, gloo, 2 ranks

A small model trains 4 steps with AdamW, in BF16 (under DDP in F32: gloo does not broadcast
BF16, and the dump rounds the values to BF16). scripts/lcttop_dump.py dumps every 2nd step into
OUT/dump (under DDP one file per rank, the parameters split between them). After the last step:
OUT/ckpt.pt, torch.save of {"model": state_dict, "optimizer": state_dict, "step": 4};
OUT/dcp/, a torch.distributed.checkpoint folder of the same tensors as "model.<name>" and
"optimizer.state.<name>.<key>" (under DDP written by both ranks, and with "sharded.<embedding>",
the embedding as a ShardedTensor of one chunk per rank); OUT/expected.json, what PyTorch held at
step 4 for each name the dump uses (param., grad., exp_avg., exp_avg_sq.): elements, the 256-bin
exponent histogram of the BF16 values and the zlib CRC-32 of their bytes.
"""

import json
import os
import sys
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_compat import dcp  # noqa: E402  (before torch: PyTorch 1.13 under Python 3.11)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402
import torch.nn as nn  # noqa: E402

STEPS, EVERY = 4, 2


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(512, 64)
        self.blocks = nn.ModuleList([nn.Sequential(nn.LayerNorm(64), nn.Linear(64, 256), nn.GELU(), nn.Linear(256, 64))
                                     for _ in range(2)])
        self.head = nn.Linear(64, 512, bias=False)

    def forward(self, x):
        h = self.embed(x)
        for b in self.blocks:
            h = h + b(h)
        return self.head(h)


def describe(t):
    t = t.detach().to(torch.bfloat16).contiguous().reshape(-1)
    bits = t.view(torch.int16).to(torch.int32) & 0xFFFF
    hist = torch.bincount((bits >> 7) & 0xFF, minlength=256)
    return {"elements": t.numel(), "histogram": hist.tolist(), "crc32": zlib.crc32(t.view(torch.uint8).numpy().tobytes())}


def train(rank, world, out, port):
    from lcttop_dump import Dumper
    if world > 1:
        os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(0)
    # gloo cannot broadcast BF16, so under DDP the model trains in F32 and the dump rounds it.
    model = Tiny().to(torch.float32 if world > 1 else torch.bfloat16)
    net = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    opt = torch.optim.AdamW(net.parameters(), lr=3e-3)
    dumper = Dumper(os.path.join(out, "dump"), model, opt, every=EVERY).attach()
    gen = torch.Generator().manual_seed(100 + rank)
    grads = {}
    for step in range(1, STEPS + 1):
        x = torch.randint(0, 512, (4, 16), generator=gen)
        y = torch.randint(0, 512, (4, 16), generator=gen)
        loss = nn.functional.cross_entropy(net(x).float().reshape(-1, 512), y.reshape(-1))
        loss.backward()
        if step == STEPS:
            grads = {n: p.grad.detach().clone() for n, p in model.named_parameters()}
        opt.step()
        opt.zero_grad(set_to_none=True)
    dumper.close()
    if dumper.errors:
        raise SystemExit("dump errors: %s" % dumper.errors)

    names = [n for n, _ in model.named_parameters()]
    flat = {}
    for n, p in model.named_parameters():
        flat["model." + n] = p.detach()
        for k, v in opt.state[p].items():
            if torch.is_tensor(v) and v.numel() > 1:
                flat["optimizer.state.%s.%s" % (n, k)] = v
    if world > 1:
        from torch.distributed._shard import sharded_tensor
        from torch.distributed._shard.sharding_spec import ChunkShardingSpec
        w = model.embed.weight.detach().to(torch.bfloat16)
        spec = ChunkShardingSpec(dim=0, placements=["rank:%d/cpu" % r for r in range(world)])
        st = sharded_tensor.empty(spec, *w.shape, dtype=torch.bfloat16)
        for shard in st.local_shards():
            lo = shard.metadata.shard_offsets[0]
            shard.tensor.copy_(w[lo:lo + shard.tensor.shape[0]])
        flat["sharded.embed.weight"] = st
    dcp.save_state_dict(flat, dcp.FileSystemWriter(os.path.join(out, "dcp")), no_dist=world == 1)

    if rank == 0:
        torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": STEPS}, os.path.join(out, "ckpt.pt"))
        want = {}
        for i, (n, p) in enumerate(model.named_parameters()):
            want["param." + n] = describe(p)
            want["grad." + n] = describe(grads[n])
            for k, v in opt.state[p].items():
                if torch.is_tensor(v) and v.numel() > 1:
                    want["%s.%s" % (k, n)] = describe(v)
        with open(os.path.join(out, "expected.json"), "w") as f:
            json.dump({"step": STEPS, "world": world, "params": names, "tensors": want}, f)
    if world > 1:
        dist.barrier()
        dist.destroy_process_group()


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    if "--ddp" in sys.argv[2:]:
        port = 29500 + os.getpid() % 400
        mp.spawn(train, args=(2, out, port), nprocs=2)
    else:
        train(0, 1, out, 0)


if __name__ == "__main__":
    main()
