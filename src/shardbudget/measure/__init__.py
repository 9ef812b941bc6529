"""Measurement: a torch.distributed collective benchmark and readers for benchmark logs."""
