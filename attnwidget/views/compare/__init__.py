"""CompareView: every method on one input (a :class:`~attnwidget.Comparison`)."""
