//! How a store is opened: settings that are not part of the database URL.

use std::fmt;
use std::str::FromStr;

/// When a committed write reaches the disk (SQLite's `synchronous` pragma, on every connection
/// the SQLite store opens). PostgreSQL ignores it: there the server's own `synchronous_commit`
/// decides.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// `synchronous=NORMAL` in WAL mode: a commit is not synced; the WAL is synced at each
    /// checkpoint. The database is never corrupted, but a power loss or OS crash (not a process
    /// crash) may lose the last acknowledged commits.
    #[default]
    Normal,
    /// `synchronous=FULL`: the WAL is synced at every commit, so an acknowledged write survives
    /// a power loss; each commit waits for the disk.
    Full,
}

impl Durability {
    /// Both settings, in the order of their names.
    pub const ALL: [Durability; 2] = [Durability::Normal, Durability::Full];

    /// The setting's name, as the config file and the flag spell it.
    pub fn name(self) -> &'static str {
        match self {
            Durability::Normal => "normal",
            Durability::Full => "full",
        }
    }

    /// The value of SQLite's `synchronous` pragma for this setting.
    pub fn sqlite_pragma(self) -> &'static str {
        match self {
            Durability::Normal => "NORMAL",
            Durability::Full => "FULL",
        }
    }

    /// What `PRAGMA synchronous` reads back under this setting (1 NORMAL, 2 FULL).
    pub fn sqlite_level(self) -> i64 {
        match self {
            Durability::Normal => 1,
            Durability::Full => 2,
        }
    }
}

impl fmt::Display for Durability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Durability {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Durability::ALL
            .into_iter()
            .find(|d| d.name() == s)
            .ok_or_else(|| format!("unknown durability '{s}' (expected normal or full)"))
    }
}

/// Settings of a SQLite store (see [`crate::SqliteStore::open_with`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SqliteOptions {
    pub durability: Durability,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back() {
        for d in Durability::ALL {
            assert_eq!(d.name().parse::<Durability>(), Ok(d));
        }
        assert!("FULL".parse::<Durability>().is_err());
        assert_eq!(Durability::default(), Durability::Normal);
    }
}
