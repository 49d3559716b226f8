"""Differential privacy (docs/privacy.md): the clip + noise stage on the shared updates
(:mod:`~wirelessfl.privacy.stage`), adaptive clipping (:mod:`~wirelessfl.privacy.adaptive`),
the accounting of epsilon with Opacus's accountants (:mod:`~wirelessfl.privacy.accounting`)
and sample-level DP-SGD (:mod:`~wirelessfl.privacy.dp_sgd`)."""
