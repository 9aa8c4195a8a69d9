"""A worker process of `explore.levels_ahead`: reads a pickled list of jobs on stdin, writes
each job's pickled (index, row) on stdout as it is done, and ends. Ctrl-C is its parent's to
handle (the parent kills it)."""

from __future__ import annotations

import pickle
import signal
import sys

from workbench.explore.levels_ahead import unkept_job


def main() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    jobs = pickle.load(sys.stdin.buffer)
    out = sys.stdout.buffer
    for job in jobs:
        pickle.dump(unkept_job(job), out)
        out.flush()


if __name__ == "__main__":
    main()
