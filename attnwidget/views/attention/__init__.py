"""Attention views: HeadView, ModelView, NeuronView and the bertviz-compatible functions."""
