"""``ember.ops``: namespaces of ops plugins declare with ``Library.define`` (``ember.ops.<namespace>.<name>``)."""
