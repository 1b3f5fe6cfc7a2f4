//! The emulation's control socket: run-time commands to the model from outside while it runs (a
//! script changing LAST-PQ's demands, a station's SNR, Law's limits), the same commands as a
//! scenario's `commands` and the Python API's `Sim.command`.
//!
//! A Unix stream socket; each line a client writes is one JSON request, answered by one JSON line:
//!
//! ```text
//! → {"target": "aps.ap.lastpq", "set": {"demand_ms": {"vr": 15}}}
//! ← {"ok": true, "at_s": 12.345678901}
//! → {"target": "aps.ap.lastpq", "set": {"demand_ms": {"voip": 15}}}
//! ← {"ok": false, "error": "set.demand_ms.voip: 'voip' is not a flow LAST-PQ prioritizes here (vr; ...)"}
//! ```
//!
//! A command acts at the model time it is read, before the packets read at that time. The applied
//! ones are returned with the emulation ([`crate::EmuOutput::commands`]) as `commands` entries, so
//! replaying the inputs with them reproduces the run.

use crate::EmuError;
use lasthop_core::sim::{CommandConfig, Sim};
use nix::sys::epoll::{Epoll, EpollEvent, EpollFlags};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// The longest request line taken; a longer one closes its connection.
const MAX_LINE: usize = 64 * 1024;
/// Clients served at once; more are turned away.
const MAX_CONNS: usize = 64;

/// One request: what `commands` entries hold but `at_s` (it acts now).
#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Request {
    target: String,
    set: serde_json::Map<String, serde_json::Value>,
}

/// The listening socket, its connections and the commands applied so far.
pub struct Control {
    path: PathBuf,
    /// The socket file's inode, so that only ours is removed at the end.
    ino: u64,
    listener: UnixListener,
    conns: Vec<(UnixStream, Vec<u8>)>,
    applied: Vec<CommandConfig>,
}

impl Control {
    /// Listens at `path`. A socket left there by an earlier run (nothing listens) is replaced; a live
    /// one or any other file is an error.
    pub fn bind(path: &Path) -> Result<Control, EmuError> {
        let bad = |why: String| EmuError::Scenario(format!("--control {}: {why}", path.display()));
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_socket() => {
                if UnixStream::connect(path).is_ok() {
                    return Err(bad("another process listens there".into()));
                }
                std::fs::remove_file(path).map_err(|e| bad(e.to_string()))?;
            }
            Ok(_) => return Err(bad("exists and is not a socket".into())),
            Err(_) => {}
        }
        let listener = UnixListener::bind(path).map_err(|e| bad(e.to_string()))?;
        listener.set_nonblocking(true).map_err(|e| EmuError::Io(e.to_string()))?;
        let ino = std::fs::metadata(path).map(|m| m.ino()).unwrap_or(0);
        Ok(Control { path: path.to_path_buf(), ino, listener, conns: Vec::new(), applied: Vec::new() })
    }

    pub(crate) fn listener(&self) -> &UnixListener {
        &self.listener
    }

    /// The commands applied, as `commands` entries at their model times.
    pub fn into_applied(mut self) -> Vec<CommandConfig> {
        std::mem::take(&mut self.applied)
    }

    /// Accepts waiting clients, reads what they sent and applies each complete request line to `sim`
    /// now, answering it.
    pub(crate) fn serve(&mut self, sim: &mut Sim, epoll: &Epoll) -> Result<(), EmuError> {
        loop {
            match self.listener.accept() {
                Ok((mut s, _)) => {
                    if self.conns.len() >= MAX_CONNS {
                        let _ = s.write_all(format!("{}\n", serde_json::json!({ "ok": false, "error": format!("at most {MAX_CONNS} clients at once") })).as_bytes());
                        continue;
                    }
                    s.set_nonblocking(true).map_err(|e| EmuError::Io(e.to_string()))?;
                    epoll.add(&s, EpollEvent::new(EpollFlags::EPOLLIN, crate::realtime::CONTROL)).map_err(|e| EmuError::Io(e.to_string()))?;
                    self.conns.push((s, Vec::new()));
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // WouldBlock: no one else waits. Others (a client gone before it was taken, no file
                // descriptors left) end this round only; the emulation goes on.
                Err(_) => break,
            }
        }
        let mut closed = Vec::new();
        for (k, (conn, buf)) in self.conns.iter_mut().enumerate() {
            let mut chunk = [0u8; 4096];
            let open = loop {
                match conn.read(&mut chunk) {
                    Ok(0) => break false,
                    Ok(n) => buf.extend_from_slice(&chunk[..n]),
                    Err(e) if e.kind() == ErrorKind::WouldBlock => break true,
                    Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                    Err(_) => break false,
                }
            };
            // At the end of the stream a last line without its newline is a request too.
            if !open && !buf.is_empty() && buf.last() != Some(&b'\n') {
                buf.push(b'\n');
            }
            let mut answered = true;
            while let Some(end) = buf.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = buf.drain(..=end).collect();
                let reply = Self::apply(sim, &line[..end], &mut self.applied);
                // The model does not wait for a client that does not read its answers: one whose socket
                // is full is closed rather than sent half an answer.
                answered &= conn.write_all(format!("{reply}\n").as_bytes()).is_ok();
            }
            if !answered {
                closed.push(k);
            } else if buf.len() > MAX_LINE {
                let _ = conn.write_all(format!("{}\n", serde_json::json!({ "ok": false, "error": format!("a request line is at most {MAX_LINE} bytes") })).as_bytes());
                closed.push(k);
            } else if !open {
                closed.push(k);
            }
        }
        for k in closed.into_iter().rev() {
            let (conn, _) = self.conns.swap_remove(k);
            let _ = epoll.delete(&conn);
        }
        Ok(())
    }

    /// One request line applied: the answer.
    fn apply(sim: &mut Sim, line: &[u8], applied: &mut Vec<CommandConfig>) -> serde_json::Value {
        let line = String::from_utf8_lossy(line);
        if line.trim().is_empty() {
            return serde_json::json!({ "ok": false, "error": "an empty line: send {\"target\": ..., \"set\": {...}}" });
        }
        let req: Request = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => return serde_json::json!({ "ok": false, "error": format!("not a request ({e}): send {{\"target\": \"aps.ap.lastpq\", \"set\": {{\"demand_ms\": {{\"vr\": 15}}}}}}") }),
        };
        match sim.command(&req.target, &req.set) {
            Ok(()) => {
                let at = sim.now();
                applied.push(CommandConfig { at_s: at.as_secs_f64(), target: req.target, set: req.set });
                serde_json::json!({ "ok": true, "at_s": at.as_secs_f64() })
            }
            Err(e) => serde_json::json!({ "ok": false, "error": e.to_string() }),
        }
    }
}

impl Drop for Control {
    fn drop(&mut self) {
        // Only our socket: not one another process has put there since.
        if std::fs::metadata(&self.path).is_ok_and(|m| m.ino() == self.ino) {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}
