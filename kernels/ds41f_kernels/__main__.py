import sys

from ds41f_kernels.cli import main

sys.exit(main())
