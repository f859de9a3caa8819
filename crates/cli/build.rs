//! Links the functions a short run executes next to each other in release builds.
//!
//! `startup-order.txt` (made by `scripts/startup-order.sh`) lists the functions a fresh
//! `braincode run "Say hello"`, then a 7-agent run, call, in order. Given to lld as
//! `--symbol-ordering-file`, they land together in `.text`, so a run maps a few MB of code
//! instead of the 64 KB around every function it touches across 30 MB (peak RSS of a "Say
//! hello" 22 MB -> 11 MB). Names the list
//! has that the binary lacks are skipped (`--no-warn-symbol-ordering`): a stale list costs
//! memory, never a failed build.
//!
//! The same builds pack their relative relocations (`-z pack-relative-relocs`, DT_RELR) when
//! the C library they will run on reads them (glibc 2.36 or newer on the building machine,
//! which is the target of a native build): the position-independent binary holds ~66,000 of
//! them, 1.6 MB of `.rela.dyn` the loader reads on every start, where RELR needs a few KB.
//!
//! Only where lld is known to link: x86_64 Linux GNU (Rust's default linker there), a release
//! build, and no linker chosen by the user (RUSTFLAGS, `linker =`); `BRAINCODE_NO_STARTUP_ORDER`
//! turns it off.
#![allow(clippy::print_stdout)] // cargo reads a build script's stdout

use std::env;

fn main() {
    println!("cargo:rerun-if-changed=startup-order.txt");
    println!("cargo:rerun-if-env-changed=BRAINCODE_NO_STARTUP_ORDER");
    let var = |name: &str| env::var(name).unwrap_or_default();
    let release = var("PROFILE") == "release";
    let lld_target = var("TARGET") == "x86_64-unknown-linux-gnu";
    let flags = var("CARGO_ENCODED_RUSTFLAGS");
    // Cargo says which linker the user chose (`linker =` in a config, CARGO_TARGET_*_LINKER).
    let own_linker = env::var_os("RUSTC_LINKER").is_some()
        || flags.contains("linker")
        || flags.contains("fuse-ld");
    let wanted = env::var_os("BRAINCODE_NO_STARTUP_ORDER").is_none();
    let list = std::path::Path::new(&var("CARGO_MANIFEST_DIR")).join("startup-order.txt");
    if release && lld_target && !own_linker && wanted && list.is_file() {
        println!(
            "cargo:rustc-link-arg-bin=braincode=-Wl,--symbol-ordering-file={}",
            list.display()
        );
        println!("cargo:rustc-link-arg-bin=braincode=-Wl,--no-warn-symbol-ordering");
    }
    if release && lld_target && !own_linker && var("HOST") == var("TARGET") && glibc_reads_relr() {
        println!("cargo:rustc-link-arg-bin=braincode=-Wl,-z,pack-relative-relocs");
    }
}

/// Whether this machine's glibc is 2.36 or newer, the first to read DT_RELR (`getconf` prints
/// "glibc 2.36"). Anything unexpected answers no: the binary is then linked as before.
fn glibc_reads_relr() -> bool {
    let Ok(out) = std::process::Command::new("getconf")
        .arg("GNU_LIBC_VERSION")
        .output()
    else {
        return false;
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text.trim().strip_prefix("glibc ") else {
        return false;
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    match (parts.next().flatten(), parts.next().flatten()) {
        (Some(major), Some(minor)) => (major, minor) >= (2, 36),
        _ => false,
    }
}
