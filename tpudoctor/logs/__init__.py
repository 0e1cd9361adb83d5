"""The one log layer under every log reader (log diagnosis, ``hang``, ``goodput``).

- ``sources``: files, ``.gz``, folders, standard input, FIFOs; sniffed (text, empty, binary) and read as bounded lines;
- ``prefixes``: colours, redrawn progress bars, ``kubectl --prefix``, launchers' and viewers' wrappers taken off;
- ``clock``: the one timestamp reader, with one zone rule (``--tz``, UTC by default) and one year rule;
- ``steps``: the one step-line grammar; the frameworks' forms are data (``step_forms.toml``);
- ``oom``: the one grammar of out-of-memory texts (XLA's, libtpu's, the runtimes' and TensorFlow's listings), read by
  ``memory`` and ``check --step 4`` alike; ``sizes``: the one reader of the byte sizes they print.

A reader built on it gets the same time and the same fields for a line as every other reader.
"""
