//! Network namespaces and the TUN device of each, set up with iproute2 and torn down when dropped.
//!
//! Each real node of an emulation gets a namespace `lh-<pid>-<node>` and in it a TUN device (`IFF_TUN |
//! IFF_NO_PI`) that this process created and holds open: everything the namespace sends to the other
//! real nodes' addresses leaves through it into the model, and what the model delivers is written to
//! it. The device is created in this process's namespace (so its file descriptor is ours) and then
//! moved into the node's namespace, where it gets its address and route.

use crate::EmuError;
use std::net::Ipv4Addr;
use std::process::Command;

/// Runs `ip ARGS`; an error carries the command and what it printed.
pub fn ip(args: &[&str]) -> Result<(), EmuError> {
    let out = Command::new("ip").args(args).output().map_err(|e| EmuError::Setup(format!("cannot run `ip` (iproute2): {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(EmuError::Setup(format!("`ip {}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim())))
}

/// A network namespace this process created; deleted on drop (the TUN device in it goes with it).
#[derive(Debug)]
pub struct Netns {
    pub name: String,
}

impl Netns {
    /// Creates namespace `name` with its loopback up.
    pub fn create(name: &str) -> Result<Netns, EmuError> {
        ip(&["netns", "add", name])?;
        let ns = Netns { name: name.to_string() };
        ip(&["-n", name, "link", "set", "lo", "up"])?;
        // IPv6 off: the model carries the IPv4 traffic of its flows; router solicitations and the like
        // would only be counted as unmapped.
        let _ = Command::new("ip").args(["netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"]).output();
        Ok(ns)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        kill_processes_in(&self.name);
        let _ = ip(&["netns", "del", &self.name]);
    }
}

/// Kills every process still in namespace `name` (a daemon the command started, `iperf3 -s -D`, leaves
/// its process group): otherwise it keeps the namespace alive, unnamed, after the emulation.
fn kill_processes_in(name: &str) {
    let Ok(out) = Command::new("ip").args(["netns", "pids", name]).output() else { return };
    for pid in String::from_utf8_lossy(&out.stdout).split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
    }
}

/// A node's TUN device, open in this process, living in the node's namespace.
pub struct Tun {
    pub dev: tun_rs::SyncDevice,
    pub name: String,
}

impl std::fmt::Debug for Tun {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tun").field("name", &self.name).finish_non_exhaustive()
    }
}

impl Tun {
    /// Creates TUN device `name`, moves it into `ns` and gives it `addr/prefix` (the route to the other
    /// real nodes' addresses), non-blocking.
    pub fn create_in(ns: &Netns, name: &str, addr: Ipv4Addr, prefix: u8) -> Result<Tun, EmuError> {
        let dev = tun_rs::DeviceBuilder::new()
            .name(name)
            .packet_information(false)
            .build_sync()
            .map_err(|e| EmuError::Setup(format!("cannot create TUN device {name} (is /dev/net/tun there, and are we root?): {e}")))?;
        dev.set_nonblocking(true).map_err(|e| EmuError::Setup(format!("TUN {name}: {e}")))?;
        ip(&["link", "set", name, "netns", &ns.name])?;
        ip(&["-n", &ns.name, "addr", "add", &format!("{addr}/{prefix}"), "dev", name])?;
        ip(&["-n", &ns.name, "link", "set", name, "up"])?;
        Ok(Tun { dev, name: name.to_string() })
    }
}

/// Deletes the `lh-<pid>-*` namespaces of emulations whose process is gone (killed before it could
/// clean up); returns their names.
pub fn remove_stale() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir("/run/netns") else { return Vec::new() };
    let mut gone = Vec::new();
    for e in dir.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name.strip_prefix("lh-").and_then(|r| r.split('-').next()).and_then(|p| p.parse::<u32>().ok()) else { continue };
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() && {
            kill_processes_in(&name);
            ip(&["netns", "del", &name]).is_ok()
        } {
            gone.push(name);
        }
    }
    gone
}
