"""Job streams: Poisson arrivals with deadline (beta) and size distributions, and trace replay."""
