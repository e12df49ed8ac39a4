"""Runs: training runs of a project, their events, metrics, sample trajectories and checkpoints."""
