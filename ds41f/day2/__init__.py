"""The day-2 commands (`ds41f status`, `logs`, `render`): read-only playbooks under playbooks/day2/, each a thin
layer over the modules and filters the stages use, and the lines they print."""
