"""The one error users see: a line naming the file and the fix, exit status 2."""
from __future__ import annotations


class GuardError(Exception):
    """Something the user can fix. `str(err)` is the whole message: '<file>: <what>; <fix>'."""

    exit_code = 2
