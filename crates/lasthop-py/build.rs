//! Embeds the git revision of the checkout the module was built from (`unknown` outside git).
use std::process::Command;

fn main() {
    let rev = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| !o.stdout.is_empty())
        .unwrap_or(false);
    println!("cargo:rustc-env=LASTHOP_GIT_REV={rev}{}", if dirty { "-dirty" } else { "" });
    // HEAD names the branch; a commit rewrites the branch's ref (or packed-refs), not HEAD.
    for p in ["../../.git/HEAD", "../../.git/index", "../../.git/refs/heads", "../../.git/packed-refs"] {
        println!("cargo:rerun-if-changed={p}");
    }
}
