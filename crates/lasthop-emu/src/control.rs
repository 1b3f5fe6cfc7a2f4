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
//! A request is a line (or what a client sent before closing); answers come in order. A client that
//! writes faster than it reads its answers is slowed (its next request is taken once the answers
//! before it are out), never answered in part. At most 64 clients at once, lines of at most 64 KiB.
//! A command acts at the model time it is read, before the packets read at that time. The applied
//! ones are the `Sim`'s stepped commands, returned with the emulation ([`crate::EmuOutput::commands`]) as `commands` entries, so
//! replaying the inputs with them reproduces the run.

use crate::EmuError;
use lasthop_core::sim::Sim;
use nix::sys::epoll::{Epoll, EpollEvent, EpollFlags};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};

/// The longest request line taken; a longer one closes its connection.
const MAX_LINE: usize = 64 * 1024;
/// Clients served at once; more are turned away (with an answer saying so).
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
    conns: Vec<Conn>,
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
        let listener = UnixListener::bind(path).map_err(|e| match e.kind() {
            // sockaddr_un's sun_path holds 108 bytes with the terminating NUL.
            ErrorKind::InvalidInput => bad(format!("too long for a Unix socket's path ({} bytes; at most 107)", path.as_os_str().len())),
            _ => bad(format!("cannot listen there: {e}")),
        })?;
        listener.set_nonblocking(true).map_err(|e| EmuError::Io(e.to_string()))?;
        let ino = std::fs::metadata(path).map(|m| m.ino()).unwrap_or(0);
        Ok(Control { path: path.to_path_buf(), ino, listener, conns: Vec::new() })
    }

    pub(crate) fn listener(&self) -> &UnixListener {
        &self.listener
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
                    self.conns.push(Conn { stream: s, input: Vec::new(), output: Vec::new(), eof: false });
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // WouldBlock: no one else waits. Others (a client gone before it was taken, no file
                // descriptors left) end this round only; the emulation goes on.
                Err(_) => break,
            }
        }
        let mut closed = Vec::new();
        for (k, c) in self.conns.iter_mut().enumerate() {
            if !c.serve(sim) {
                closed.push(k);
            }
        }
        for k in closed.into_iter().rev() {
            let c = self.conns.swap_remove(k);
            let _ = epoll.delete(&c.stream);
        }
        Ok(())
    }

    /// One request line applied: the answer.
    fn apply(sim: &mut Sim, line: &[u8]) -> serde_json::Value {
        let line = String::from_utf8_lossy(line);
        if line.trim().is_empty() {
            return serde_json::json!({ "ok": false, "error": "an empty line: send {\"target\": ..., \"set\": {...}}" });
        }
        let req: Request = match serde_json::from_str(&line) {
            Ok(r) => r,
            Err(e) => return serde_json::json!({ "ok": false, "error": format!("not a request ({e}): send {{\"target\": \"aps.ap.lastpq\", \"set\": {{\"demand_ms\": {{\"vr\": 15}}}}}}") }),
        };
        match sim.command(&req.target, &req.set) {
            Ok(()) => serde_json::json!({ "ok": true, "at_s": sim.now().as_secs_f64() }),
            Err(e) => serde_json::json!({ "ok": false, "error": e.to_string() }),
        }
    }
}

/// One client: what it sent and we have not taken yet, the answers it has not read yet.
struct Conn {
    stream: UnixStream,
    input: Vec<u8>,
    output: Vec<u8>,
    eof: bool,
}

impl Conn {
    /// Reads what the client sent and applies its complete lines, one at a time, while it reads the
    /// answers: a request is taken only once the answers before it are out, so a client that writes
    /// faster than it reads is slowed (its socket fills), never answered in part or dropped. False:
    /// done with this client.
    fn serve(&mut self, sim: &mut Sim) -> bool {
        let mut chunk = [0u8; 4096];
        while !self.eof && self.input.len() <= MAX_LINE {
            match self.stream.read(&mut chunk) {
                Ok(0) => self.eof = true,
                Ok(n) => self.input.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => return false,
            }
        }
        loop {
            if !self.flush() {
                return false;
            }
            if !self.output.is_empty() {
                return true; // the client has answers to read first
            }
            let line = match self.input.iter().position(|&b| b == b'\n') {
                Some(end) if end <= MAX_LINE => {
                    let line: Vec<u8> = self.input.drain(..=end).collect();
                    line[..end].to_vec()
                }
                // At the end of the stream a last line without its newline is a request too.
                None if self.eof && !self.input.is_empty() && self.input.len() <= MAX_LINE => std::mem::take(&mut self.input),
                None if self.input.len() <= MAX_LINE => return !self.eof,
                _ => {
                    let e = serde_json::json!({ "ok": false, "error": format!("a request line is at most {MAX_LINE} bytes") });
                    let _ = self.stream.write_all(format!("{e}\n").as_bytes());
                    return false;
                }
            };
            let reply = Control::apply(sim, &line);
            self.output.extend_from_slice(format!("{reply}\n").as_bytes());
        }
    }

    /// Writes what it can of the answers; false if the client is gone.
    fn flush(&mut self) -> bool {
        while !self.output.is_empty() {
            match self.stream.write(&self.output) {
                Ok(0) => return false,
                Ok(n) => {
                    self.output.drain(..n);
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
        }
        true
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
