//! One module per subcommand.

pub mod branch;
pub mod chat;
pub mod compact;
pub mod embed;
pub mod index;
pub mod mcp;
pub mod render;
pub mod serve;
pub mod store_cmds;
