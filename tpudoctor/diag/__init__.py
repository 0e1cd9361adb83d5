"""``tpudoctor diag -r 1..3``: levelled health tests of a VM's chips, measured with JAX, judged against the chip's
peers and the generation's published peaks.

The stages: ``measure`` gathers figures on the devices (once, with the sizes of the level: ``levels``),
``faults`` injects the faults tests need, ``expected`` says how many chips and devices a host should show, the
``rules`` judge the figures (pure logic, on the one rule base), and
``report`` assembles the ``DiagReport`` every renderer formats.
"""
