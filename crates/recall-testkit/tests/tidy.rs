//! Tidy: the workspace rules that docs/ARCHITECTURE.md states and no compiler checks, kept
//! true by a test (as rust-analyzer keeps its own). Each check names the file and the rule.
//!
//! - every source file (`crates/*/src/**/*.rs`) opens with a `//!` header saying what it is,
//!   and every web app module (`crates/recall-server/web/*.js`) with a `//` one;
//! - no source file, Rust or the web app's JavaScript, is longer than [`MAX_LINES`] lines;
//! - the web app's modules import one another without a loop (a call up a layer goes
//!   through `hooks.js`);
//! - each crate depends only on the recall crates docs/ARCHITECTURE.md's graph allows
//!   ([`ALLOWED_EDGES`]: dependencies point inward);
//! - recall-core depends on no runtime, database or HTTP crate (it is pure);
//! - `anyhow` is a dependency of the binary crate only (libraries return typed errors);
//! - clippy's `unwrap_used` and `expect_used` are denied workspace-wide, and every crate
//!   inherits the workspace lints (test code, benches and examples allow them at their crate
//!   root, and `clippy.toml` allows them in `#[test]` code);
//! - docs/ARCHITECTURE.md has a row for every crate, and names no crate that does not exist;
//! - every file or folder docs/ARCHITECTURE.md names in backticks exists (the page is a map:
//!   the mechanisms are described in the files it points to, so a stale name is a broken
//!   link).
// Test code: a panic is how it fails.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::path::{Path, PathBuf};

/// The longest a source file may be. Past it a file is doing more than one job.
const MAX_LINES: usize = 800;

/// Crates recall-core may not depend on: anything that does I/O or needs a runtime.
const IMPURE: [&str; 8] = [
    "tokio", "sqlx", "reqwest", "rusqlite", "hyper", "axum", "rmcp", "futures",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

fn crate_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 8,
        "crates/ not found from {}",
        root().display()
    );
    dirs
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let p = e.unwrap().path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

fn source_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    for c in crate_dirs() {
        rust_files(&c.join("src"), &mut files);
    }
    files.sort();
    files
}

/// The web app's JavaScript modules (no build step: what is here is what the browser runs).
fn web_modules() -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(root().join("crates/recall-server/web"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "js"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no web app modules found");
    files
}

/// The recall crates each crate may depend on (normal dependencies), as the graph in
/// docs/ARCHITECTURE.md draws them. recall-testkit is a dev-dependency only, so it appears
/// nowhere here.
const ALLOWED_EDGES: [(&str, &[&str]); 9] = [
    ("recall-core", &[]),
    ("recall-llm", &["recall-core"]),
    ("recall-embed", &[]),
    ("recall-store", &["recall-core"]),
    (
        "recall-engine",
        &["recall-core", "recall-store", "recall-llm", "recall-embed"],
    ),
    ("recall-mcp", &["recall-core", "recall-engine"]),
    (
        "recall-server",
        &["recall-core", "recall-engine", "recall-mcp"],
    ),
    (
        "recall-cli",
        &[
            "recall-core",
            "recall-engine",
            "recall-server",
            "recall-mcp",
            "recall-embed",
        ],
    ),
    ("recall-testkit", &[]),
];

/// The names in one `[section]` of a Cargo.toml (a small reader: keys at the start of a
/// line up to `=` or `.`).
fn section_keys(toml: &str, section: &str) -> Vec<String> {
    let mut keys = Vec::new();
    let mut inside = false;
    for line in toml.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            inside = t == format!("[{section}]");
            continue;
        }
        if inside && !t.is_empty() && !t.starts_with('#') {
            let key: String = t
                .chars()
                .take_while(|c| !matches!(c, '=' | '.' | ' '))
                .collect();
            keys.push(key);
        }
    }
    keys
}

fn relative(p: &Path) -> String {
    p.strip_prefix(root()).unwrap_or(p).display().to_string()
}

#[test]
fn every_source_file_has_a_header() {
    let missing: Vec<String> = source_files()
        .into_iter()
        .filter(|f| {
            let text = fs::read_to_string(f).unwrap();
            !text
                .lines()
                .find(|l| !l.trim().is_empty())
                .is_some_and(|l| l.starts_with("//!"))
        })
        .map(|f| relative(&f))
        .collect();
    assert!(
        missing.is_empty(),
        "these files do not open with a `//!` header saying what they hold: {missing:#?}"
    );
}

#[test]
fn every_web_module_has_a_header() {
    let missing: Vec<String> = web_modules()
        .into_iter()
        .filter(|f| {
            !fs::read_to_string(f)
                .unwrap()
                .starts_with("// recall web app: ")
        })
        .map(|f| relative(&f))
        .collect();
    assert!(
        missing.is_empty(),
        "these web modules do not open with `// recall web app: ` and what they hold: {missing:#?}"
    );
}

