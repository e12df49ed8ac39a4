"""Evaluation: run policies (echo, base, checkpoints, API models) on held-out questions and
compare answer score, golden-chunk recall, pass@k, search behaviour and latency."""
