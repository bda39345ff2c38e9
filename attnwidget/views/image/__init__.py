"""ImageView: patch maps drawn over the image, for Vision Transformers."""
