"""FlowView: token-to-token paths (rollout, flow, LRP) drawn layer by layer."""
