"""`python -m app <command>`: the `veil` command without the console script.

Worker processes are started this way rather than as `python -m app.cli`: multiprocessing
skips re-running a `__main__` module in each job process, whereas a main module named
`app.cli` is re-executed there — and, being preloaded by the forkserver, warned about by runpy
on every job."""

from app.cli import main

if __name__ == "__main__":
    main()
