"""Solvers for wireless federated LoRA: bound, TSFA offline search, Lyapunov online control."""
