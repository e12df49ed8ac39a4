"""The search agent's runtime: protocol, trajectory records, rollout engines, model loading."""
