from mirage.cli import main

raise SystemExit(main())
