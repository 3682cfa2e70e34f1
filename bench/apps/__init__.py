"""The three apps of the Spark pipeline (word count, self-join, Naive Bayes) and their references.

Imported as ``skewbench.bench.apps``; :func:`make_app` builds one by name.
"""

from skewbench.bench.apps.base import APPS, App, make_app, stream_rows
from skewbench.bench.apps import naivebayes, selfjoin, wordcount  # noqa: F401,E402 (register)

__all__ = ["APPS", "App", "make_app", "stream_rows"]