/// The web modules `module` imports (`import … from './NAME.js'`), by file name.
fn web_imports(module: &Path) -> Vec<String> {
    let text = fs::read_to_string(module).unwrap();
    text.split("from './")
        .skip(1)
        .filter_map(|rest| rest.split('\'').next())
        .map(str::to_string)
        .collect()
}

#[test]
fn web_modules_import_without_a_loop() {
    let modules: Vec<(String, Vec<String>)> = web_modules()
        .iter()
        .map(|m| {
            (
                m.file_name().unwrap().to_string_lossy().to_string(),
                web_imports(m),
            )
        })
        .collect();
    let imports_of = |name: &str| -> &[String] {
        modules
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&[], |(_, i)| i.as_slice())
    };
    // Depth-first from each module: reaching it again is a loop.
    for (start, _) in &modules {
        let mut stack: Vec<Vec<String>> = vec![vec![start.clone()]];
        while let Some(path) = stack.pop() {
            for next in imports_of(path.last().unwrap()) {
                assert!(
                    next != start,
                    "web modules import in a loop: {} -> {next} (a call up a layer goes \
                     through hooks.js)",
                    path.join(" -> ")
                );
                if !path.contains(next) {
                    let mut longer = path.clone();
                    longer.push(next.clone());
                    stack.push(longer);
                }
            }
        }
    }
}

#[test]
fn dependencies_point_inward() {
    for c in crate_dirs() {
        let name = c.file_name().unwrap().to_string_lossy().to_string();
        let Some((_, allowed)) = ALLOWED_EDGES.iter().find(|(n, _)| *n == name) else {
            panic!("{name} is not in ALLOWED_EDGES: add it as docs/ARCHITECTURE.md draws it");
        };
        let toml = fs::read_to_string(c.join("Cargo.toml")).unwrap();
        for dep in section_keys(&toml, "dependencies") {
            if dep.starts_with("recall-") {
                assert!(
                    allowed.contains(&dep.as_str()),
                    "{name} depends on {dep}, which docs/ARCHITECTURE.md's graph does not \
                     allow (dependencies point inward)"
                );
            }
        }
    }
}

#[test]
fn no_source_file_is_too_long() {
    let long: Vec<String> = source_files()
        .into_iter()
        .chain(web_modules())
        .filter_map(|f| {
            let n = fs::read_to_string(&f).unwrap().lines().count();
            (n > MAX_LINES).then(|| format!("{} ({n} lines)", relative(&f)))
        })
        .collect();
    assert!(
        long.is_empty(),
        "source files over {MAX_LINES} lines (split them by job): {long:#?}"
    );
}

#[test]
fn recall_core_stays_pure() {
    let toml = fs::read_to_string(root().join("crates/recall-core/Cargo.toml")).unwrap();
    let deps = section_keys(&toml, "dependencies");
    let bad: Vec<&String> = deps
        .iter()
        .filter(|d| IMPURE.contains(&d.as_str()))
        .collect();
    assert!(
        bad.is_empty(),
        "recall-core must do no I/O, but depends on {bad:?}"
    );
    // Nor may its code reach for the clock, the environment or the file system.
    for f in {
        let mut v = Vec::new();
        rust_files(&root().join("crates/recall-core/src"), &mut v);
        v
    } {
        let text = fs::read_to_string(&f).unwrap();
        for needle in [
            "std::fs",
            "std::env",
            "std::net",
            "SystemTime",
            "Instant::now",
        ] {
            assert!(
                !text.contains(needle),
                "{} uses {needle}: recall-core is pure",
                relative(&f)
            );
        }
    }
}

/// ARCHITECTURE: the one store method without a tenant answers an operator, never a tenant's
/// request: only the CLI (and the store and engine that provide it) may name it.
#[test]
fn the_tenant_less_lookup_is_the_clis_only() {
    let mut files = Vec::new();
    for c in crate_dirs() {
        let name = c.file_name().unwrap().to_string_lossy().to_string();
        if ![
            "recall-cli",
            "recall-store",
            "recall-engine",
            "recall-testkit",
        ]
        .contains(&name.as_str())
        {
            rust_files(&c, &mut files);
        }
    }
    for f in files {
        let text = fs::read_to_string(&f).unwrap();
        assert!(
            !text.contains("conversation_tenants"),
            "{} asks which tenants hold a conversation: only the CLI may",
            relative(&f)
        );
    }
}

