"""Translations of the messages ``course_utils`` prints, one subpackage per language (see ``course_utils.i18n``)."""
