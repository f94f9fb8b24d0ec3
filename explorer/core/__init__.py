"""What every layer shares: user errors, limits, the machine, text as tokens, size checks, formatting."""
