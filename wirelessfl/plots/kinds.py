"""``wirelessfl plot --kind`` names and the figure function each one draws."""

from wirelessfl.plots.accuracy import accuracy_vs_round, accuracy_vs_time
from wirelessfl.plots.dynamics import cov_norm, queue_delay, sparsification
from wirelessfl.plots.energy import energy_overview
from wirelessfl.plots.offline import offline_bound
from wirelessfl.plots.shares import bandwidth_shares
from wirelessfl.plots.tradeoff import frontier

#: ``wirelessfl plot --kind`` name -> figure function
PLOTS = {
    "accuracy": accuracy_vs_round,
    "latency_accuracy": accuracy_vs_time,
    "frontier": frontier,
    "queue": queue_delay,
    "sparsification": sparsification,
    "offline": offline_bound,
    "cov": cov_norm,
    "shares": bandwidth_shares,
    "energy": energy_overview,
}