#[test]
fn anyhow_only_in_the_binary() {
    for c in crate_dirs() {
        let name = c.file_name().unwrap().to_string_lossy().to_string();
        let toml = fs::read_to_string(c.join("Cargo.toml")).unwrap();
        if name != "recall-cli" {
            assert!(
                !section_keys(&toml, "dependencies").contains(&"anyhow".to_string()),
                "{name} depends on anyhow: libraries return typed errors (thiserror)"
            );
        }
    }
}

#[test]
fn lints_are_the_workspace_lints() {
    let toml = fs::read_to_string(root().join("Cargo.toml")).unwrap();
    let clippy = section_keys(&toml, "workspace.lints.clippy");
    for lint in ["unwrap_used", "expect_used"] {
        assert!(
            clippy.contains(&lint.to_string()),
            "[workspace.lints.clippy] must deny {lint}"
        );
    }
    for c in crate_dirs() {
        let toml = fs::read_to_string(c.join("Cargo.toml")).unwrap();
        assert!(
            section_keys(&toml, "lints").contains(&"workspace".to_string()),
            "{} does not inherit the workspace lints ([lints] workspace = true)",
            relative(&c)
        );
    }
}

#[test]
fn the_architecture_doc_names_every_crate() {
    let doc = fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let names: Vec<String> = crate_dirs()
        .iter()
        .map(|c| c.file_name().unwrap().to_string_lossy().to_string())
        .collect();
    for n in &names {
        assert!(
            doc.contains(&format!("| `{n}` |")),
            "docs/ARCHITECTURE.md has no row for {n}"
        );
    }
    // And no row for a crate that is gone.
    for line in doc.lines().filter(|l| l.starts_with("| `recall-")) {
        let named: String = line
            .trim_start_matches("| `")
            .chars()
            .take_while(|c| *c != '`')
            .collect();
        assert!(
            names.contains(&named),
            "docs/ARCHITECTURE.md describes {named}, which is not in crates/"
        );
    }
}

/// A backticked token of docs/ARCHITECTURE.md that names a file or folder: one ending in a
/// file type the repository holds or in `/`, or starting at a top-level folder (a route such
/// as `/v1/` or a URL is not a path in the repository).
fn looks_like_a_path(token: &str) -> bool {
    !token.contains(char::is_whitespace)
        && !token.starts_with('/')
        && !token.contains("://")
        && ([".rs", ".sh", ".md", ".toml", ".js", "/"]
            .iter()
            .any(|end| token.ends_with(end))
            || ["crates/", "scripts/", "docs/"]
                .iter()
                .any(|start| token.starts_with(start)))
}

/// Whether a file named `name` is anywhere under `dir`.
fn file_named_under(dir: &Path, name: &str) -> bool {
    let Ok(entries) = fs::read_dir(dir) else {
        return false;
    };
    entries.map(|e| e.unwrap().path()).any(|p| {
        if p.is_dir() {
            file_named_under(&p, name)
        } else {
            p.file_name().is_some_and(|n| n == name)
        }
    })
}

/// ARCHITECTURE: the page names the files where each mechanism is described, so every file or
/// folder it names in backticks must exist: a bare file name (`conn.rs`) somewhere under a
/// crate's `src/`, a path (`src/sqlite/`, `summaries/compaction.rs`) from the repository root,
/// a crate's folder or its `src/`.
#[test]
fn the_architecture_doc_names_only_existing_paths() {
    let doc = fs::read_to_string(root().join("docs/ARCHITECTURE.md")).unwrap();
    let crates = crate_dirs();
    let mut bases = vec![root()];
    for c in &crates {
        bases.push(c.clone());
        bases.push(c.join("src"));
    }
    // Backticked spans: every other piece between backticks, code fences left out (a span
    // may run across a line break, as Markdown allows).
    let text: Vec<&str> = doc
        .lines()
        .filter(|l| !l.trim_start().starts_with("```"))
        .collect();
    let text = text.join("\n");
    let mut tokens: Vec<&str> = text
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|t| looks_like_a_path(t))
        .collect();
    tokens.sort_unstable();
    tokens.dedup();
    assert!(!tokens.is_empty(), "no paths found in docs/ARCHITECTURE.md");
    let missing: Vec<&str> = tokens
        .into_iter()
        .filter(|t| {
            let path = t.trim_end_matches('/');
            if path.contains('/') {
                !bases.iter().any(|b| b.join(path).exists())
            } else if t.ends_with('/') {
                !bases.iter().any(|b| b.join(path).is_dir())
            } else {
                !bases.iter().any(|b| b.join(path).is_file())
                    && !crates
                        .iter()
                        .any(|c| file_named_under(&c.join("src"), path))
            }
        })
        .collect();
    assert!(
        missing.is_empty(),
        "docs/ARCHITECTURE.md names files or folders that do not exist (rename or drop them): \
         {missing:#?}"
    );
}
