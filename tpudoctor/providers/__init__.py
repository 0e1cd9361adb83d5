"""Built-in fact providers. Every ``FactProvider`` subclass in this package is registered."""
