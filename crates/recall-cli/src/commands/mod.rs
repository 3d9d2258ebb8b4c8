//! One module per subcommand.

pub mod render;
pub mod store_cmds;
