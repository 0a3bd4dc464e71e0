"""Chinese (简体中文) for the messages of ``course_utils``: one module per source module, each a ``MESSAGES``
dict from the English template to the Chinese one, with the same ``{fields}``. The terms are the
glossary's (``notebooks/glossary.md``)."""
