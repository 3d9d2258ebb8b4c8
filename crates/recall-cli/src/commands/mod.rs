//! One module per subcommand.

pub mod chat;
pub mod mcp;
pub mod render;
pub mod store_cmds;
