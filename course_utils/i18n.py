"""The language of what ``course_utils`` prints to a student: English, or Chinese for ``notebooks/zh/``.

Why one small catalogue and not ``gettext``: gettext reads compiled ``.mo`` files, which a wheel would
have to build and ship, while a Python dict is packaged, imported and tested like any other module.
The mechanism is gettext's all the same: the English text is the key (the *msgid*), so the English
never goes through a lookup and a message without a translation falls back to English.

- A message a student reads is written ``t("took {seconds:.1f} s", seconds=s)``: a literal English
  template with ``str.format`` fields, never an f-string (the catalogue could not find it).
- ``course_utils/locale/zh/*.py`` hold the Chinese, one ``MESSAGES`` dict per module, keyed by the
  English template (tests/test_i18n.py: every ``t(...)`` in the package has its translation with the
  same fields, and no translation is left whose English is gone).
- The lesson's setup call chooses: ``course_utils.setup_notebook("zh")`` in a Chinese lesson's install
  cell, ``"en"`` in an English one. It sets ``COURSE_LANG``, so the processes a lesson starts
  (``torchrun`` workers) speak the lesson's language too.
"""
from __future__ import annotations

import functools
import importlib
import os
import pkgutil

LANGUAGES = ("en", "zh")
ENV = "COURSE_LANG"


def set_language(lang: str) -> None:
    """Choose the language of every later message (``"en"`` or ``"zh"``)."""
    if lang not in LANGUAGES:
        raise ValueError(f"language must be one of {', '.join(map(repr, LANGUAGES))}, got {lang!r}")
    os.environ[ENV] = lang


def language() -> str:
    """The language chosen for this process: ``$COURSE_LANG`` when it names one, else English."""
    lang = os.environ.get(ENV, "en").strip().lower()
    return lang if lang in LANGUAGES else "en"


@functools.cache
def catalogue(lang: str) -> dict[str, str]:
    """Every translation into ``lang``, English template -> translated template (empty for English)."""
    if lang == "en":
        return {}
    package = importlib.import_module(f"course_utils.locale.{lang}")
    merged: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
        merged.update(importlib.import_module(f"{package.__name__}.{info.name}").MESSAGES)
    return merged


def t(msgid: str, /, **fields: object) -> str:
    """``msgid`` (an English ``str.format`` template) in this process's language, its fields filled in."""
    text = catalogue(language()).get(msgid, msgid)
    return text.format(**fields) if fields else text
