"""`python -m kubeletapi`: same as the `kubeletapi` console script."""

from kubeletapi.cli import main

raise SystemExit(main())
