"""RL training of the search agent: cold-start SFT, group advantages, policy losses, the loop."""
