//! The node layer: observer, planner and applier.
