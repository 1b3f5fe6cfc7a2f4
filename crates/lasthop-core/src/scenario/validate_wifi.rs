//! Checks of Wi-Fi last-hop entries: PHY combinations, EDCA values, channel models.

use super::error::Loc;
use super::types::*;
use super::validate::Issues;
use crate::mac::config::fixed_txvector;
use crate::phy::mcs::OFDM_RATES_MBPS;
use serde_json::json;

/// An adaptive controller must build for this BSS. Both transmit paths take one (`linux` per PSDU as
/// ath9k, `fifo` per attempt as ns-3), but LLRA reads the queue state only the `linux` path gives.
fn check_adaptive(w: &WifiConfig, rc: &RateControlConfig, path: &TxPathConfig, loc: &Loc, is: &mut Issues) {
    if matches!(rc, RateControlConfig::Fixed { .. }) {
        return;
    }
    if matches!((rc, path), (RateControlConfig::Llra(_), TxPathConfig::Fifo { .. })) {
        is.push(loc.clone(), "llra reads the driver's queues: it needs the `linux` transmit path (set ap_path/sta_path)", json!(null));
    } else if let Err(e) = crate::mac::config::adaptive_rate_control(w, rc, crate::rng::Rng::derive(0, "check")) {
        is.push(loc.clone(), e, json!(null));
    }
}

/// What Law on the AP (its own values are checked at `aps[i].mechanisms`) requires of the Wi-Fi last
/// hop at `loc`: what it replaces must be left unset.
fn check_law(w: &WifiConfig, law: &crate::mech::law::LawParams, loc: &Loc, is: &mut Issues) {
    if law.validate().is_err() {
        return;
    }
    let kind = "law";
    if w.ap_path.is_some() {
        is.push(loc.key("ap_path"), format!("mechanism `{kind}` sets the stages of the AP's Linux path (its driver, hardware queues, TXQ scheduler and AQM); remove ap_path"), json!(null));
    }
    if matches!(w.rate_control, Some(ref rc) if !matches!(rc, RateControlConfig::Fixed { .. })) {
        is.push(loc.key("rate_control"), format!("mechanism `{kind}` chooses the downlink rates itself; remove the adaptive rate_control"), json!(null));
    }
    let params = crate::mac::config::BssParams::from_config(w);
    let driver = crate::mech::law::driver::LawDriverParams::on(&params, law);
    if let Err(e) = crate::mech::law::driver::LawDriver::new(driver, crate::mac::config::link_rates(w).supported) {
        is.push(loc.clone(), format!("mechanism `{kind}`: {e}"), json!(null));
    }
}

/// A Wi-Fi last hop at `loc`, of an AP that runs Law with `law` (if it does).
pub(crate) fn check_wifi(w: &WifiConfig, law: Option<&crate::mech::law::LawParams>, loc: &Loc, is: &mut Issues) {
    let bss_rc = crate::mac::config::default_rate_control(w);
    match fixed_txvector(w, &bss_rc) {
        Err(e) => is.push(loc.key("rate_control"), e.to_string(), json!(null)),
        // The BSS's radios have max_nss streams: a fixed rate needing more ran on streams they lack.
        Ok(txv) if matches!(bss_rc, RateControlConfig::Fixed { .. }) && (1..=8).contains(&w.max_nss) && txv.nss > w.max_nss => is.push(
            loc.key("rate_control"),
            format!("the fixed rate needs {} spatial streams; the BSS has {} (max_nss)", txv.nss, w.max_nss),
            json!(null),
        ),
        Ok(_) => {}
    }
    let (ap_path, _) = crate::mac::config::default_paths(w);
    match law {
        Some(law) => check_law(w, law, loc, is),
        None => check_adaptive(w, &bss_rc, &ap_path, &loc.key("rate_control"), is),
    }

    for (key, path) in [("ap_path", &w.ap_path), ("sta_path", &w.sta_path)] {
        check_path(path.as_ref(), &loc.key(key), is);
    }
    if w.max_nss == 0 || w.max_nss > 8 {
        is.push(loc.key("max_nss"), "must be in 1..=8", json!(w.max_nss));
    }
    for r in &w.basic_rates_mbps {
        if !OFDM_RATES_MBPS.contains(r) {
            is.push(loc.key("basic_rates_mbps"), format!("{r} is not an OFDM rate (6, 9, 12, 18, 24, 36, 48, 54)"), json!(r));
        }
    }
    if w.basic_rates_mbps.is_empty() {
        is.push(loc.key("basic_rates_mbps"), "needs at least one rate", json!([]));
    }
    if w.queue_packets == 0 {
        is.push(loc.key("queue_packets"), "must be at least 1", json!(0));
    }
    if w.retry_limit == 0 {
        is.push(loc.key("retry_limit"), "must be at least 1 attempt", json!(0));
    }
    is.positive(loc.key("msdu_lifetime_ms"), w.msdu_lifetime_ms);
    if w.max_ampdu_bytes == Some(0) {
        is.push(loc.key("max_ampdu_bytes"), "must be at least 1", json!(0));
    }
    if w.max_ampdu_mpdus == Some(0) {
        is.push(loc.key("max_ampdu_mpdus"), "must be at least 1", json!(0));
    }
    for (key, o) in [("edca_ap", &w.edca_ap), ("edca_sta", &w.edca_sta)] {
        for (ac, e) in [("vo", &o.vo), ("vi", &o.vi), ("be", &o.be), ("bk", &o.bk)] {
            check_edca(e, &loc.key(key).key(ac), is);
        }
    }
}

