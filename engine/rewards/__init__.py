"""Rewards for RL runs: an answer judge (API or offline) and separately logged components
(correctness, conciseness, golden-chunk recall, format; optional calibration and novelty)."""
