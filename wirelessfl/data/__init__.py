"""Data for the federated LoRA runtime: data set loaders and client partitioners.

Needs the ``[train]`` extra (torch). ``load_dataset(name, seed=..., **options) -> TaskData``
and ``partition(name, labels, n_clients, seed=..., groups=..., **options) -> Partition``; the
registries ``DATASETS`` and ``PARTITIONERS`` list the names.
"""

from wirelessfl.data.assets import AssetNotFoundError, load_tokenizer, pkg_dir
from wirelessfl.data.datasets import DATASETS, ArrayDataset, TaskData, load_dataset
from wirelessfl.data.partition import PARTITIONERS, Partition, partition

__all__ = [
    "ArrayDataset",
    "TaskData",
    "DATASETS",
    "load_dataset",
    "Partition",
    "PARTITIONERS",
    "partition",
    "AssetNotFoundError",
    "load_tokenizer",
    "pkg_dir",
]
