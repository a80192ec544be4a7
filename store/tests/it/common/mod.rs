#[allow(dead_code)]
pub mod filter_gen;
#[allow(dead_code)]
pub mod filter_model;
#[allow(dead_code)]
pub mod model;
