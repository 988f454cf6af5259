"""What longrun tells an operator about its runs: Prometheus metrics (`metrics`)."""
