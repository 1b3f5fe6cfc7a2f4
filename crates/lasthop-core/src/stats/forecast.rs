//! How far a mechanism's delay forecasts were from the delays packets then saw (Zhuge's Fortune Teller,
//! `zhuge.md`'s accuracy claim), by actual-delay bucket, in memory that stays bounded however long the
//! run: per bucket the absolute errors go into [`Samples`] (exact up to [`super::EXACT_SAMPLES`]
//! packets, then within 0.1 %), the signed errors into a running sum.

use super::Samples;

/// Bucket edges of the actual delay, ms; the last bucket is open.
const EDGES_MS: [f64; 10] = [0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, f64::INFINITY];
/// Every packet under this actual delay also counts in one row of its own.
const UNDER_MS: f64 = 64.0;

#[derive(Debug, Clone, Default)]
struct Bucket {
    abs_ns: Samples,
    /// Sum of the signed errors in ms, in arrival order.
    sum_ms: f64,
}

impl Bucket {
    fn push(&mut self, actual_ns: u64, forecast_ns: u64) {
        self.abs_ns.push(actual_ns.abs_diff(forecast_ns));
        self.sum_ms += (forecast_ns as f64 - actual_ns as f64) * 1e-6;
    }

    fn row(&self, from_ms: f64, to_ms: f64) -> Option<serde_json::Value> {
        if self.abs_ns.is_empty() {
            return None;
        }
        let mut abs = self.abs_ns.clone();
        let mut q = |p: f64| abs.percentile(p).map(|ns| ns as f64 * 1e-6);
        let (median, p90) = (q(50.0), q(90.0));
        Some(serde_json::json!({
            "actual_ms_from": from_ms,
            "actual_ms_to": if to_ms.is_finite() { serde_json::json!(to_ms) } else { serde_json::Value::Null },
            "packets": self.abs_ns.len(),
            "median_abs_error_ms": median,
            "p90_abs_error_ms": p90,
            "mean_error_ms": self.sum_ms / self.abs_ns.len() as f64,
        }))
    }
}

/// Forecast errors by actual-delay bucket.
#[derive(Debug, Clone, Default)]
pub struct ForecastErrors {
    buckets: [Bucket; EDGES_MS.len() - 1],
    under: Bucket,
}

impl ForecastErrors {
    /// A packet forecast to take `forecast_ns` took `actual_ns`.
    pub fn push(&mut self, actual_ns: u64, forecast_ns: u64) {
        let ms = actual_ns as f64 * 1e-6;
        if let Some(i) = EDGES_MS.windows(2).position(|w| (w[0]..w[1]).contains(&ms)) {
            self.buckets[i].push(actual_ns, forecast_ns);
        }
        if (0.0..UNDER_MS).contains(&ms) {
            self.under.push(actual_ns, forecast_ns);
        }
    }

    /// One row per bucket with packets: its edges, packets, median and 90th-percentile absolute error
    /// and mean signed error (forecast − actual), ms.
    pub fn table(&self) -> Vec<serde_json::Value> {
        self.buckets.iter().zip(EDGES_MS.windows(2)).filter_map(|(b, w)| b.row(w[0], w[1])).collect()
    }

    /// The row of every packet under 64 ms of actual delay.
    pub fn under_64ms(&self) -> Option<serde_json::Value> {
        self.under.row(0.0, UNDER_MS)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hand-computed: three packets in [1, 2) ms, one in [8, 16) ms, one beyond 128 ms.
    #[test]
    fn rows_by_bucket_with_nearest_rank_errors() {
        let mut f = ForecastErrors::default();
        for (a, p) in [(1_000_000, 1_500_000), (1_500_000, 1_000_000), (1_900_000, 4_900_000), (10_000_000, 9_000_000), (200_000_000, 0)] {
            f.push(a, p);
        }
        let t = f.table();
        assert_eq!(t.len(), 3);
        assert_eq!(t[0]["actual_ms_from"], 1.0);
        assert_eq!(t[0]["packets"], 3);
        // |errors| 0.5, 0.5, 3.0 ms: the median is the 2nd, the 90th percentile the 3rd.
        assert_eq!(t[0]["median_abs_error_ms"], 0.5);
        assert_eq!(t[0]["p90_abs_error_ms"], 3.0);
        assert!((t[0]["mean_error_ms"].as_f64().unwrap() - 1.0).abs() < 1e-12, "(0.5 − 0.5 + 3) / 3");
        assert_eq!(t[2]["actual_ms_to"], serde_json::Value::Null);
        let under = f.under_64ms().unwrap();
        assert_eq!(under["packets"], 4);
        assert_eq!(under["actual_ms_to"], 64.0);
        assert!(ForecastErrors::default().under_64ms().is_none());
    }
}
