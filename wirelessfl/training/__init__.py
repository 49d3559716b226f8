"""Federated LoRA training with torch + peft (needs the ``train`` extra)."""
