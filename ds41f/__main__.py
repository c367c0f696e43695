import sys

from ds41f.cli import main

sys.exit(main())
