"""A Celery worker that keeps a journal of the training steps it runs: every step the
trainer hands to the run's metric stream appends one line, `{"run", "step", "at"}` (`at` on the
wall clock), to the file named by SLEUTH_TEST_STEP_JOURNAL, before the stream writes anything.
A test reads it while a service is down (the database cannot say then), counts the steps
trained more than once, and times how soon training goes on after a restart. Each step
also lasts at least SLEUTH_TEST_STEP_SECONDS (a tiny model's step is faster than a
restart; a real one is far slower), so a restart lands in the middle of training.

Usage: python step_journal_worker.py -A config worker … (Celery's own arguments)."""

import json
import os
import sys
import time

from celery.signals import task_prerun


@task_prerun.connect(weak=False)
def _journal_steps(**kwargs) -> None:
    from runs import metric_stream  # Django is set up by the first task

    if getattr(metric_stream.MetricStream.add, "journaled", False):
        return
    add = metric_stream.MetricStream.add

    def journaled_add(self, record: dict, samples: list[dict]) -> None:
        line = {"run": self.run.pk, "step": record["step"], "at": time.time()}
        with open(os.environ["SLEUTH_TEST_STEP_JOURNAL"], "a") as journal:
            journal.write(json.dumps(line) + "\n")
        time.sleep(float(os.environ.get("SLEUTH_TEST_STEP_SECONDS", "0")))
        add(self, record, samples)

    journaled_add.journaled = True
    metric_stream.MetricStream.add = journaled_add


if __name__ == "__main__":
    from celery.__main__ import main

    sys.exit(main())
