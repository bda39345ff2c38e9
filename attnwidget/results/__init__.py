"""The result types the pipeline returns and the views consume.

:class:`Explanation` (one input, every method's scores and the attention
record) and :class:`GenerationExplanation` (one per generated token).
"""
