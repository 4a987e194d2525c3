"""Private implementation modules of ember.nn.functional."""
