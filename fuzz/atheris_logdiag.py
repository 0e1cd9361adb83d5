"""Coverage-guided fuzzing of the log diagnosis: python fuzz/atheris_logdiag.py CORPUS_DIR... -runs=N"""

import atheris
from _harness import run

with atheris.instrument_imports():
    from tpudoctor.logdiag import diagnose_text

if __name__ == "__main__":
    run(lambda data: diagnose_text(data.decode("utf-8", errors="replace"), source="fuzz.log"))