fn check_edca(e: &EdcaOverride, loc: &Loc, is: &mut Issues) {
    if e.aifsn == Some(0) {
        is.push(loc.key("aifsn"), "must be at least 1", json!(0));
    }
    // The EDCA Parameter Set element's fields (802.11-2020 §9.4.2.28): AIFSN in 4 bits, the TXOP
    // limit in 8 bits of 32 µs.
    if let Some(a) = e.aifsn.filter(|&a| a > 15) {
        is.push(loc.key("aifsn"), format!("must be at most 15 (a 4-bit field), got {a}"), json!(a));
    }
    if let Some(t) = e.txop_limit_us.filter(|&t| t > 8160) {
        is.push(loc.key("txop_limit_us"), format!("must be at most 8160 µs (255 units of 32 µs), got {t}"), json!(t));
    }
    for (k, v) in [("cw_min", e.cw_min), ("cw_max", e.cw_max)] {
        if let Some(v) = v {
            if v > 32767 || !(v + 1).is_power_of_two() {
                is.push(loc.key(k), format!("must be of the form 2^k − 1 (e.g. 15, 1023) and at most 32767, got {v}"), json!(v));
            }
        }
    }
    if let (Some(a), Some(b)) = (e.cw_min, e.cw_max) {
        if a > b {
            is.push(loc.key("cw_min"), format!("must not exceed cw_max ({b})"), json!(a));
        }
    }
}

