//! Real processes for the end-to-end tests: a `recall serve` child that is killed and reaped
//! however the test ends ([`Served`]), and the Python interpreter of the official SDKs that
//! `scripts/setup.sh` installs ([`python_with`]).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

/// The line `recall serve` announces itself with on stderr, before its base URL.
pub const LISTENING: &str = "recall listening on ";

/// The repository's root (where `.tools/` and `tests/` are).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A running `recall serve` and the base URL it announced; killed and reaped when dropped.
pub struct Served {
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// The whole announcement line (it names the store and the durability too).
    pub announced: String,
    /// The server's stderr lines after the announcement, as they come.
    pub stderr: Receiver<String>,
}

impl Served {
    /// Spawns `cmd` (a `recall serve …` command line; stdin, stdout and stderr are set here,
    /// and `RUST_LOG=warn` unless `cmd` sets it) and waits up to 60 s for its announcement.
    /// Panics, with the child killed, when none comes.
    pub fn start(mut cmd: Command) -> Served {
        if !cmd.get_envs().any(|(k, _)| k == "RUST_LOG") {
            cmd.env("RUST_LOG", "warn");
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn recall serve");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        // Owned from here on, so a failure below still kills and reaps the child.
        let mut served = Served {
            child,
            base: String::new(),
            announced: String::new(),
            stderr: rx,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = served
                .stderr
                .recv_timeout(left)
                .expect("recall serve announced no address");
            if let Some(rest) = line.strip_prefix(LISTENING) {
                served.base = rest.split_whitespace().next().expect("url").to_string();
                served.announced = line;
                return served;
            }
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Python interpreter that imports every module of `modules` (comma-separated, as in an
/// `import` line): `$env_var` when set, else `.tools/venv/bin/python` from
/// `scripts/setup.sh`. Without one, `None` and a notice that `test` is skipped, except when
/// `CI=true`, where it panics: there, the test must run.
pub fn python_with(modules: &str, env_var: &str, test: &str) -> Option<PathBuf> {
    let candidate = std::env::var_os(env_var)
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace_root().join(".tools/venv/bin/python"));
    let usable = Command::new(&candidate)
        .args(["-c", &format!("import {modules}")])
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    if usable {
        return Some(candidate);
    }
    let why = format!(
        "{} cannot import {modules} (run scripts/setup.sh, or set {env_var})",
        candidate.display()
    );
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{why}; CI=true, so {test} must run");
    }
    eprintln!("notice: {why}; skipping {test}");
    None
}

/// What the browser tests run with: Node.js, the `node_modules` holding playwright-core and
/// axe-core (`scripts/setup.sh` installs both into `.tools/`) and Debian's Chromium.
#[derive(Debug, Clone)]
pub struct Browser {
    /// `NODE_PATH` for the test script.
    pub node_path: PathBuf,
    /// The Chromium executable (`RECALL_CHROMIUM`, else `/usr/bin/chromium`).
    pub chromium: PathBuf,
}

/// The browser tools, or `None` and a notice that `test` is skipped when one is missing;
/// under `CI=true` a missing tool panics instead: there, the test must run.
pub fn browser(test: &str) -> Option<Browser> {
    let node_path = workspace_root().join(".tools/node_modules");
    let chromium = std::env::var_os("RECALL_CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    let node = Command::new("node")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    let missing = if !node {
        Some("node is not installed".to_string())
    } else if !node_path.join("playwright-core").is_dir() || !node_path.join("axe-core").is_dir() {
        Some(format!(
            "{} lacks playwright-core or axe-core",
            node_path.display()
        ))
    } else if !chromium.is_file() {
        Some(format!("{} is not installed", chromium.display()))
    } else {
        None
    };
    match missing {
        None => Some(Browser {
            node_path,
            chromium,
        }),
        Some(why) => {
            let why = format!("{why} (run scripts/setup.sh)");
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{why}; CI=true, so {test} must run");
            }
            eprintln!("notice: {why}; skipping {test}");
            None
        }
    }
}

/// Runs `cmd` with no stdin and returns its stdout and stderr; panics, with the command line
/// and its stderr, when it fails.
pub fn run_ok(cmd: &mut Command) -> (String, String) {
    let out = cmd.stdin(Stdio::null()).output().expect("run the command");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{cmd:?} failed: {stderr}");
    (String::from_utf8(out.stdout).expect("utf-8 stdout"), stderr)
}
