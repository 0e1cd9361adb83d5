from tpudoctor.cli import main

raise SystemExit(main())
