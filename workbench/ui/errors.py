"""Show WorkbenchError in notebooks as one line (name of the thing and the rule), no traceback."""

from __future__ import annotations

import html

from workbench.errors import WorkbenchError


def error_html(exc: Exception) -> str:
    """A one-line error message for a widget's HTML status field."""
    return f"<span style='color:#b00'>{html.escape(str(exc))}</span>"


def _show(shell, etype, value, tb, tb_offset=None) -> None:
    print(f"workbench error: {value}")


def quiet_errors() -> bool:
    """In IPython/Jupyter, print bad-input errors as one line instead of a traceback.

    Returns True when installed (False outside IPython). Other exceptions keep tracebacks."""
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with the notebooks extra
        return False
    shell = get_ipython()
    if shell is None:
        return False
    shell.set_custom_exc((WorkbenchError,), _show)
    return True
