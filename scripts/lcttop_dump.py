"""Write a PyTorch training job's weights, gradients and optimizer states, every N steps, as BF16
safetensors checkpoints that `lcttop watch DIR` follows live (and `lcttop open` opens).

Add two lines to a training loop:

    from lcttop_dump import Dumper
    dumper = Dumper("runs/lct", model, optimizer, every=100).attach()
    ...                          # train as before: every 100th optimizer step is dumped
    dumper.close()               # at the end: waits for the last file

attach() hooks optimizer.step: just before it the gradients are taken, just after it the weights
and optimizer states (exp_avg, exp_avg_sq, momentum_buffer, ...). Without attach(), call
dumper.grads(step) after backward and dumper.states(step) after optimizer.step yourself.

What it costs the step: on a GPU every copy runs on a side stream and the training stream goes
on at once. The gradients are first copied on the device (BF16, a fraction of a millisecond),
which the training stream waits for, on the GPU, before zero_grad may clear them; then everything
goes to pinned host memory, device to host, beside the training; the training stream waits for
that only before the next optimizer step overwrites the weights and states, by when it is long
done. A thread writes the file. A dump that comes while two earlier ones are still being written
is skipped and counted, never waited for. The device copy of the gradients costs 2 bytes a
parameter of GPU memory on the steps that dump.

Files: DIR/lcttop-step00000100.safetensors, or under torch.distributed one file per rank,
DIR/lcttop-step00000100-rank00003-of-00008.safetensors, which lcttop merges into one checkpoint
once every rank's is there. Each is written to a hidden temporary name and renamed into place, so
a reader never sees part of one. Tensor names say what they are: param.<name>, grad.<name>,
exp_avg.<name>, exp_avg_sq.<name>, momentum_buffer.<name>. Floating-point values are written as
BF16 (values of other float types are rounded to BF16); integer and one-element states (Adam's
step counter) are left out.

Sharding: under DDP every rank holds the whole model, so the ranks split the parameters, each
writing about as many bytes (the largest parameter first, each to the rank with the fewest bytes
so far; together they write each once); under FSDP (a DTensor parameter, or a model wrapped in
FullyShardedDataParallel) each rank writes its own shard of every parameter, named
<kind>.<name>.shard<r>. shard="all" makes every rank write everything.
"""

import json
import os
import queue
import struct
import threading

import torch

_FORMAT = "lcttop-dump/1"