pub(crate) fn check_station(sc: &Scenario, s: &Station, loc: &Loc, is: &mut Issues) {
    let ap = match &s.ap {
        Some(name) => sc.aps.iter().find(|a| &a.name == name),
        None if sc.aps.len() == 1 => sc.aps.first(),
        None => None,
    };
    let wifi = match ap.map(|a| &a.last_hop) {
        Some(LastHop::Wifi(w)) => Some(w),
        _ => None,
    };
    if s.airtime_weight_us == Some(0) {
        is.push(loc.key("airtime_weight_us"), "must be at least 1", json!(0));
    }
    if let (Some(w), Some(wt)) = (wifi, s.airtime_weight_us) {
        use crate::mac::wifi_config::{AfsVariant, TxPathConfig};
        if matches!(crate::mac::config::default_paths(w).0, TxPathConfig::Linux { afs_variant: AfsVariant::Ath9kDrrPlus, .. }) {
            is.push(loc.key("airtime_weight_us"), "the AP's airtime scheduler (afs_variant = \"ath9k-drr++\") has no station weights; mac80211's has", json!(wt));
        }
    }
    check_station_nss(s, wifi.map(|w| &**w), ap, loc, is);
    let wifi = wifi.map(|w| crate::mac::config::for_station(w, s.max_nss.filter(|&n| n >= 1)));
    let wifi = wifi.as_deref();
    if wifi.is_none() && ap.is_some() {
        if s.channel.is_some() {
            is.push(loc.key("channel"), "only a Wi-Fi last hop has a radio channel", json!(null));
        }
        if s.rate_control.is_some() {
            is.push(loc.key("rate_control"), "only a Wi-Fi last hop has rate control", json!(null));
        }
        if s.downlink_rate_control.is_some() {
            is.push(loc.key("downlink_rate_control"), "only a Wi-Fi last hop has rate control", json!(null));
        }
    }
    for (key, rc) in [("rate_control", &s.rate_control), ("downlink_rate_control", &s.downlink_rate_control)] {
        if let (Some(w), Some(rc)) = (wifi, rc) {
            match fixed_txvector(w, rc) {
                Err(e) => is.push(loc.key(key), e.to_string(), json!(null)),
                // A station that sets no max_nss has the BSS's streams, and no more.
                Ok(txv) if matches!(rc, RateControlConfig::Fixed { .. }) && txv.nss > w.max_nss.max(1) => {
                    let whose = if s.max_nss.is_some() { "max_nss" } else { "the BSS's max_nss; it sets none" };
                    is.push(
                        loc.key(key),
                        format!("the fixed rate needs {} spatial streams; the station has {} ({whose})", txv.nss, w.max_nss.max(1)),
                        json!(null),
                    );
                }
                Ok(_) => {}
            }
            if let (Some(_), "downlink_rate_control") = (ap.and_then(|a| a.law()), key) {
                is.push(loc.key(key), "the AP runs mechanism `law`, which chooses the downlink rates itself", json!(null));
                continue;
            }
            let (ap_path, sta_path) = crate::mac::config::default_paths(w);
            let path = if key == "rate_control" { sta_path } else { ap_path };
            check_adaptive(w, rc, &path, &loc.key(key), is);
        }
    }
    if let Some(c) = &s.channel {
        if let Err((key, msg)) = crate::channel::ChannelModel::check(c) {
            is.push(loc.key("channel").key(key), msg, json!(null));
        }
    }
}

/// A station's `max_nss`: within the BSS's, on a Wi-Fi last hop, not below the BSS's under Law (whose
/// controller chooses every station's downlink rates among the BSS's), and enough for the BSS's fixed
/// rate where the station's links take it.
fn check_station_nss(s: &Station, wifi: Option<&WifiConfig>, ap: Option<&crate::scenario::AccessPoint>, loc: &Loc, is: &mut Issues) {
    let Some(n) = s.max_nss else { return };
    match wifi {
        Some(w) if !(1..=w.max_nss.max(1)).contains(&n) => {
            is.push(loc.key("max_nss"), format!("must be in 1..={} (the BSS's max_nss), got {n}", w.max_nss.max(1)), json!(n));
        }
        Some(w) if n < w.max_nss && ap.is_some_and(|a| a.law().is_some()) => is.push(
            loc.key("max_nss"),
            format!("the AP runs mechanism `law`, which chooses every station's downlink rates among the BSS's {} streams", w.max_nss),
            json!(n),
        ),
        None if ap.is_some() => is.push(loc.key("max_nss"), "only a Wi-Fi last hop has spatial streams", json!(n)),
        Some(w) => {
            // A link without a rate control of its own takes the BSS's: a fixed one must fit too.
            let bss_rc = crate::mac::config::default_rate_control(w);
            let inherits = s.rate_control.is_none() || s.downlink_rate_control.is_none();
            if let (true, RateControlConfig::Fixed { .. }, Ok(txv)) = (inherits, &bss_rc, fixed_txvector(w, &bss_rc)) {
                if txv.nss > n {
                    is.push(loc.key("max_nss"), format!("the BSS's fixed rate needs {} spatial streams; the station has {n}", txv.nss), json!(n));
                }
            }
        }
        None => {}
    }
}

/// All Wi-Fi APs share one collision domain, so they must share a band.
pub(crate) fn check_bands(sc: &Scenario, is: &mut Issues) {
    let mut band = None;
    for (i, a) in sc.aps.iter().enumerate() {
        if let LastHop::Wifi(w) = &a.last_hop {
            match band {
                None => band = Some(w.band),
                Some(b) if b != w.band => is.push(
                    Loc::root().key("aps").index(i).key("last_hop").key("band"),
                    "all Wi-Fi APs share one collision domain and must use the same band",
                    json!(null),
                ),
                _ => {}
            }
        }
    }
}

