"""The result types the pipeline returns and the views consume.

:class:`Explanation` (one input: every method's scores and the attention
record) and :class:`GenerationExplanation` (one per generated token). Views
import them from here, never from :mod:`attnwidget.pipeline`.
"""

from attnwidget.results.explanation import Explanation
from attnwidget.results.generation import GenerationExplanation

__all__ = ["Explanation", "GenerationExplanation"]
