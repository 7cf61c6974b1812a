"""Lets PyTorch 1.13's torch.distributed._shard (its torch.distributed.checkpoint) import under
Python 3.11: Debian 12's python3-torch defines a dataclass field whose default, a
TensorProperties, Python 3.11 refuses as mutable ("use default_factory"). Import this module before
torch; it makes that one class hashable, as Python 3.10 and earlier let it be, and changes nothing
else. Newer PyTorch needs none of it.
"""

import dataclasses

_process_class = dataclasses._process_class


def _hashable_tensor_properties(cls, *args, **kwargs):
    cls = _process_class(cls, *args, **kwargs)
    if cls.__name__ == "TensorProperties" and cls.__hash__ is None:
        cls.__hash__ = object.__hash__
    return cls


dataclasses._process_class = _hashable_tensor_properties

import torch  # noqa: E402

try:
    import torch.distributed.checkpoint as dcp  # noqa: E402,F401
    from torch.distributed.checkpoint.metadata import (ChunkStorageMetadata, Metadata,  # noqa: E402,F401
                                                       MetadataIndex, TensorStorageMetadata)
    from torch.distributed.checkpoint.filesystem import _StorageInfo  # noqa: E402,F401
    try:
        from torch.distributed.checkpoint.metadata import TensorProperties  # noqa: E402,F401
    except ImportError:
        from torch.distributed._shard.sharded_tensor.metadata import TensorProperties  # noqa: E402,F401
except ImportError:  # PyTorch 1.13 keeps it under _shard
    import torch.distributed._shard.checkpoint as dcp  # noqa: E402,F401
    from torch.distributed._shard.checkpoint.metadata import (ChunkStorageMetadata, Metadata,  # noqa: E402,F401
                                                              MetadataIndex, TensorStorageMetadata)
    from torch.distributed._shard.checkpoint.filesystem import _StorageInfo  # noqa: E402,F401
    from torch.distributed._shard.sharded_tensor.metadata import TensorProperties  # noqa: E402,F401
