"""`python -m prm_lessons.config [snakemake arguments]`: the config files of that command line read strictly
before Snakemake parses them (prm_lessons.config.load.main); exit 2 with one line naming the file."""
from .load import main

raise SystemExit(main())
