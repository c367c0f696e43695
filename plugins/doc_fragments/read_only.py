"""The attributes of a module that only reads: one wording for all of them (a module may still say in its own
attributes what its check mode reads; its entry replaces the fragment's)."""


class ModuleDocFragment:
    DOCUMENTATION = r"""
attributes:
  check_mode:
    support: full
    description: Reads only; the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing.
  idempotent:
    support: full
    description: Reads only.
"""
