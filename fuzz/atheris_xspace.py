"""Coverage-guided fuzzing of the XSpace loader: python fuzz/atheris_xspace.py CORPUS_DIR... -runs=N"""

import atheris
from _harness import run

with atheris.instrument_imports():
    from tpudoctor.profile.xspace import decode_host

if __name__ == "__main__":
    run(lambda data: decode_host(data, hostname="fuzz", source="fuzz.xplane.pb"))
