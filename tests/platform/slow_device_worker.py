"""A Celery worker on a slow device: every decoding step of the rollout engine takes
SLOW_TOKEN_SECONDS longer (a large model on a busy accelerator), so a training step lasts
long enough to cancel in the middle of it. The first decoding step touches the file named
by SLEUTH_TEST_DECODING_MARKER, so a test knows a step is under way.

Usage: python slow_device_worker.py -A config worker … (Celery's own arguments)."""

import os
import sys
import time
from pathlib import Path

from engine.agent import hf_engine

SLOW_TOKEN_SECONDS = 1.0
_sample = hf_engine._sample


def slow_sample(*args, **kwargs):
    Path(os.environ["SLEUTH_TEST_DECODING_MARKER"]).touch()
    time.sleep(SLOW_TOKEN_SECONDS)
    return _sample(*args, **kwargs)


hf_engine._sample = slow_sample

if __name__ == "__main__":
    from celery.__main__ import main

    sys.exit(main())
