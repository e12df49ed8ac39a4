"""What every part of the platform leans on: health checks, object storage, bootstrap."""
