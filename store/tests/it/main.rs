//! The store's integration tests: one test binary (one link), one module
//! per area.

mod common;

mod api;
mod apply_each_prop;
mod consumers;
mod dictionary;
mod disabled;
mod durability;
mod filter_fuzz;
mod filter_prop;
mod filters;
mod increment;
mod index;
mod index_build;
mod index_long_values_prop;
mod keyword_blocks_prop;
mod keyword_prop;
mod model_prop;
mod repack;
mod row_source_prop;
mod rowkey_prop;
mod shared_prop;
mod threads_plain_prop;
mod threads_prop;
