"""``tpudoctor hang``: find the process a stuck job waits for, say where it stands, and what to do.

Layers, each a module with one job:

- ``discover``: which processes on this VM are the training job (device holders, else Python processes
  that loaded a framework; or ``--pid``).
- ``stacks``: every thread's stack of a process, taken with py-spy; failures mapped to what to do.
- ``procstat``: what the kernel says about a process (CPU time, state, how often its threads ran).
- ``progress``: the step counters in a job's logs, and whether a process moved between two samples.
- ``digest``: Megascale hang digests in logs.
- ``capture``: takes all of the above, twice, ``--interval`` apart (or reads it back from ``--dump-dir``).
- ``classify`` and ``rules/``: where each process stands (waiting in a collective, loading data, ...),
  one declarative rule class per kind of place, found through the ``tpudoctor.hang_rules`` entry points.
- ``analyze``: groups, the odd one out, the root cause and the decision, as a ``HangReport`` (data only).
- ``pod``: the same on every worker of a slice through gcloud ssh, merged into one report.

Renderers are in ``tpudoctor.reports.hang_*``.
"""
