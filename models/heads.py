"""What every zoo model ends in: logits over a few sentence classes."""

NUM_CLASSES = 4
