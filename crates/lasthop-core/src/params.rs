//! The one error type of component parameters (queues, congestion control, RTC, mechanisms).

/// A parameter out of its valid range. `field` names it as spelled in its params struct (e.g.
/// `"interval_us"`), so a scenario validator can prefix its own location.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct ParamError {
    pub field: &'static str,
    pub reason: &'static str,
}

impl ParamError {
    /// The error of a [`crate::queue::codel::CodelParams`] nested as a qdisc's `codel` table, named at
    /// its key there (`codel.interval_us`).
    pub(crate) fn in_codel(self) -> ParamError {
        let field = match self.field {
            // The one field `CodelParams::validate` names; a field it comes to name needs its arm here.
            "interval_us" => "codel.interval_us",
            other => other,
        };
        ParamError { field, ..self }
    }
}

/// `Err` naming `field` unless `ok`.
pub(crate) fn check(ok: bool, field: &'static str, reason: &'static str) -> Result<(), ParamError> {
    if ok {
        Ok(())
    } else {
        Err(ParamError { field, reason })
    }
}
