"""Attention flow (Abnar & Zuidema 2020): each token's maximum flow to the input.

``attention_flow`` is the public function and the registered method
(``"flow"``); ``edges`` builds the layered attention graph that FlowView's path
drawing shares; the solver is private to this package.
"""

from attnwidget.methods.flow.flow import (
    FlowResult,
    attention_flow,
    attention_flow_result,
    flow_memory,
    flow_seconds,
)

__all__ = ["FlowResult", "attention_flow", "attention_flow_result", "flow_memory", "flow_seconds"]