/// A node transmit path's settings (`ap_path`, `sta_path` at `loc`).
fn check_path(path: Option<&TxPathConfig>, loc: &Loc, is: &mut Issues) {
    if let Some(TxPathConfig::Fifo { qdisc: Some(q) }) = path {
        super::validate::check_queue(q, &loc.key("qdisc"), is);
    }
    if let Some(TxPathConfig::Linux { qdisc, hw_depth_aggr, hw_depth_single, max_subframes, t_irq_us, hw_time_limit_us, tbf, .. }) = path {
        if let Some(Err((f, why))) = tbf.as_ref().map(crate::queue::tbf::TbfParams::validate) {
            let value = serde_json::to_value(tbf).ok().and_then(|v| v.get(f).cloned()).unwrap_or_default();
            is.push(loc.key("tbf").key(f), why, value);
        }
        if let Some(q) = qdisc {
            super::validate::check_queue(q, &loc.key("qdisc"), is);
        }
        for (k, v) in [("hw_depth_aggr", hw_depth_aggr), ("hw_depth_single", hw_depth_single), ("max_subframes", max_subframes)] {
            if *v == 0 {
                is.push(loc.key(k), "must be at least 1", json!(0));
            }
        }
        if hw_time_limit_us.is_some_and(|us| !(100..=1_000_000).contains(&us)) {
            is.push(loc.key("hw_time_limit_us"), "must be between 100 µs and 1 s", json!(hw_time_limit_us));
        }
        if *t_irq_us > 1000 {
            is.push(loc.key("t_irq_us"), "must be at most 1000 µs", json!(t_irq_us));
        }
    }
}

/// `hidden_nodes`: each pair names two different Wi-Fi nodes that do not exchange frames.
pub(crate) fn check_hidden(sc: &Scenario, is: &mut Issues) {
    // The AP a Wi-Fi node belongs to (itself for an AP), if it is one.
    let bss_of = |name: &str| -> Option<Result<&str, ()>> {
        if let Some(a) = sc.aps.iter().find(|a| a.name == name) {
            return Some(if matches!(a.last_hop, LastHop::Wifi(_)) { Ok(a.name.as_str()) } else { Err(()) });
        }
        let a = &sc.aps[sc.find_ap_of(sc.stations.iter().find(|s| s.name == name)?)?];
        Some(if matches!(a.last_hop, LastHop::Wifi(_)) { Ok(a.name.as_str()) } else { Err(()) })
    };
    for (i, pair) in sc.hidden_nodes.iter().enumerate() {
        let loc = Loc::root().key("hidden_nodes").index(i);
        let mut ok = true;
        for (j, name) in pair.iter().enumerate() {
            match bss_of(name) {
                None => is.push(loc.index(j), format!("no access point or station named '{name}'"), json!(name)),
                Some(Err(())) => is.push(loc.index(j), format!("'{name}' is not on a Wi-Fi last hop: only Wi-Fi nodes sense the medium"), json!(name)),
                Some(Ok(_)) => continue,
            }
            ok = false;
        }
        if !ok {
            continue;
        }
        let is_ap = |n: &str| sc.aps.iter().any(|a| a.name == n);
        let same = |o: &[String; 2]| (o[0] == pair[0] && o[1] == pair[1]) || (o[0] == pair[1] && o[1] == pair[0]);
        if let Some(j) = sc.hidden_nodes[..i].iter().position(same) {
            is.push(loc, format!("the pair '{}', '{}' is listed already (hidden_nodes[{j}])", pair[0], pair[1]), json!(pair));
        } else if pair[0] == pair[1] {
            is.push(loc, "names one node twice: a node always senses itself", json!(pair));
        } else if (is_ap(&pair[0]) || is_ap(&pair[1])) && bss_of(&pair[0]) == bss_of(&pair[1]) {
            is.push(loc, format!("'{}' and '{}' exchange frames (a station and its AP): they must hear each other", pair[0], pair[1]), json!(pair));
        }
    }
}
