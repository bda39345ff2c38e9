"""What every view shares: the widget base, binary buffers, number formats,
saved pages and the attention stacks' wire format."""
