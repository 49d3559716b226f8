"""Wireless physics for federated learning over FDMA uplinks (numpy only)."""
