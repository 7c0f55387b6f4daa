//! Event filters: whether an OVSDB update deserves a reconcile.
