"""RL training of the search agent: cold-start SFT, group-relative advantages, policy losses, the loop."""
