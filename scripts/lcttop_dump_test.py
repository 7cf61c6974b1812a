"""Tests of lcttop_dump.py on the CPU (torch.distributed's gloo for the ranks):

    python3 -m unittest scripts/lcttop_dump_test.py

They skip where PyTorch is not installed. The GPU path (side stream, pinned memory, events) runs
in scripts/dump_cost.sh on a GPU machine.
"""

import json
import os
import shutil
import socket
import struct
import sys
import tempfile
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
    import torch.distributed as dist
    import torch.multiprocessing as mp
    import torch.nn as nn
except ImportError:
    torch = None


def read_safetensors(path):
    """Returns {name: int16 tensor of the BF16 bit patterns} and the metadata."""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack("<Q", b[:8])[0]
    header = json.loads(b[8:8 + n])
    meta = header.pop("__metadata__", {})
    data = b[8 + n:]
    out = {}
    for name, e in header.items():
        assert e["dtype"] == "BF16", (name, e["dtype"])
        lo, hi = e["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[lo:hi]), dtype=torch.int16).reshape(e["shape"])
    return out, meta


def bits(t):
    return t.detach().to(torch.bfloat16).contiguous().view(torch.int16).clone()


def free_port():
    """A port no one listens on now (the ranks meet there)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def model():
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(64, 96), nn.GELU(), nn.Linear(96, 64)).to(torch.bfloat16)


class GatedWriter:
    """Holds lcttop_dump's writer thread before each file until the test lets it through, so
    that when a dump finds the earlier ones written is the test's choice, not the disk's."""

    def __enter__(self):
        import lcttop_dump
        self.module, self.write = lcttop_dump, lcttop_dump._write_safetensors
        self.go, self.done = threading.Semaphore(0), threading.Semaphore(0)

        def gated(*args):
            self.go.acquire()
            try:
                return self.write(*args)
            finally:
                self.done.release()

        lcttop_dump._write_safetensors = gated
        return self

    def let_one_through(self):
        """Lets the writer write one file and waits until it is written."""
        self.go.release()
        if not self.done.acquire(timeout=60):
            raise AssertionError("the writer wrote no file within 60 s")

    def __exit__(self, *exc):
        self.go.release(1000)  # whatever is left (close() after a failure) goes through
        self.module._write_safetensors = self.write


@unittest.skipIf(torch is None, "PyTorch is not installed")
class DumperTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def train(self, d, m, opt, steps, after_dump=None):
        """Trains `steps` more steps; returns {step: {name: bits}} of what each dumped step held."""
        want = {}
        for _ in range(steps):
            step = d.step + 1
            m(torch.randn(8, 64, dtype=torch.bfloat16)).float().pow(2).mean().backward()
            grads = {n: bits(p.grad) for n, p in m.named_parameters()}
            opt.step()
            if step % d.every == 0:
                w = {"grad." + n: g for n, g in grads.items()}
                for n, p in m.named_parameters():
                    w["param." + n] = bits(p)
                    for k, v in opt.state[p].items():
                        if v.numel() > 1:
                            w[k + "." + n] = bits(v)
                want[step] = w
                if after_dump is not None:
                    after_dump()
            opt.zero_grad(set_to_none=True)
        return want

    def check_files(self, want):
        self.assertEqual(sorted(os.listdir(self.dir)),
                         ["lcttop-step%08d.safetensors" % s for s in sorted(want)])  # nothing temporary left
        for step, w in want.items():
            got, meta = read_safetensors(os.path.join(self.dir, "lcttop-step%08d.safetensors" % step))
            self.assertEqual(meta["step"], str(step))
            self.assertEqual(sorted(got), sorted(w))
            for name in w:
                self.assertTrue(torch.equal(got[name], w[name]), "step %d: %s differs" % (step, name))

    def test_every_step_holds_what_the_step_had(self):
        from lcttop_dump import Dumper
        m = model()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        with GatedWriter() as gate:
            d = Dumper(self.dir, m, opt, every=2).attach()
            # Each file is written before the next dump comes, as when the disk keeps up.
            want = self.train(d, m, opt, 6, after_dump=gate.let_one_through)
            d.close()
        self.assertEqual((d.written, d.skipped, d.errors), (3, 0, []))
        self.check_files(want)

    def test_a_dump_is_skipped_while_two_are_being_written(self):
        from lcttop_dump import Dumper
        m = model()
        opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
        with GatedWriter() as gate:
            d = Dumper(self.dir, m, opt, every=2).attach()
            # The disk holds up steps 2 and 4: step 6 finds both buffers taken and is skipped,
            # without touching what they hold; once they are written, step 8 is dumped.
            want = self.train(d, m, opt, 6)
            self.assertEqual((d.written, d.skipped), (0, 1))
            del want[6]
            gate.let_one_through()
            gate.let_one_through()
            want.update(self.train(d, m, opt, 2, after_dump=gate.let_one_through))
            d.close()
        self.assertEqual((d.written, d.skipped, d.errors), (3, 1, []))
        self.check_files(want)

    def test_ranks_split_the_parameters(self):
        port = free_port()
        mp.spawn(_rank, args=(2, self.dir, port), nprocs=2)
        names, written = {}, [0, 0]
        for r in range(2):
            got, meta = read_safetensors(os.path.join(self.dir, "lcttop-step00000002-rank%05d-of-00002.safetensors" % r))
            self.assertEqual(meta["world"], "2")
            for n, t in got.items():
                self.assertNotIn(n, names, "%s written by two ranks" % n)
                names[n] = r
                written[r] += t.numel()
        params = dict(model().named_parameters())
        self.assertEqual(sorted(n for n in names if n.startswith("param.")), sorted("param." + n for n in params))
        self.assertEqual(len([n for n in names if n.startswith("momentum_buffer.")]), len(params))
        # Each rank writes about as much: the two differ by less than the largest parameter's share.
        largest = 3 * max(p.numel() for p in params.values())  # its weight, gradient and momentum
        self.assertLess(abs(written[0] - written[1]), largest, "the ranks wrote %s values" % written)


def _rank(rank, world, out, port):
    from lcttop_dump import Dumper
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    m = model().float()
    ddp = nn.parallel.DistributedDataParallel(m)
    opt = torch.optim.SGD(ddp.parameters(), lr=1e-2, momentum=0.9)
    d = Dumper(out, m, opt, every=2).attach()
    for _ in range(2):
        ddp(torch.randn(4, 64)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    d.close()
    dist.destroy_process_group()


if __name__ == "__main__":
    unittest.main()
