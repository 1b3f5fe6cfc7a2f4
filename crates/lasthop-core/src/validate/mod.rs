//! Validation against theory and ns-3: Bianchi's saturation model and the saturated scenarios of
//! `shared/anchors/ns3/`. The runners here build scenarios as data, so what is validated is exactly what
//! users run.

pub mod bianchi;
pub mod saturation;
