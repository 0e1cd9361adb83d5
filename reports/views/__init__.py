"""One view per report kind: ``view(document) -> reports.view.View``, read from the prepared document."""
