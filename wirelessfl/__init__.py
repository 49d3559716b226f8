"""wirelessfl: co-simulator for federated LoRA fine-tuning over wireless networks."""

__version__ = "0.1.0"
