from tpudoctor.cli import run

run()
