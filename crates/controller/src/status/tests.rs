//! The status model on plain values: exposures against a node that holds
//! them or not, and the text rendering.

use super::*;