class Dumper:
    def __init__(self, out_dir, model, optimizer, every=100, shard="auto", side_stream=True):
        if every < 1:
            raise ValueError("every must be at least 1")
        self.out_dir = out_dir
        self.model = model
        self.optimizer = optimizer
        self.every = every
        os.makedirs(out_dir, exist_ok=True)
        dist = torch.distributed
        self.rank, self.world = 0, 1
        if dist.is_available() and dist.is_initialized():
            self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.names = {}
        for i, (name, p) in enumerate(model.named_parameters()):
            self.names[p] = (i, name)
        self.mode = self._shard_mode(shard)
        self._owner = self._split() if self.mode == "split" else {}
        self.step = 0  # optimizer steps seen by the hooks
        self.written, self.skipped = 0, 0
        self.errors = []
        self._cuda = side_stream and any(p.is_cuda for p in model.parameters())
        self._side = torch.cuda.Stream() if self._cuda else None
        self._pending_grads = None  # event the training stream waits on before zero_grad
        self._pending_states = None  # event it waits on before the next optimizer step
        self._grads = None  # (step, [(name, device copy)]) until states() writes them with the rest
        self._free = queue.Queue()  # host buffers not being written
        self._made = 0  # host buffers allocated, two at most
        self._made_lock = threading.Lock()
        self._jobs = queue.Queue()
        self._writer = threading.Thread(target=self._write_loop, name="lcttop-dump", daemon=True)
        self._writer.start()
        self._unhook = None

    # Which tensors this rank writes.

    def _shard_mode(self, shard):
        if shard != "auto":
            if shard not in ("all", "split", "local"):
                raise ValueError("shard must be auto, all, split or local")
            return shard
        fsdp = "FullyShardedDataParallel" in type(self.model).__name__ or any(
            type(p).__name__ == "DTensor" for p in self.model.parameters())
        if fsdp:
            return "local"
        return "split" if self.world > 1 else "all"

    def _split(self):
        """Which rank writes each parameter under DDP: the largest first, each to the rank with
        the fewest bytes so far (every rank works out the same)."""
        load, owner = [0] * self.world, {}
        for p, _ in sorted(self.names.items(), key=lambda item: (-item[0].numel(), item[1][0])):
            r = min(range(self.world), key=lambda r: (load[r], r))
            owner[p] = r
            load[r] += p.numel()
        return owner

    def _mine(self, p):
        return self.mode != "split" or self._owner[p] == self.rank

    def _local(self, t):
        if type(t).__name__ == "DTensor":
            t = t.to_local()
        return t.detach()

    def _label(self, kind, p):
        name = self.names[p][1]
        if self.mode == "local" and self.world > 1:
            name += ".shard%d" % self.rank
        return kind + "." + name

    # Hooks.

    def attach(self):
        """Hooks optimizer.step; returns self."""
        opt = self.optimizer
        if hasattr(opt, "register_step_pre_hook"):
            pre = opt.register_step_pre_hook(lambda *_: self._before_step())
            post = opt.register_step_post_hook(lambda *_: self._after_step())
            self._unhook = lambda: (pre.remove(), post.remove())
        else:  # PyTorch before 2.0: wrap the method
            step = opt.step

            def wrapped(*args, **kwargs):
                self._before_step()
                out = step(*args, **kwargs)
                self._after_step()
                return out

            opt.step = wrapped
            self._unhook = lambda: setattr(opt, "step", step)
        return self

    def _before_step(self):
        if self._pending_states is not None:
            torch.cuda.current_stream().wait_event(self._pending_states)
            self._pending_states = None
        if (self.step + 1) % self.every == 0:
            self.grads(self.step + 1)

    def _after_step(self):
        self.step += 1
        if self.step == 1 and self._cuda:
            # The optimizer states exist now: pin the host buffers off the training thread.
            threading.Thread(target=self._prepare, args=(self._dump_bytes(),), daemon=True).start()
        if self._pending_grads is not None:
            # zero_grad comes next: it must not clear what is still being copied.
            torch.cuda.current_stream().wait_event(self._pending_grads)
            self._pending_grads = None
        if self.step % self.every == 0:
            self.states(self.step)

    # Dumps.

    def grads(self, step):
        """Snapshots the gradients of `step` (call after backward, before the optimizer step):
        on a GPU a device-side BF16 copy on the side stream, which zero_grad then waits for."""
        tensors = [(self._label("grad", p), self._local(p.grad)) for p in self.names
                   if self._mine(p) and p.grad is not None]
        if not tensors:
            return
        if self._cuda:
            self._side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(self._side):
                tensors = [(name, t.to(torch.bfloat16, copy=True)) for name, t in tensors]
                event = torch.cuda.Event()
                event.record(self._side)
            self._pending_grads = event
        else:
            tensors = [(name, t.to(torch.bfloat16, copy=True)) for name, t in tensors]
        self._grads = (step, tensors)

    def states(self, step):
        """Copies the weights and optimizer states after optimizer step `step` and writes them,
        with the gradients grads() took for the same step, to one file."""
        grads = {}
        if self._grads is not None and self._grads[0] == step:
            grads = dict(self._grads[1])
        self._grads = None
        tensors = []  # each parameter's weight, gradient and states together
        for p in self.names:
            if not self._mine(p):
                continue
            tensors.append((self._label("param", p), self._local(p)))
            if self._label("grad", p) in grads:
                tensors.append((self._label("grad", p), grads[self._label("grad", p)]))
            for key, value in dumped_states(self.optimizer.state.get(p, {})):
                tensors.append((self._label(key, p), self._local(value)))
        self._stage(step, tensors)

    def _dump_bytes(self):
        n = 0
        for p in self.names:
            if self._mine(p):
                n += 2 * self._local(p).numel()  # weight and gradient
                for _, value in dumped_states(self.optimizer.state.get(p, {})):
                    n += self._local(value).numel()
        return 2 * n

    def _new_buffer(self, nbytes):
        """A host buffer, unless two exist already."""
        with self._made_lock:
            if self._made >= 2:
                return None
            self._made += 1
        return torch.empty(nbytes, dtype=torch.uint8, pin_memory=self._cuda)

    def _prepare(self, nbytes):
        for _ in range(2):
            buf = self._new_buffer(nbytes)
            if buf is not None:
                self._free.put(buf)

    def _stage(self, step, tensors):
        sizes = [2 * t.numel() for _, t in tensors]
        total = sum(sizes)
        try:
            buf = self._free.get_nowait()
        except queue.Empty:
            buf = self._new_buffer(total)
            if buf is None:
                self.skipped += 1  # both buffers are still being written: skip rather than wait
                return
        if buf.numel() < total:
            buf = torch.empty(total, dtype=torch.uint8, pin_memory=self._cuda)
        header, off = {}, 0
        views = []
        for (name, t), n in zip(tensors, sizes):
            header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [off, off + n]}
            views.append((buf[off:off + n].view(torch.bfloat16), t))
            off += n
        event = None
        if self._cuda:
            self._side.wait_stream(torch.cuda.current_stream())  # the values as the step left them
            with torch.cuda.stream(self._side):
                for dst, src in views:
                    dst.copy_(src.reshape(-1), non_blocking=True)
                    if src.is_cuda:
                        src.record_stream(self._side)  # not reused while the copy reads it
                event = torch.cuda.Event()
                event.record(self._side)
            self._pending_states = event
        else:
            for dst, src in views:
                dst.copy_(src.reshape(-1))
        header["__metadata__"] = {"format": _FORMAT, "step": str(step), "rank": str(self.rank),
                                  "world": str(self.world)}
        self._jobs.put((step, header, buf, total, event))

    def _path(self, step):
        name = "lcttop-step%08d" % step
        if self.world > 1:
            name += "-rank%05d-of-%05d" % (self.rank, self.world)
        return os.path.join(self.out_dir, name + ".safetensors")

    def _write_loop(self):
        while True:
            job = self._jobs.get()
            if job is None:
                return
            step, header, buf, total, event = job
            try:
                if event is not None:
                    event.synchronize()
                _write_safetensors(self._path(step), header, buf[:total])
                self.written += 1
            except Exception as e:  # a full disk must not stop the training
                self.errors.append("step %d: %s" % (step, e))
            finally:
                self._free.put(buf)

    def close(self):
        """Waits for the files queued and removes the hooks."""
        if self._unhook is not None:
            self._unhook()
            self._unhook = None
        self._jobs.put(None)
        self._writer.join()
        if self._pending_states is not None:
            torch.cuda.current_stream().wait_event(self._pending_states)
        return self


