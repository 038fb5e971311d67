"""The ReFrame perflog handlers clusterproof adds and the logging
configuration that lists them."""
