"""``hub:`` data sets round-trip through a ``save_to_disk`` folder the test writes itself."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
hfds = pytest.importorskip("datasets")

from wirelessfl.data import load_dataset  # noqa: E402

pytestmark = pytest.mark.train


def _images(n, size, seed):
    from PIL import Image

    rng = np.random.default_rng(seed)
    return [
        Image.fromarray(rng.integers(0, 256, (size, size, 3), dtype=np.uint8)) for _ in range(n)
    ]


def test_hub_image_datasetdict_round_trip(tmp_path):
    features = hfds.Features(
        {"img": hfds.Image(), "fine_label": hfds.ClassLabel(names=["a", "b", "c", "d"])}
    )
    dd = hfds.DatasetDict(
        {
            "train": hfds.Dataset.from_dict(
                {"img": _images(12, 10, 0), "fine_label": [i % 4 for i in range(12)]}, features
            ),
            "test": hfds.Dataset.from_dict(
                {"img": _images(4, 10, 1), "fine_label": [0, 1, 2, 3]}, features
            ),
        }
    )
    dd.save_to_disk(str(tmp_path / "cifar_like"))
    d = load_dataset("hub:" + str(tmp_path / "cifar_like"), image_size=16)
    assert d.kind == "image" and d.n_classes == 4 and d.class_names == ["a", "b", "c", "d"]
    assert d.train.x.shape == (12, 3, 16, 16) and d.test.x.shape == (4, 3, 16, 16)
    assert d.train.y.tolist() == [i % 4 for i in range(12)]
    assert float(d.train.x.min()) >= -1.0 and float(d.train.x.max()) <= 1.0
    same_size = load_dataset("hub:" + str(tmp_path / "cifar_like"))
    assert same_size.train.x.shape == (12, 3, 10, 10)


def test_hub_array_images_without_test_split(tmp_path):
    rng = np.random.default_rng(0)
    ds = hfds.Dataset.from_dict(
        {
            "image": [rng.integers(0, 256, (8, 8), dtype=np.uint8) for _ in range(20)],
            "label": [i % 2 for i in range(20)],
        }
    )
    ds.save_to_disk(str(tmp_path / "grey"))
    d = load_dataset("hub:" + str(tmp_path / "grey"), test_fraction=0.25, seed=3)
    assert len(d.train) == 15 and len(d.test) == 5 and d.n_classes == 2
    assert d.train.x.shape[1:] == (3, 8, 8)


def test_hub_text_round_trip(tmp_path):
    ds = hfds.Dataset.from_dict(
        {
            "sentence": ["a fine film", "dull and long", "great acting", "a mess"] * 3,
            "label": [1, 0, 1, 0] * 3,
        }
    )
    ds.save_to_disk(str(tmp_path / "sst_like"))
    d = load_dataset("hub:" + str(tmp_path / "sst_like"), max_length=16, test_fraction=0.25)
    assert d.kind == "text" and d.n_classes == 2
    assert d.train.x.shape == (len(d.train), 16) and d.train.attention_mask is not None
    assert len(d.train) + len(d.test) == 12


def test_hub_errors(tmp_path):
    ds = hfds.Dataset.from_dict({"feature": [[1.0, 2.0]] * 4, "y": [0, 1, 0, 1]})
    ds.save_to_disk(str(tmp_path / "odd"))
    with pytest.raises(ValueError, match="label_column"):
        load_dataset("hub:" + str(tmp_path / "odd"))
    with pytest.raises(ValueError, match="image_column='pix' is not a column"):
        load_dataset("hub:" + str(tmp_path / "odd"), label_column="y", image_column="pix")
    with pytest.raises(ValueError, match="unknown option 'colour'"):
        load_dataset("hub:" + str(tmp_path / "odd"), colour=True)
