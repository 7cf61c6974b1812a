"""Writes the PyTorch checkpoints codec/torchfile's tests read (testdata/), with the bytes each
tensor holds beside them (a .json of name -> dtype, shape, zlib CRC-32 of the row-major bytes):

    /usr/bin/python3 scripts/torch_fixtures.py codec/torchfile/testdata

- adam.pt: torch.save of {"model": ..., "optimizer": Adam's state_dict, "step": 3} (the default
  pickle protocol, 2); proto5.pt: the same through pickle protocol 5; view.pt: a transposed view
  and two tensors sharing a storage; malicious.pt: a torch.save zip whose pickle asks for
  os.system; dcp/: a torch.distributed.checkpoint folder of one tensor per item, and sharded/: one
  whose tensor is two chunks (rows 0-2 and 3-5), as two ranks of a sharded model write it.
"""

import io
import json
import os
import sys
import zipfile
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_compat import (ChunkStorageMetadata, Metadata, MetadataIndex, TensorProperties,  # noqa: E402
                          TensorStorageMetadata, _StorageInfo, dcp)
import torch  # noqa: E402


def crc(t):
    t = t.detach().contiguous().reshape(-1)
    return zlib.crc32(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")


def describe(named):
    dt = {torch.bfloat16: "BF16", torch.float32: "F32", torch.int64: "I64"}
    return {n: {"dtype": dt[t.dtype], "shape": list(t.shape), "crc32": crc(t)} for n, t in named.items()}


def model_and_optimizer():
    torch.manual_seed(1)
    m = torch.nn.Sequential(torch.nn.Linear(16, 24), torch.nn.LayerNorm(24), torch.nn.Linear(24, 8)).to(torch.bfloat16)
    opt = torch.optim.Adam(m.parameters(), lr=1e-2)
    for _ in range(3):
        m(torch.randn(4, 16, dtype=torch.bfloat16)).float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    return m, opt


def expected(m, opt):
    names = [n for n, _ in m.named_parameters()]
    want = {"model." + n: t for n, t in m.state_dict().items()}
    for i, p in enumerate(m.parameters()):
        for k, v in opt.state[p].items():
            want["optimizer.state.%s.%s" % (names[i], k)] = v
    return describe(want)


def main(out):
    os.makedirs(out, exist_ok=True)
    m, opt = model_and_optimizer()
    ck = {"model": m.state_dict(), "optimizer": opt.state_dict(), "step": 3}
    torch.save(ck, os.path.join(out, "adam.pt"))
    torch.save(ck, os.path.join(out, "proto5.pt"), pickle_protocol=5)
    json.dump(expected(m, opt), open(os.path.join(out, "adam.json"), "w"), indent=1, sort_keys=True)

    base = torch.arange(48, dtype=torch.float32).reshape(6, 8).to(torch.bfloat16)
    views = {"t": base.t(), "rows": base[2:4], "base": base}
    torch.save(views, os.path.join(out, "view.pt"))
    json.dump(describe(views), open(os.path.join(out, "view.json"), "w"), indent=1, sort_keys=True)

    with zipfile.ZipFile(os.path.join(out, "malicious.pt"), "w", zipfile.ZIP_STORED) as z:
        z.writestr("archive/data.pkl", b"\x80\x02cos\nsystem\nq\x00X\x0f\x00\x00\x00touch PWNED.txtq\x01\x85q\x02Rq\x03.")
        z.writestr("archive/version", b"3\n")

    flat = {"w": torch.randn(6, 8).to(torch.bfloat16), "b": torch.randn(8).to(torch.bfloat16)}
    dcp.save_state_dict(flat, dcp.FileSystemWriter(os.path.join(out, "dcp")), no_dist=True)
    json.dump(describe(flat), open(os.path.join(out, "dcp.json"), "w"), indent=1, sort_keys=True)

    # Two chunks of one tensor, each a torch.save item of its own .distcp file, indexed as
    # FileSystemWriter indexes them.
    sharded = os.path.join(out, "sharded")
    os.makedirs(sharded, exist_ok=True)
    whole = torch.randn(6, 8).to(torch.bfloat16)
    chunks, storage = [], {}
    for r, (lo, hi) in enumerate([(0, 3), (3, 6)]):
        name = "__%d_0.distcp" % r
        buf = io.BytesIO()
        buf.write(b"\0" * 5)  # an item need not start the file
        at = buf.tell()
        torch.save(whole[lo:hi].clone(), buf)
        open(os.path.join(sharded, name), "wb").write(buf.getvalue())
        chunks.append(ChunkStorageMetadata(offsets=torch.Size([lo, 0]), sizes=torch.Size([hi - lo, 8])))
        storage[MetadataIndex("w", [lo, 0])] = _StorageInfo(name, at, buf.tell() - at)
    md = Metadata(state_dict_metadata={"w": TensorStorageMetadata(TensorProperties(dtype=torch.bfloat16), torch.Size([6, 8]), chunks)},
                  storage_data=storage)
    import pickle
    with open(os.path.join(sharded, ".metadata"), "wb") as f:
        pickle.dump(md, f)
    # PyTorch itself reads it back as the whole tensor.
    back = {"w": torch.zeros(6, 8, dtype=torch.bfloat16)}
    dcp.load_state_dict(back, dcp.FileSystemReader(sharded), no_dist=True)
    assert torch.equal(back["w"], whole)
    json.dump(describe({"w": whole}), open(os.path.join(out, "sharded.json"), "w"), indent=1, sort_keys=True)


if __name__ == "__main__":
    main(sys.argv[1])
