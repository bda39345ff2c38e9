"""AttentionMatrixView: one layer's attention as a zoomable matrix, for long inputs."""
