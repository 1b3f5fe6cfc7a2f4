//! Node numbering and static routing.
//!
//! Nodes are numbered servers first, then APs, then stations. The graph has an edge for every wired link
//! and one between each AP and each of its stations (the last hop). Routes are shortest paths by hop
//! count, computed once with BFS; ties break by node order, so routing is deterministic.

use crate::packet::NodeId;
use crate::scenario::Scenario;
use std::collections::VecDeque;

/// What kind of node an index is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeRole {
    Server,
    Ap,
    /// `ap`: the index of its AP (`usize::MAX` while validation has yet to report a missing AP).
    Station { ap: usize },
}

/// Node names and roles in index order.
pub fn nodes(sc: &Scenario) -> Vec<(String, NodeRole)> {
    let mut v: Vec<(String, NodeRole)> = sc.servers.iter().map(|s| (s.name.clone(), NodeRole::Server)).collect();
    v.extend(sc.aps.iter().map(|a| (a.name.clone(), NodeRole::Ap)));
    v.extend(sc.stations.iter().map(|s| (s.name.clone(), NodeRole::Station { ap: sc.find_ap_of(s).unwrap_or(usize::MAX) })));
    v
}

/// Index of the first AP node.
pub fn ap_node(sc: &Scenario, ap: usize) -> NodeId {
    (sc.servers.len() + ap) as NodeId
}

/// Adjacency lists (sorted, so BFS is deterministic). Unknown names are skipped (validation reports them).
pub fn adjacency(sc: &Scenario) -> Vec<Vec<NodeId>> {
    let nodes = nodes(sc);
    let idx = |name: &str| nodes.iter().position(|(n, _)| n == name);
    let mut adj = vec![Vec::new(); nodes.len()];
    for l in &sc.links {
        if let (Some(a), Some(b)) = (idx(&l.a), idx(&l.b)) {
            if a != b {
                adj[a].push(b as NodeId);
                adj[b].push(a as NodeId);
            }
        }
    }
    for (i, (_, role)) in nodes.iter().enumerate() {
        if let NodeRole::Station { ap } = role {
            if *ap < sc.aps.len() {
                let a = ap_node(sc, *ap) as usize;
                adj[a].push(i as NodeId);
                adj[i].push(a as NodeId);
            }
        }
    }
    for a in adj.iter_mut() {
        a.sort_unstable();
        a.dedup();
    }
    adj
}

/// `next[src][dst]` = the neighbour of `src` on the route to `dst`.
pub fn next_hops(adj: &[Vec<NodeId>]) -> Vec<Vec<Option<NodeId>>> {
    let n = adj.len();
    let mut next = vec![vec![None; n]; n];
    for dst in 0..n {
        // BFS from dst backwards: parent pointers point one step closer to dst.
        let mut seen = vec![false; n];
        let mut q = VecDeque::from([dst]);
        seen[dst] = true;
        while let Some(u) = q.pop_front() {
            for &v in &adj[u] {
                let v = v as usize;
                if !seen[v] {
                    seen[v] = true;
                    next[v][dst] = Some(u as NodeId);
                    q.push_back(v);
                }
            }
        }
    }
    next
}

/// Whether `to` can be reached from `from` (by name).
pub fn reachable(sc: &Scenario, from: &str, to: &str) -> bool {
    let nodes = nodes(sc);
    let (Some(a), Some(b)) = (nodes.iter().position(|(n, _)| n == from), nodes.iter().position(|(n, _)| n == to)) else {
        return false;
    };
    let adj = adjacency(sc);
    next_hops(&adj)[a][b].is_some()
}
