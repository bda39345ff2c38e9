"""Orchestration: run a model, capture it, compute the methods, return a result.

``explain`` (text models; images through ``image``, bare encoders through
``similarity``) and ``explain_generation`` (``generation``) sit above
``methods`` and below the views: they build the records in
:mod:`attnwidget.results`.
"""
