//! The one error type of queue parameters.

pub use crate::params::ParamError;
pub(crate) use crate::params::check;
