"""What a lesson needs from the notebook frontend it was opened in (called by every lesson's install cell).

Google Colab renders only the standard ipywidgets until its custom widget manager is enabled
(``google.colab.output.enable_custom_widget_manager()``, colabtools#498), and lesson 02's explorer
needs it; figures go inline (``%matplotlib inline``). JupyterLab, Kaggle and a plain Python need
nothing, so this does nothing there.
"""
from __future__ import annotations

import sys


def setup_notebook() -> str:
    """Prepare the frontend; returns where this runs: ``"colab"``, ``"jupyter"`` or ``"python"``."""
    try:
        from IPython import get_ipython
    except ImportError:
        return "python"
    shell = get_ipython()
    if shell is None:
        return "python"
    if "google.colab" not in sys.modules:
        return "jupyter"
    from google.colab import output  # only importable on Colab

    output.enable_custom_widget_manager()
    shell.run_line_magic("matplotlib", "inline")
    return "colab"
