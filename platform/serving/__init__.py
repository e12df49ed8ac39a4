"""Using a trained agent: personal API tokens and the OpenAI-compatible API at /v1."""
