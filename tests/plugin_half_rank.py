"""A plug-in file for the ``--plugin`` tests: registers ``tests/plugin_algorithm.py``'s
algorithm as ``half_rank_personal`` (it imports the module beside it: a plug-in file's folder
is on ``sys.path``)."""

from __future__ import annotations

from plugin_algorithm import HalfRankPersonalHead

from wirelessfl.registries import ALGORITHMS

ALGORITHMS.register("half_rank_personal", HalfRankPersonalHead)
