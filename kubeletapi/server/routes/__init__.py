"""One module per endpoint family; each exposes a router factory taking what it needs."""
