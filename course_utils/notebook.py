"""What a lesson needs from the notebook frontend it was opened in (called by every lesson's install cell).

Google Colab renders only the standard ipywidgets until its custom widget manager is enabled
(``google.colab.output.enable_custom_widget_manager()``, colabtools#498), and lesson 02's explorer
needs it; figures go inline (``%matplotlib inline``). JupyterLab, Kaggle and a plain Python need
nothing, so this does nothing there.
"""
from __future__ import annotations

import sys

from .i18n import set_language


def frontend() -> str:
    """Where this runs: ``"colab"``, ``"jupyter"`` (any other IPython kernel) or ``"python"``."""
    try:
        from IPython import get_ipython
    except ImportError:
        return "python"
    if get_ipython() is None:
        return "python"
    return "colab" if "google.colab" in sys.modules else "jupyter"


def setup_notebook(lang: str = "en") -> None:
    """Choose the language course_utils speaks (``"en"``, or ``"zh"`` in ``notebooks/zh/``) and
    prepare the frontend. On Colab: its custom widget manager (lesson 02's explorer needs it) and
    inline figures. Returns nothing, so the install cell that calls it last shows no output."""
    set_language(lang)
    if frontend() != "colab":
        return
    from IPython import get_ipython
    from google.colab import output  # only importable on Colab

    output.enable_custom_widget_manager()
    get_ipython().run_line_magic("matplotlib", "inline")