def dumped_states(state):
    """What a dump holds of one parameter's optimizer state (a dict, optimizer.state[p]), as
    [(key, tensor)]: the floating-point tensors of more than one element (not Adam's step)."""
    return [(key, value) for key, value in state.items()
            if torch.is_tensor(value) and value.is_floating_point() and value.numel() > 1]


def write_bf16(path, tensors, metadata):
    """Writes [(name, tensor)] as a BF16 safetensors file the way a dump is written: other float
    types rounded to BF16, through a hidden temporary name, synced, then renamed."""
    header, parts, off = {}, [], 0
    for name, t in tensors:
        flat = t.detach().to("cpu", torch.bfloat16).contiguous().reshape(-1)
        header[name] = {"dtype": "BF16", "shape": list(t.shape), "data_offsets": [off, off + 2 * flat.numel()]}
        parts.append(flat)
        off += 2 * flat.numel()
    header["__metadata__"] = dict(metadata)
    data = torch.cat(parts).view(torch.uint8) if parts else torch.empty(0, dtype=torch.uint8)
    _write_safetensors(path, header, data)


def _write_safetensors(path, header, data):
    """Writes a safetensors file through a hidden temporary name, synced, then renamed."""
    js = json.dumps(header, separators=(",", ":")).encode()
    js += b" " * (-len(js) % 8)
    tmp = os.path.join(os.path.dirname(path), ".%s.tmp-%d" % (os.path.basename(path), os.getpid()))
    try:
        with open(tmp, "wb") as f:
            f.write(struct.pack("<Q", len(js)))
            f.write(js)
            f.write(memoryview(data.numpy()))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.remove(tmp)
        except OSError:
            pass
        raise
