"""Settings per environment: `local` (default), `test`, `production`. All read the environment."""
