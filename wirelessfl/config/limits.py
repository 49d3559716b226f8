"""Limits on the values a run allocates memory (or time) in proportion to, and the check of
option tables passed on as keyword arguments (``params``, ``uplink_params``)."""

from __future__ import annotations

from wirelessfl.config.schema import show
from wirelessfl.errors import ConfigError

# ---- limits on values a run allocates memory (or time) in proportion to --------------------
#: Most clients: every block of fading rounds makes one random generator per client (~1.2 KB
#: and ~20 us each), besides the (block_rounds, N) arrays below.
MAX_CLIENTS = 1_000_000
#: Most rounds: rounds.csv (~30 numbers a round) is read back whole when a run ends.
MAX_ROUNDS = 10_000_000
#: Largest r_max: the offline stage scores every rank 1..r_max and meta.json keeps the scores.
MAX_RANK = 65_536
#: Largest side of one adapted layer (d or l), and most adapted layers.
MAX_LAYER_SIDE = 1_000_000
MAX_LAYERS = 10_000
#: Most Ray training actors: each holds a copy of the frozen base model.
MAX_RAY_WORKERS = 4096

#: One fading block is n_clients x block_rounds values; each costs ~40 bytes at the peak of a
#: draw (complex128 coefficients, a float64 SNR, a temporary and the previous block's SNRs).
FADING_BYTES_PER_VALUE = 40
FADING_BLOCK_BUDGET = 4 * 2**30
#: Any level in dB (power, gain, noise, SNR) lies within +-MAX_DB: 10**(300/10) = 1e30 is far
#: past any radio, and keeps 10**(x/10) and the products of a few such factors finite.
MAX_DB = 300.0


def check_option_names(options: dict, key: str) -> None:
    """Option tables are passed on as keyword arguments: their keys must be Python names."""
    for name in options:
        if not name.isidentifier():
            raise ConfigError(
                f"{key}: option names are Python names (letters, digits and _, not starting with "
                f"a digit), got {show(name)}"
            )
