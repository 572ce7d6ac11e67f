"""An example service: a queue consumer done right (orders_good) and its bad twin (orders_bad)."""
