"""torch.save of a small view writes the view's whole storage; saving its clone writes only the slice.

A 4 MiB float32 tensor is sliced to 1, 4, 16, ... elements. Each slice is saved with
torch.save, once as the view and once as view.clone(), into a temporary folder; the proof
measures each file. It also lists the zip archive torch.save writes (standard zipfile) to
find the storage record and compare its bytes with the whole storage's, saves a tensor together with a view of it to see the storage
written once, and loads that file back to check that the two tensors still share memory.
"""
import os
import tempfile
import zipfile

import matplotlib.pyplot as plt
import torch

N = 2**20  # float32 elements: 4 MiB
base = torch.rand(N)
storage_bytes = base.untyped_storage().nbytes()
SLICES = [4**k for k in range(11)]  # 1 .. 1,048,576 elements

with tempfile.TemporaryDirectory() as folder:
    def saved_bytes(obj, name):
        path = os.path.join(folder, name)
        torch.save(obj, path)
        return os.path.getsize(path)

    view_sizes, clone_sizes = [], []
    for k in SLICES:
        view_sizes.append(saved_bytes(base[:k], "view.pt"))
        clone_sizes.append(saved_bytes(base[:k].clone(), "clone.pt"))

    # What is inside: the records of the zip archive for a one-element view.
    path = os.path.join(folder, "one.pt")
    torch.save(base[:1], path)
    with zipfile.ZipFile(path) as archive:
        records = {info.filename.split("/", 1)[1]: info.file_size for info in archive.infolist()}
        storage_record = max((name for name in records if name.startswith("data/")), key=records.get)
        storage_record_bytes = records[storage_record]
        # The record holds the storage's own bytes, all of them, not only the slice's four.
        storage_record_is_storage = archive.read(archive.namelist()[0].split("/", 1)[0] + "/" + storage_record) \
            == bytes(base.untyped_storage())

    # A tensor and a view of it: one storage record, and sharing survives the round trip.
    pair_bytes = saved_bytes([base, base[10:20]], "pair.pt")
    alone_bytes = saved_bytes(base, "alone.pt")
    loaded = torch.load(os.path.join(folder, "pair.pt"))
    sharing_restored = loaded[1].untyped_storage().data_ptr() == loaded[0].untyped_storage().data_ptr()

pair_extra_bytes = pair_bytes - alone_bytes  # the view's metadata, not its storage again
one_view_kib = view_sizes[0] / 1024
one_clone_kib = clone_sizes[0] / 1024
view_to_clone_ratio = view_sizes[0] / clone_sizes[0]
view_size_flat = max(view_sizes) < 1.01 * min(view_sizes)
clone_grows = clone_sizes[-1] > 100 * clone_sizes[0]
slice_bytes_one = base[:1].numel() * base.element_size()
print(f"base: {N:,} float32 = {storage_bytes / 2**20:.0f} MiB of storage")
print(f"{'slice elements':>15}{'slice bytes':>13}{'view file':>12}{'clone file':>12}")
for k, v, c in zip(SLICES, view_sizes, clone_sizes):
    print(f"{k:>15,}{k * 4:>13,}{v:>12,}{c:>12,}")
print(f"inside torch.save(base[:1]): data.pkl {records['data.pkl']:,} B (the pickled metadata), "
      f"data/0 {storage_record_bytes:,} B, byte for byte the whole storage: {storage_record_is_storage}")
print(f"[base, base[10:20]] saved: {pair_bytes:,} B, base alone {alone_bytes:,} B; "
      f"loaded pair shares one storage: {sharing_restored}")

fig, ax = plt.subplots(figsize=(8, 4))
slice_bytes = [k * 4 for k in SLICES]
ax.plot(slice_bytes, view_sizes, "o-", color="C3", label="torch.save(base[:k])  (the view)")
ax.plot(slice_bytes, clone_sizes, "s-", color="C0", label="torch.save(base[:k].clone())")
ax.plot(slice_bytes, slice_bytes, ":", color="C7", label="the slice's own bytes")
ax.set_xscale("log", base=2)
ax.set_yscale("log", base=2)
ax.set_xlabel("bytes in the slice")
ax.set_ylabel("file size (bytes)")
ax.set_title(f"Saving a view writes its whole {storage_bytes // 2**20} MiB storage")
ax.legend(frameon=False, loc="lower right")
ax.grid(True, which="major", alpha=0.3)
fig.tight_layout()
plt.show()
