"""Memory: what fills HBM at the peak and what to shrink, before or after an out-of-memory.

Analysers return data (dataclasses and DataFrames), never text; rendering is the CLI's job.

What a capture and a log say about memory (other modules of the package plan buffers and fixes):

* ``events``: the allocators' ``MemoryAllocation`` / ``MemoryDeallocation`` events of an XSpace
  capture (host plane), read columnar with the profile loader's decoder: ``read_memory_events``.
* ``timeline``: one timeline per allocator (bytes in use, heap, stack, free over time) and its peak,
  by xprof memory_profile's rules: ``allocator_timelines``.
* ``buffers``: the buffers live at a peak, merged and ranked (``peak_breakdown``), and xprof's own
  active-allocation table (``xprof_active_allocations``).

The out-of-memory texts XLA, libtpu and the runtimes print are read by the log layer (``tpudoctor.logs.oom``), the
one grammar ``memory`` and ``check --step 4`` share.
"""
