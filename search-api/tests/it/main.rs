//! The facade's integration tests: one test binary (one link), one module
//! per area.

mod common;

mod collapse_prop;
mod confinement_prop;
mod facets;
mod highlights;
mod snapshot_prop;
mod suggest;
